"""Which judge a report reads: one rule for the pages, the commands, the API, the gate, the
comparisons, the samples drawn by the judge and the snapshots.

The **candidates** of a criterion are the campaign's judges with at least one successful
judgment of it that can label it (the offline lexical judge says 0 or 1 only, so it is no
candidate for a criterion with categories). A judge whose every call failed (a run started
without an API key) labels nothing and is no candidate: it never hides the others' numbers.

A judge named is used when it is a candidate (a refusal naming the candidates otherwise). With
none named, the **default**: the criterion's primary judge, when a manager chose one and it is
still a candidate; else the only candidate; else the only candidate run in the app beside
imported labels (an LLM or the lexical judge over the imported judge). Otherwise there is no
default: the reader chooses (a page shows its form with the choice to make), never a guess.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from django.db import transaction
from django.db.models import (
    BooleanField,
    Case,
    DateTimeField,
    Exists,
    Field,
    OuterRef,
    Subquery,
    When,
)
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.criteria.categories import is_categorical
from annotation.errors import refusal
from annotation.models import Criterion
from evaluation.errors import EstimateError
from evaluation.models import Judge, Judgment, PrimaryJudge

# How a report's judge was chosen (its JSON's ``judge_choice``).
NAMED = "named"
PRIMARY = "primary"
ONLY = "only"
ONLY_RUN = "only_run"


def candidates(*, criterion: Criterion) -> list[Judge]:
    """The judges a report of ``criterion`` may read, by name: the campaign's judges with at least
    one successful judgment of ``criterion`` that can label it, each with ``is_primary`` (whether
    it is the criterion's primary judge). One query (a probe per judge of the judgments'
    (judge, criterion, status, updated_at) index)."""
    return candidates_by_criterion(criteria=[criterion])[criterion.pk]


def candidates_by_criterion(
    *, criteria: Sequence[Criterion], confidences: bool = False
) -> dict[int, list[Judge]]:
    """:func:`candidates` of each of ``criteria`` (of one campaign or several), by criterion id,
    in one query however many criteria (EXISTS per judge and criterion). ``confidences``: each
    judge also says whether it gave confidences on that criterion (``has_confidences``)."""
    if not criteria:
        return {}
    campaigns = {criterion.campaign_id for criterion in criteria}

    def own(criterion: Criterion, found: Subquery, field: Field) -> Subquery | Case:
        # Across campaigns, a judge is looked up only for its own campaign's criteria.
        if len(campaigns) == 1:
            return found
        return Case(When(campaign_id=criterion.campaign_id, then=found), default=None, output_field=field)

    columns = {}
    for criterion in criteria:
        judged = Judgment.objects.filter(judge=OuterRef("pk"), criterion=criterion)
        # The latest successful judgment's update, not EXISTS: PostgreSQL plans an EXISTS as a
        # scan of the table that stops at the first match, which for a judge whose judgments
        # were written after another's million is a scan of that million (0.4 s); ordered by
        # the index's last column it is one probe of the index (0.1 ms).
        latest = judged.filter(status=Judgment.Status.OK).order_by("-updated_at").values("updated_at")[:1]
        columns[f"ok_{criterion.pk}"] = own(criterion, Subquery(latest), DateTimeField())
        columns[f"primary_{criterion.pk}"] = own(
            criterion,
            Exists(PrimaryJudge.objects.filter(judge=OuterRef("pk"), criterion=criterion)),
            BooleanField(),
        )
        if confidences:
            columns[f"scored_{criterion.pk}"] = own(
                criterion, Exists(judged.filter(confidence__isnull=False)), BooleanField()
            )
    judges = list(Judge.objects.filter(campaign_id__in=campaigns).annotate(**columns).order_by("name"))
    found: dict[int, list[Judge]] = {}
    for criterion in criteria:
        lexical_ok = not is_categorical(criterion)
        kept = []
        for judge in judges:
            if judge.campaign_id != criterion.campaign_id:
                continue
            if getattr(judge, f"ok_{criterion.pk}") is None or (
                judge.kind == Judge.Kind.LEXICAL and not lexical_ok
            ):
                continue
            one = copy.copy(judge)
            one.is_primary = bool(getattr(judge, f"primary_{criterion.pk}"))
            if confidences:
                one.has_confidences = bool(getattr(judge, f"scored_{criterion.pk}"))
            kept.append(one)
        found[criterion.pk] = kept
    return found


def primary_among(judges: Sequence[Judge]) -> Judge | None:
    """The criterion's primary judge among its candidates ``judges`` (:func:`candidates`), or
    None: none chosen, or one that no longer labels it."""
    return next((judge for judge in judges if judge.is_primary), None)


def default_choice(*, judges: Sequence[Judge]) -> tuple[Judge | None, str]:
    """The default among the candidates ``judges`` (:func:`candidates`; see the module's
    docstring) and how it was chosen (``PRIMARY``, ``ONLY``, ``ONLY_RUN``), or (None, "") when
    the reader must choose."""
    primary = primary_among(judges)
    if primary is not None:
        return primary, PRIMARY
    if len(judges) == 1:
        return judges[0], ONLY
    running = [judge for judge in judges if judge.kind != Judge.Kind.IMPORTED]
    if len(running) == 1:
        return running[0], ONLY_RUN
    return None, ""


def pick(
    *, criterion: Criterion, name: str = "", judges: Sequence[Judge] | None = None
) -> tuple[Judge | None, str]:
    """The candidate named ``name`` (``NAMED``), or the default and how it was chosen when no
    name is given ((None, "") when the reader must choose). EstimateError on field ``judge``,
    naming the candidates, when ``name`` is not one of them. ``judges``: the candidates when the
    caller has read them already."""
    judges = candidates(criterion=criterion) if judges is None else judges
    if name:
        for judge in judges:
            if judge.name == name:
                return judge, NAMED
        raise EstimateError(
            refusal(
                _("%(name)s has no successful judgment of %(criterion)s (judges that have: %(judges)s)"),
                name=repr(name),
                criterion=repr(criterion.name),
                judges=_judge_names(judges),
            ),
            field="judge",
            missing=True,
        )
    return default_choice(judges=judges)


def choose_judge(
    *, criterion: Criterion, name: str = "", judges: Sequence[Judge] | None = None
) -> Judge | None:
    """:func:`pick`'s judge: the candidate named, or the default (None: the reader chooses)."""
    return pick(criterion=criterion, name=name, judges=judges)[0]


def require_judge(*, criterion: Criterion, name: str = "", judges: Sequence[Judge] | None = None) -> Judge:
    """:func:`choose_judge`'s judge, or EstimateError on field ``judge`` saying why there is none:
    no candidate yet, or several and no primary judge (naming them)."""
    judges = candidates(criterion=criterion) if judges is None else judges
    chosen = choose_judge(criterion=criterion, name=name, judges=judges)
    if chosen is not None:
        return chosen
    raise EstimateError(no_choice(criterion=criterion, judges=judges), field="judge")


def no_choice(*, criterion: Criterion, judges: Sequence[Judge]) -> str | Promise:
    """Why a report of ``criterion`` has no judge without a name: none has labeled it yet, or
    several have and none is its primary judge."""
    if not judges:
        return refusal(
            _("no judge has labeled %(criterion)s successfully yet"), criterion=repr(criterion.name)
        )
    return refusal(
        _(
            "several judges have labeled %(criterion)s: choose one (%(judges)s), or make one its "
            "primary judge"
        ),
        criterion=repr(criterion.name),
        judges=_judge_names(judges),
    )


def _judge_names(judges: Sequence[Judge]) -> str | Promise:
    return ", ".join(judge.name for judge in judges) or _("none")


def pick_several(
    *, criterion: Criterion, names: Sequence[str], judges: Sequence[Judge] | None = None
) -> tuple[Judge, ...]:
    """The candidates named ``names`` for an estimate that combines several judges, in the order
    of the candidates (the default report is untouched: this is an option beside it).
    EstimateError on field ``combine`` naming the candidates when a name is not one of them, or
    when fewer than two distinct judges are named."""
    judges = candidates(criterion=criterion) if judges is None else judges
    wanted = list(dict.fromkeys(name for name in names if name))
    known = {judge.name for judge in judges}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise EstimateError(
            refusal(
                _("%(name)s has no successful judgment of %(criterion)s (judges that have: %(judges)s)"),
                name=repr(unknown[0]),
                criterion=repr(criterion.name),
                judges=_judge_names(judges),
            ),
            field="combine",
            missing=True,
        )
    if len(wanted) < 2:
        raise EstimateError(
            refusal(
                _("choose at least two judges to combine (judges of %(criterion)s: %(judges)s)"),
                criterion=repr(criterion.name),
                judges=_judge_names(judges),
            ),
            field="combine",
        )
    return tuple(judge for judge in judges if judge.name in wanted)


@transaction.atomic
def set_primary_judge(*, criterion: Criterion, name: str, user=None) -> Judge | None:
    """Make the candidate named ``name`` the primary judge of ``criterion`` (an empty name: none
    any more). EstimateError on field ``judge`` when ``name`` is not a candidate."""
    if not name:
        PrimaryJudge.objects.filter(criterion=criterion).delete()
        return None
    judge = choose_judge(criterion=criterion, name=name)  # a candidate, or a refusal naming them
    assert judge is not None
    PrimaryJudge.objects.update_or_create(criterion=criterion, defaults={"judge": judge, "chosen_by": user})
    return judge
