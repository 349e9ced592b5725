"""A campaign's units with their labels in force and their judgments, read in chunks for the
exports (Label Studio, Argilla, Parquet)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.models import Campaign, Criterion, Label, Unit
from evaluation.models import Judge, Judgment

UNIT_CHUNK = 2000


@dataclass(frozen=True)
class LabelInForce:
    """A person's label in force at a stage: their latest row there, unless it withdrew the label."""

    label_id: int
    criterion: str
    user_id: int | None
    username: str
    email: str
    stage: str
    value: int
    comment: str
    created_at: dt.datetime
    edited_at: dt.datetime | None
    seconds_spent: float | None


@dataclass(frozen=True)
class JudgeLabel:
    """An ok judgment, with what the tool it was imported from said about it (``kept``)."""

    criterion: str
    judge: str
    value: int
    kept: dict[str, Any]


@dataclass
class UnitContent:
    unit_id: int
    level: str
    answer_id: str
    sentence: int | None
    question_id: str
    question: str
    theme: str
    difficulty: str
    text: str
    # A citation unit's cited chunk id; None for answers and sentences.
    source: str | None = None
    labels: list[LabelInForce] = field(default_factory=list)
    judgments: list[JudgeLabel] = field(default_factory=list)


def kept_of(raw_response: str) -> dict[str, Any]:
    """What an imported judgment kept of its prediction (a JSON object in ``raw_response``)."""
    try:
        kept = json.loads(raw_response) if raw_response else {}
    except json.JSONDecodeError:
        return {}
    return kept if isinstance(kept, dict) else {}


def campaign_units(
    *, campaign: Campaign, criteria: Sequence[Criterion], judges: Sequence[Judge] | None = None
) -> Iterator[UnitContent]:
    """Every unit of ``campaign`` at the levels of ``criteria``, in id order, with its labels in
    force and the ok judgments of ``judges`` (all the campaign's judges when None) for those
    criteria. A constant number of queries per chunk of units."""
    levels = sorted({criterion.level for criterion in criteria})
    names = {criterion.pk: criterion.name for criterion in criteria}
    if judges is None:
        judges = list(Judge.objects.filter(campaign=campaign).order_by("name"))
    judge_names = {judge.pk: judge.name for judge in judges}
    last = 0
    while True:
        chunk = list(
            Unit.objects.filter(campaign=campaign, level__in=levels, pk__gt=last)
            .order_by("pk")
            .values(
                "id",
                "level",
                "theme",
                "difficulty",
                "answer__external_id",
                "answer__text",
                "answer__question__external_id",
                "answer__question__text",
                "sentence__position",
                "sentence__text",
                "chunk__external_id",
            )[:UNIT_CHUNK]
        )
        if not chunk:
            return
        last = chunk[-1]["id"]
        units = {
            row["id"]: UnitContent(
                unit_id=row["id"],
                level=row["level"],
                answer_id=row["answer__external_id"],
                sentence=row["sentence__position"],
                question_id=row["answer__question__external_id"],
                question=row["answer__question__text"],
                theme=row["theme"],
                difficulty=row["difficulty"],
                text=row["sentence__text"] if row["sentence__position"] is not None else row["answer__text"],
                source=row["chunk__external_id"],
            )
            for row in chunk
        }
        latest: dict[tuple[int, int, str, int | None], Any] = {}
        rows = (
            Label.objects.filter(unit_id__in=list(units), criterion_id__in=list(names))
            .order_by("id")
            .values(
                "id",
                "unit_id",
                "criterion_id",
                "user_id",
                "user__username",
                "user__email",
                "stage",
                "value",
                "comment",
                "created_at",
                "edited_at",
                "seconds_spent",
            )
        )
        for row in rows:
            latest[(row["unit_id"], row["criterion_id"], row["stage"], row["user_id"])] = row
        for row in sorted(latest.values(), key=lambda r: (r["created_at"], r["id"])):
            if row["value"] is None:
                continue
            units[row["unit_id"]].labels.append(
                LabelInForce(
                    label_id=row["id"],
                    criterion=names[row["criterion_id"]],
                    user_id=row["user_id"],
                    username=row["user__username"] or "",
                    email=row["user__email"] or "",
                    stage=row["stage"],
                    value=row["value"],
                    comment=row["comment"],
                    created_at=row["created_at"],
                    edited_at=row["edited_at"],
                    seconds_spent=row["seconds_spent"],
                )
            )
        judged = Judgment.objects.filter(
            unit_id__in=list(units),
            criterion_id__in=list(names),
            judge_id__in=list(judge_names),
            status=Judgment.Status.OK,
            value__isnull=False,
        ).order_by("judge__name", "criterion_id", "id")
        for unit_id, criterion_id, judge_id, value, raw in judged.values_list(
            "unit_id", "criterion_id", "judge_id", "value", "raw_response"
        ):
            units[unit_id].judgments.append(
                JudgeLabel(
                    criterion=names[criterion_id],
                    judge=judge_names[judge_id],
                    value=int(value or 0),
                    kept=kept_of(raw),
                )
            )
        yield from units.values()
