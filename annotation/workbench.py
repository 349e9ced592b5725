"""What the annotation pages (label, review, adjudication) show of the unit a person works on.

The unit with its question, answer and sources; the choices with their keys; at the review stage
the first label to confirm or override; at the adjudication stage the labels in conflict. Plain
data: the answer becomes HTML in the ``answer_text`` template filters, which escape it.

Nothing here reads the judge's labels, and nothing shows a person another person's label
except the first label to a reviewer (review mode) and the labels in conflict to an adjudicator.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy, pgettext_lazy

from annotation import plain_rows
from annotation.corpus.conventions import BUILTIN_CRITERIA, DEFAULT_CITATION_PATTERN
from annotation.criteria.categories import categories_of, is_categorical
from annotation.models import (
    AnswerSource,
    Assignment,
    Campaign,
    Criterion,
    Label,
    Level,
    SourceChunk,
    Stage,
    Unit,
)
from annotation.workflow import unit_state

# How each built-in criterion names its two values, in the reader's language (conventions.py
# stays Django-free, so the translations live here, where the names are shown); other criteria
# say yes / no.
_TRANSLATED_VALUE_NAMES: dict[str, Promise] = {
    "Supported": gettext_lazy("Supported"),
    "Not supported": gettext_lazy("Not supported"),
    "On topic": gettext_lazy("On topic"),
    "Off topic": gettext_lazy("Off topic"),
    "Supports": gettext_lazy("Supports"),
    "Does not support": gettext_lazy("Does not support"),
}
VALUE_NAMES: dict[str, dict[int, str | Promise]] = {
    name: {value: _TRANSLATED_VALUE_NAMES.get(text, text) for value, text in spec["values"].items()}
    for name, spec in BUILTIN_CRITERIA.items()
}
DEFAULT_VALUE_NAMES: dict[int, str | Promise] = {
    1: pgettext_lazy("label value", "Yes"),
    0: pgettext_lazy("label value", "No"),
}
# The titles the conventions give criteria and categories (``BUILTIN_CRITERIA``,
# ``ANSWER_CORRECTNESS``), stored in English, in the reader's language; other titles are shown as
# written. Exports and the API keep the stored titles.
_TRANSLATED_TITLES: dict[str, Promise] = {
    "Veracity": gettext_lazy("Veracity"),
    "Relevance": gettext_lazy("Relevance"),
    "Citation support": gettext_lazy("Citation support"),
    "Answer correctness": gettext_lazy("Answer correctness"),
    "Not enough information in the documents": gettext_lazy("Not enough information in the documents"),
    "Partly correct, with incorrect details": gettext_lazy("Partly correct, with incorrect details"),
    "Partly correct, incomplete for lack of information": gettext_lazy(
        "Partly correct, incomplete for lack of information"
    ),
    "Fully incorrect": gettext_lazy("Fully incorrect"),
    "Fully correct": gettext_lazy("Fully correct"),
}
_SENTINELS = str.maketrans("", "", "\x02\x03")


def shown_title(title: object) -> str:
    """A criterion's or a category's title as the reader reads it: translated when it is one the
    conventions give (in English), else as written."""
    text = str(title or "")
    return str(_TRANSLATED_TITLES.get(text, text))


@dataclass
class UnitView:
    """Everything the page shows about one unit; its texts untrusted and not yet rendered."""

    unit: Unit
    question: str
    answer_text: str
    retrieved: frozenset[str]
    citation_pattern: str = DEFAULT_CITATION_PATTERN
    # A sentence unit: its paragraph (or its own text), the sentence, whether the paragraph holds it.
    paragraph_text: str | None = None
    sentence_text: str = ""
    sentence_found: bool = True
    whole_is_paragraph: bool = False
    cited: list[AnswerSource] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    others: list[AnswerSource] = field(default_factory=list)
    # A citation unit: ``cited`` holds its one chunk, and nothing else of the sources is shown.
    is_citation: bool = False


@functools.cache
def _sources_sql() -> str:
    source, chunk = AnswerSource._meta.db_table, SourceChunk._meta.db_table
    return (
        f"SELECT {plain_rows.columns(AnswerSource, 's')}, {plain_rows.columns(SourceChunk, 'c')}"
        f" FROM {source} s JOIN {chunk} c ON c.id = s.chunk_id WHERE s.answer_id = %s ORDER BY s.rank, s.id"
    )


def answer_sources(*, answer_id: int) -> list[AnswerSource]:
    """The answer's sources by rank, each with its chunk: in plain SQL (``plain_rows``), as every
    unit on screen reads them."""
    with connection.cursor() as cursor:
        cursor.execute(_sources_sql(), [answer_id])
        rows = cursor.fetchall()
    sources = []
    for row in rows:
        source, chunk = plain_rows.instances(row, AnswerSource, SourceChunk)
        assert isinstance(source, AnswerSource)
        source.chunk = chunk  # type: ignore[assignment]
        sources.append(source)
    return sources


def unit_view(*, unit: Unit, campaign: Campaign) -> UnitView:
    """The unit's question, answer, sentence and its paragraph, cited, broken and other sources.

    One query (the answer's sources); the unit must come with its answer, question and sentence.
    """
    answer = unit.answer
    sources = answer_sources(answer_id=answer.pk)
    common: dict[str, Any] = {
        "unit": unit,
        "question": answer.question.text,
        "answer_text": answer.text,
        "retrieved": frozenset(source.chunk.external_id for source in sources),
        "citation_pattern": campaign.citation_pattern or DEFAULT_CITATION_PATTERN,
    }
    sentence = unit.sentence if unit.level in (Level.SENTENCE, Level.CITATION) else None
    if sentence is None:
        return UnitView(**common, others=sources)
    cited_ids = list(dict.fromkeys(str(c) for c in sentence.cited_ids or []))
    by_id = {source.chunk.external_id: source for source in sources}
    text = sentence.text.translate(_SENTINELS)
    paragraph = (sentence.paragraph or sentence.text).translate(_SENTINELS)
    shown: dict[str, Any] = {
        "paragraph_text": sentence.paragraph or sentence.text,
        "sentence_text": sentence.text,
        "sentence_found": bool(text) and text in paragraph,
        "whole_is_paragraph": (sentence.paragraph or "").translate(_SENTINELS).strip()
        == answer.text.translate(_SENTINELS).strip(),
    }
    if unit.level == Level.CITATION:
        # The sentence and that one chunk: whether the others support the sentence is not asked.
        return UnitView(
            **common,
            **shown,
            cited=[source for source in sources if source.chunk_id == unit.chunk_id],
            is_citation=True,
        )
    return UnitView(
        **common,
        **shown,
        cited=[by_id[c] for c in cited_ids if c in by_id],
        broken=[c for c in cited_ids if c not in by_id],
        others=[source for source in sources if source.chunk.external_id not in cited_ids],
    )


def value_names(criterion: Criterion) -> dict[int, str | Promise]:
    """What each value means for ``criterion``, in words: 1 and 0, or its categories' titles."""
    if is_categorical(criterion):
        return {category.value: shown_title(category.title) for category in categories_of(criterion)}
    return VALUE_NAMES.get(criterion.name, DEFAULT_VALUE_NAMES)


@dataclass
class Choice:
    """One label a key gives. ``verb``: "confirm" or "override" at the review stage, else "".
    ``previous``: the answer the person gave this unit before and withdrew (marked, not chosen)."""

    value: int
    key: str
    meaning: str | Promise
    needs_comment: bool = False
    verb: str = ""
    previous: bool = False


def choices(
    *, criterion: Criterion, first_value: int | None = None, reason_required: bool = False
) -> list[Choice]:
    """The choices of ``criterion`` with its keys: 1 then 0, or its categories by value.

    ``first_value``: the first label a reviewer confirms (same value) or overrides (the other,
    which needs a comment). ``reason_required``: every choice needs a comment (adjudication).
    """
    names = value_names(criterion)
    if is_categorical(criterion):
        made = [
            Choice(
                value=category.value,
                key=category.key,
                meaning=shown_title(category.title),
                needs_comment=reason_required,
            )
            for category in categories_of(criterion)
        ]
    else:
        made = [
            Choice(
                value=1, key=criterion.positive_key or "1", meaning=names[1], needs_comment=reason_required
            ),
            Choice(
                value=0, key=criterion.negative_key or "0", meaning=names[0], needs_comment=reason_required
            ),
        ]
    if first_value is not None:
        for choice in made:
            choice.needs_comment = choice.value != first_value
            choice.verb = "override" if choice.needs_comment else "confirm"
    return made


def first_label(*, unit: Unit, criterion: Criterion) -> Assignment | None:
    """The filled first-stage slot a reviewer is to confirm or override (review mode only). One query."""
    return (
        Assignment.objects.filter(unit=unit, criterion=criterion, stage=Stage.LABEL, label__isnull=False)
        .select_related("label")
        .order_by("slot")
        .first()
    )


def labels_in_conflict(*, unit: Unit, criterion: Criterion) -> list[Label]:
    """The labels an adjudicator settles on ``unit``, with their authors, in the protocol's order."""
    state = unit_state(unit_id=unit.pk, criterion=criterion)
    ids = [label.label_id for label in state.in_conflict]
    rows = {label.pk: label for label in Label.objects.filter(pk__in=ids).select_related("user")}
    return [rows[pk] for pk in ids if pk in rows]


def came_back(*, unit: Unit | None, made: list[Choice]) -> dict:
    """What the page says of a unit handed back to the person who worked on it: the choice they
    gave before and withdrew (``previous_choice``, marked on its button; nothing is selected, so
    that no key confirms it unseen) and whether they skipped it (``skipped_before``). Read from
    what ``next_unit`` loaded with the unit: no query."""
    before = getattr(unit, "previous_value", None)
    previous = (
        next((choice for choice in made if choice.value == before), None) if before is not None else None
    )
    if previous is not None:
        previous.previous = True
    return {"previous_choice": previous, "skipped_before": bool(getattr(unit, "came_back_skipped", False))}


def script_texts() -> dict[str, Promise]:
    """What annotate.js says (alerts, the cue of a key not taken, the comment box's lines), in the
    reader's language: the page hands these to the script (``json_script``), which fills their
    ``%(name)s`` placeholders and holds no text of its own."""
    return {
        "label_not_confirmed": gettext_lazy(
            "The server answered %(status)s. Your last label was not confirmed: press the key again, "
            "it will not be counted twice."
        ),
        "label_not_sent": gettext_lazy(
            "No connection. Your last label was not confirmed: press the key again, it will not be "
            "counted twice."
        ),
        "server_error": gettext_lazy(
            "The server answered %(status)s. Your saved labels are safe; reload the page."
        ),
        "send_error": gettext_lazy(
            "No connection: your last action was not confirmed. Press the key again when the connection "
            "is back; it will not be counted twice."
        ),
        "key_too_soon": gettext_lazy(
            "Key “%(key)s” not taken: the unit had just appeared. Press it again if you meant this one."
        ),
        "key_busy": gettext_lazy(
            "Key “%(key)s” not taken: your last action is still on its way to the server."
        ),
        "key_moved_on": gettext_lazy("Key “%(key)s” not taken: another unit came meanwhile."),
        "key_unbound": gettext_lazy("Key “%(key)s” does nothing here; ? shows the keys."),
        "key_not_typed": gettext_lazy("“%(key)s” not typed: the box had just opened."),
        "comment_for_choice": gettext_lazy("Given with this label:"),
        "comment_for_next": gettext_lazy("Given with the label you choose next."),
        "comment_attached": gettext_lazy("Goes with your label: “%(text)s” (c to change it)"),
        "comment_lost": gettext_lazy("Another unit came before the text was saved: nothing was stored."),
        "save": gettext_lazy("Save"),
        "save_and_label": gettext_lazy("Save and label"),
    }


def shown_at_label(*, unit: Unit | None, criterion: Criterion) -> dict:
    """A first label shows nobody else's label: the two choices alone."""
    made = choices(criterion=criterion)
    return {"choices": made, **came_back(unit=unit, made=made)}


def shown_at_review(*, unit: Unit | None, criterion: Criterion) -> dict:
    """The reviewer sees the first label and confirms it (same key) or overrides it (with a comment)."""
    first = first_label(unit=unit, criterion=criterion) if unit is not None else None
    # A filled slot's label has a value (withdrawals empty their slot).
    value = first.label.value if first is not None and first.label is not None else None
    if first is None or value is None:
        made = choices(criterion=criterion)
        return {"first": None, "choices": made, **came_back(unit=unit, made=made)}
    made = choices(criterion=criterion, first_value=value)
    return {
        "first": first,
        "first_name": value_names(criterion).get(value, ""),
        "choices": made,
        **came_back(unit=unit, made=made),
    }


def shown_at_adjudication(*, unit: Unit | None, criterion: Criterion) -> dict:
    """The adjudicator sees the labels in conflict, who gave them and why; every decision needs a reason."""
    conflict = labels_in_conflict(unit=unit, criterion=criterion) if unit is not None else []
    made = choices(criterion=criterion, reason_required=True)
    return {"conflict": conflict, "choices": made, **came_back(unit=unit, made=made)}
