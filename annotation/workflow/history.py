"""The label history: who labelled what and when, every row kept (labels are append-only).

Each row says what it did: a first ``label``, a ``change`` of the same person's label at the same
stage (the value it replaces is given), or a ``withdrawal`` (undo). Filters: person, criterion,
stage. The CSV export streams the same rows, oldest first, with cells that cannot be read as
spreadsheet formulas.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from annotation.models import Campaign, Label
from annotation.spreadsheets import neutralise

CSV_HEADER = [
    "label_id",
    "time_utc",
    "user",
    "criterion",
    "stage",
    "action",
    "value",
    "replaces",
    "comment",
    "unit_id",
    "level",
    "answer_id",
    "sentence",
    "theme",
    "source",
]


def label_history(
    *,
    campaign: Campaign,
    user_id: int | None = None,
    criterion_id: int | None = None,
    stage: str | None = None,
    newest_first: bool = True,
) -> QuerySet[Label]:
    """The campaign's label rows, filtered, each annotated with ``has_previous`` and ``previous``.

    ``previous`` is the value of the same person's row just before at the same unit, criterion
    and stage (None also for a previous withdrawal; ``has_previous`` tells them apart). Rows come
    with user, criterion, unit, answer, sentence and cited chunk loaded.
    """
    earlier = Label.objects.filter(
        unit_id=OuterRef("unit_id"),
        criterion_id=OuterRef("criterion_id"),
        stage=OuterRef("stage"),
        user_id=OuterRef("user_id"),
        pk__lt=OuterRef("pk"),
    ).order_by("-pk")
    rows = (
        Label.objects.filter(criterion__campaign=campaign)
        .select_related("user", "criterion", "unit__answer", "unit__sentence", "unit__chunk")
        .annotate(has_previous=Exists(earlier), previous=Subquery(earlier.values("value")[:1]))
    )
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    if criterion_id is not None:
        rows = rows.filter(criterion_id=criterion_id)
    if stage:
        rows = rows.filter(stage=stage)
    return rows.order_by("-created_at", "-pk") if newest_first else rows.order_by("created_at", "pk")


def action_of(label: Label) -> str:
    """``withdrawal``, ``change`` or ``label`` for a row of :func:`label_history`."""
    return _action(value=label.value, has_previous=getattr(label, "has_previous", False))


def _action(*, value: int | None, has_previous: bool) -> str:
    if value is None:
        return "withdrawal"
    return "change" if has_previous else "label"


def labellers(*, campaign: Campaign) -> QuerySet:
    """The people who have at least one label row in the campaign, by username."""
    return (
        get_user_model().objects.filter(labels__criterion__campaign=campaign).distinct().order_by("username")
    )


def _safe(value: object) -> str:
    return neutralise("" if value is None else str(value))


def history_rows(
    *,
    campaign: Campaign,
    user_id: int | None = None,
    criterion_id: int | None = None,
    stage: str | None = None,
) -> Iterator[list[object]]:
    """One list of values per label row, oldest first, in ``CSV_HEADER``'s order: the one read
    of the history that its CSV, the report workbook's sheet and the API share. Ids and values
    are numbers (None when empty: a withdrawal has no value), the time an aware datetime in UTC,
    texts as stored (whoever writes a spreadsheet neutralises them). Streams in chunks: memory
    stays flat on long histories."""
    rows = label_history(
        campaign=campaign, user_id=user_id, criterion_id=criterion_id, stage=stage, newest_first=False
    ).values_list(
        "pk",
        "created_at",
        f"user__{get_user_model().USERNAME_FIELD}",
        "criterion__name",
        "stage",
        "value",
        "has_previous",
        "previous",
        "comment",
        "unit_id",
        "unit__level",
        "unit__answer__external_id",
        "unit__sentence__position",
        "unit__theme",
        "unit__chunk__external_id",
    )
    # Plain rows, not model instances: a long history is read three times faster.
    for row in rows.iterator(chunk_size=2000):
        pk, created_at, username, criterion, row_stage, value, has_previous, previous, *unit = row
        comment, unit_id, level, answer, position, theme, source = unit
        action = _action(value=value, has_previous=has_previous)
        yield [
            *(pk, created_at.astimezone(UTC), username or "", criterion, row_stage, action, value, previous),
            *(comment, unit_id, level, answer, position, theme, source or ""),
        ]


def history_csv_rows(
    *,
    campaign: Campaign,
    user_id: int | None = None,
    criterion_id: int | None = None,
    stage: str | None = None,
) -> Iterator[list[str]]:
    """The header then one list of cells per label row (:func:`history_rows`), for
    ``csv.writer``: times in ISO 8601 UTC, an empty value for a withdrawal, every text cell
    neutralised so that no spreadsheet reads it as a formula."""
    yield list(CSV_HEADER)
    for row in history_rows(campaign=campaign, user_id=user_id, criterion_id=criterion_id, stage=stage):
        yield [
            value.isoformat(timespec="seconds")
            if isinstance(value, datetime)
            else ""
            if value is None
            else _safe(value)
            if isinstance(value, str)
            else str(value)
            for value in row
        ]
