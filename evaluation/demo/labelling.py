"""The demo's human work on the criteria its file cannot label: veracity (sentences) and citation
support (one cited chunk of one sentence), labelled through the real workflow by the demo people.

The import format gives relevance its human labels (imported, final), and ``categories`` gives
the criterion with categories its own; a sentence-level label would need the answers given
already split, and a citation-level one has no place in a file (``docs/import-format.md``). So
the demo's annotators label these two criteria's samples as people do, with ``submit_label``
under the protocol's rules (review mode): in each theme all but the last two units of the sample
get a first label (``annotator1`` and ``annotator2`` in turn) and all but the last three of
those a review (``annotator3``); the first labeller slips on every ``SLIP_EVERY``-th unit to
review, the reviewer overrides the slip with a comment, and the adjudicator settles every override but the
last one. So every theme of every report has final human labels (PPI++ beside the human and the
judge figures), and some work is left for each role: units to label, to review, one to
adjudicate.

What the people say is the truth of the demo material (``demo/data/defects.json``, the README's
tables): a sentence is not deducible from its sources when it states one of the planted
unsupported figures, when it is one the README names in an answer to an inappropriate question
(``NOT_DEDUCIBLE``), or when it is one of the paragraphs version 2 adds without a citation
(``versions.OFF_TOPIC_PARAGRAPHS``); a cited chunk does not support its sentence when that
sentence states a planted figure the chunk gives otherwise. Everything else holds. Deterministic:
the samples are seeded and the order is the sample's.
"""

from __future__ import annotations

from collections import defaultdict

from django.contrib.auth import get_user_model

from annotation.models import Campaign, Criterion, Label, Stage, Unit
from annotation.sampling.current import current_sample
from annotation.workflow import submit_label
from demo.material import DEFECTS, UNSUPPORTED_FIGURE
from evaluation.demo.versions import OFF_TOPIC_PARAGRAPHS

VERACITY, CITATION_SUPPORT = "veracity", "citation_support"
WORKED = (VERACITY, CITATION_SUPPORT)
# The sentences of the answers to inappropriate questions that no source supports, by the
# words that mark them (the 8x multiple and what follows from it; the inference about a person).
NOT_DEDUCIBLE: dict[str, tuple[str, ...]] = {
    "Q-FIN-05-r4": ("multiple de 8x", "par action"),
    "Q-RH-05-r3": ("On peut en déduire",),
}
FIRST_LABELLERS = ("annotator1", "annotator2")
REVIEWER = "annotator3"
ADJUDICATOR = "adjudicator"
# Per theme: the last units of the sample left unlabelled, and the labelled ones left unreviewed.
LEFT_TO_LABEL = 2
LEFT_TO_REVIEW = 1
SLIP_EVERY = 6
OVERRIDE = "La phrase ne dit pas ce que dit la source citée : relu dans le document."
SETTLE = "Relu avec la source : la revue a raison."


def _figure_sentence(answer_id: str, text: str) -> bool:
    defect = DEFECTS.get(answer_id)
    return defect is not None and defect.kind == UNSUPPORTED_FIGURE and defect.new in text


def truth(*, criterion: str, answer_id: str, sentence: str) -> int:
    """The demo's true label of a unit of ``criterion`` (veracity or citation support) whose
    sentence is ``sentence``, in the answer ``answer_id`` (see the module's docstring)."""
    if _figure_sentence(answer_id, sentence):
        return 0
    if criterion == CITATION_SUPPORT:
        return 1
    if any(marker in sentence for marker in NOT_DEDUCIBLE.get(answer_id, ())):
        return 0
    text = sentence.strip()
    return 0 if text and any(text in paragraph for paragraph in OFF_TOPIC_PARAGRAPHS) else 1


def _plan(units: list[tuple[str, Unit]]) -> tuple[list[Unit], list[Unit]]:
    """The units to label and, among them, those to review: per theme (in the sample's order),
    all but the last ``LEFT_TO_LABEL``, and all but the last ``LEFT_TO_REVIEW`` of those."""
    by_theme: dict[str, list[Unit]] = defaultdict(list)
    for theme, unit in units:
        by_theme[theme].append(unit)
    labelled: list[Unit] = []
    reviewed: list[Unit] = []
    for theme in sorted(by_theme):
        mine = by_theme[theme][: max(0, len(by_theme[theme]) - LEFT_TO_LABEL)]
        labelled.extend(mine)
        reviewed.extend(mine[: max(0, len(mine) - LEFT_TO_REVIEW)])
    return labelled, reviewed


def _work(criterion: Criterion) -> int:
    """Label, review and adjudicate the criterion's current sample as the module says; the number
    of units with a final label afterwards."""
    sample = current_sample(criterion=criterion)
    if sample is None:
        return 0
    people = {
        user.username: user
        for user in get_user_model().objects.filter(username__in=[*FIRST_LABELLERS, REVIEWER, ADJUDICATOR])
    }
    units = [
        (item.theme, item.unit)
        for item in sample.items.select_related("unit__answer", "unit__sentence").order_by(
            "theme", "cluster", "rank", "unit_id"
        )
    ]
    labelled, reviewed = _plan(units)
    truths = {
        unit.pk: truth(
            criterion=criterion.name,
            answer_id=unit.answer.external_id,
            sentence=unit.sentence.text if unit.sentence else "",
        )
        for _theme, unit in units
    }
    slips = {unit.pk for n, unit in enumerate(reviewed, start=1) if n % SLIP_EVERY == 0}
    first: dict[int, int] = {}
    for n, unit in enumerate(labelled, start=1):
        value = 1 - truths[unit.pk] if unit.pk in slips else truths[unit.pk]
        first[unit.pk] = value
        submit_label(
            user=people[FIRST_LABELLERS[n % len(FIRST_LABELLERS)]],
            unit_id=unit.pk,
            criterion=criterion,
            stage=Stage.LABEL,
            value=value,
        )
    overridden = []
    for unit in reviewed:
        value = truths[unit.pk]
        slipped = first[unit.pk] != value
        submit_label(
            user=people[REVIEWER],
            unit_id=unit.pk,
            criterion=criterion,
            stage=Stage.REVIEW,
            value=value,
            comment=OVERRIDE if slipped else "",
        )
        if slipped:
            overridden.append(unit)
    for unit in overridden[:-1]:
        submit_label(
            user=people[ADJUDICATOR],
            unit_id=unit.pk,
            criterion=criterion,
            stage=Stage.ADJUDICATION,
            value=truths[unit.pk],
            comment=SETTLE,
        )
    return len(reviewed) - len(overridden) + len(overridden[:-1])


def human_work_step(campaign: Campaign) -> str | None:
    """The demo people's work on veracity and citation support (see the module's docstring), on
    each of them that has a current sample and no human label yet; None when there is none."""
    done = []
    for criterion in (
        Criterion.objects.filter(campaign=campaign, name__in=WORKED)
        .select_related("campaign")
        .order_by("name")
    ):
        if Label.objects.filter(criterion=criterion).exists():
            continue
        final = _work(criterion)
        if final:
            done.append(f"{final} {criterion.name}")
    return (
        f"labelled by the demo people through the workflow: {', '.join(done)} units final" if done else None
    )
