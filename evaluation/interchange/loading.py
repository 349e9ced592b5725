"""Labels and predictions from Label Studio or Argilla written into a campaign, all or nothing.

Every label and prediction is checked first: its criterion exists in the campaign, its unit is
found (by answer id and sentence position, or by unit id) at the criterion's level, the judge
that takes the predictions is an imported judge without a judgment on that unit yet. Any problem
raises ``ImportFailed`` naming the file, the record (1-based) and the field, and nothing is
written. Then, in one transaction, people are matched or created (``authors``), labels are
appended at stage ``imported`` with their author, times and seconds spent, and predictions become
judgments of the named judge.

Imported labels are final (``annotation.workflow.state``): where several people labelled a unit,
each label is kept with its author, and the latest by time is the final label. A label already
imported (same unit, criterion, person and time) is passed over, so importing a file twice
writes its labels once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from annotation.criteria.categories import is_categorical
from annotation.ingest.bulk import insert_rows
from annotation.ingest.errors import ErrorLog, ImportFailed, RowError
from annotation.models import Answer, Campaign, Criterion, Label, Stage, Unit
from annotation.workflow import open_slots
from evaluation.estimates.snapshots import announce_estimates_moved
from evaluation.interchange import argilla, authors, label_studio
from evaluation.interchange.records import HumanLabel, Parsed, Prediction, UnitKey
from evaluation.interchange.vocabulary import Vocabulary
from evaluation.judge.imported import IMPORTED, NotAnImportedJudge, existing_imported_judge, imported_judge
from evaluation.models import Judge, Judgment, ReportSnapshot

LABEL_STUDIO, ARGILLA = authors.LABEL_STUDIO, authors.ARGILLA
FORMATS = (LABEL_STUDIO, ARGILLA)
_READERS = {LABEL_STUDIO: label_studio.read, ARGILLA: argilla.read}


@dataclass(frozen=True)
class LabelImport:
    """What an import of labels wrote."""

    file: str
    format: str
    campaign: Campaign
    records: int
    labels: int
    already: int
    judgments: int
    judge: str | None
    people_matched: int
    people_created: list[str] = field(default_factory=list)
    skipped: int = 0
    prediction_ids: int = 0
    seconds: float = 0.0

    def lines(self) -> list[str]:
        """The summary as short lines for a terminal."""
        lines = [
            f"{self.file}: {self.records} {self.format} records into {self.campaign.name!r} "
            f"in {self.seconds:.1f} s",
            f"labels: {self.labels} imported, {self.already} already there",
            f"judgments: {self.judgments}" + (f" of judge {self.judge!r}" if self.judge else ""),
            f"people: {self.people_matched} matched, {len(self.people_created)} created inactive"
            + (f" ({', '.join(self.people_created)})" if self.people_created else ""),
        ]
        if self.skipped:
            lines.append(f"passed over: {self.skipped} cancelled annotations or unsubmitted responses")
        if self.prediction_ids:
            lines.append(
                f"passed over: {self.prediction_ids} predictions given by their Label Studio id alone "
                "(no choices in the file); to import them, export with the predictions in full "
                "(docs/interchange.md)"
            )
        return lines


@dataclass
class _Units:
    """Units of the campaign by the keys the file uses: (pk, level)."""

    by_key: dict[UnitKey, tuple[int, str]]

    @classmethod
    def load(cls, *, campaign: Campaign, keys: Iterable[UnitKey]) -> _Units:
        keys = set(keys)
        answer_ids = {key.answer_id for key in keys if key.answer_id is not None}
        unit_ids = {key.unit_id for key in keys if key.unit_id is not None}
        by_key: dict[UnitKey, tuple[int, str]] = {}
        answers = dict(
            Answer.objects.filter(campaign=campaign, external_id__in=answer_ids).values_list(
                "pk", "external_id"
            )
        )
        rows = Unit.objects.filter(answer_id__in=list(answers)).values_list(
            "pk", "level", "answer_id", "sentence__position", "chunk__external_id"
        )
        for pk, level, answer_pk, position, source in rows:
            by_key[UnitKey(answer_id=answers[answer_pk], sentence=position, source=source)] = (pk, level)
        for pk, level in Unit.objects.filter(campaign=campaign, pk__in=unit_ids).values_list("pk", "level"):
            by_key[UnitKey(unit_id=pk)] = (pk, level)
        return cls(by_key=by_key)


def _describe(key: UnitKey) -> str:
    if key.unit_id is not None:
        return f"unit {key.unit_id}"
    where = f"sentence {key.sentence} of " if key.sentence is not None else ""
    if key.source is not None:
        where = f"the citation of {key.source!r} in {where}"
    return f"{where}answer {key.answer_id!r}"


def _check(
    *, parsed: Parsed, campaign: Campaign, judge_name: str, errors: ErrorLog
) -> tuple[dict[str, Criterion], _Units, Judge | None]:
    criteria = {criterion.name: criterion for criterion in Criterion.objects.filter(campaign=campaign)}
    units = _Units.load(
        campaign=campaign, keys=[label.unit for label in parsed.labels] + [p.unit for p in parsed.predictions]
    )
    names = ", ".join(sorted(criteria)) or "none"

    def place(item: HumanLabel | Prediction) -> tuple[int, int] | None:
        criterion = criteria.get(item.criterion)
        if criterion is None:
            errors.add(
                row=item.record,
                field=item.field,
                message=f"{item.criterion!r} is not a criterion of {campaign.name!r} (criteria: {names}); "
                "rename it in the mapping",
            )
            return None
        if is_categorical(criterion):
            errors.add(
                row=item.record,
                field=item.field,
                message=f"criterion {criterion.name!r} has named categories: Label Studio and Argilla "
                "labels come in as 0/1 only; import its labels with import_campaign (category keys)",
            )
            return None
        found = units.by_key.get(item.unit)
        if found is None:
            errors.add(
                row=item.record,
                field=item.field,
                message=f"{_describe(item.unit)} is not a unit of {campaign.name!r}",
            )
            return None
        if found[1] != criterion.level:
            errors.add(
                row=item.record,
                field=item.field,
                message=f"{_describe(item.unit)} is at the {found[1]} level, "
                f"criterion {criterion.name!r} at the {criterion.level} level",
            )
            return None
        return found[0], criterion.pk

    seen_labels: dict[tuple, int] = {}
    for label in parsed.labels:
        placed = place(label)
        if placed is None:
            continue
        key = (*placed, label.author)
        if key in seen_labels:
            errors.add(
                row=label.record,
                field=label.field,
                message=f"a second label by the same person on {_describe(label.unit)} "
                f"(the first in record {seen_labels[key]})",
            )
        seen_labels.setdefault(key, label.record)
    judge = None
    if parsed.predictions:
        try:
            judge = existing_imported_judge(campaign=campaign, name=judge_name)
        except NotAnImportedJudge as exc:
            errors.add(row=None, field=exc.field, message=str(exc.message), file=parsed.file)
        seen: dict[tuple[int, int], int] = {}
        placed_predictions = [(prediction, place(prediction)) for prediction in parsed.predictions]
        judged = (
            set(
                Judgment.objects.filter(judge=judge, unit__campaign=campaign).values_list(
                    "unit_id", "criterion_id"
                )
            )
            if judge is not None
            else set()
        )
        for prediction, placed in placed_predictions:
            if placed is None:
                continue
            if placed in seen:
                errors.add(
                    row=prediction.record,
                    field=prediction.field,
                    message=f"a second prediction for {_describe(prediction.unit)} "
                    f"(the first in record {seen[placed]}): one judge gives one label per unit",
                )
            elif placed in judged:
                errors.add(
                    row=prediction.record,
                    field=prediction.field,
                    message=f"{_describe(prediction.unit)} already has a judgment of judge {judge_name!r}; "
                    "import the predictions under another --judge",
                )
            seen.setdefault(placed, prediction.record)
    return criteria, units, judge


def import_labels(
    *,
    path: str | Path,
    fmt: str,
    campaign: Campaign,
    vocabulary: Vocabulary | None = None,
    judge_name: str = IMPORTED,
    name: str | None = None,
) -> LabelImport:
    """Import the labels and predictions of the ``fmt`` export at ``path`` (``label-studio`` or
    ``argilla``) into ``campaign``; see the module docstring. ``name`` is how errors call the
    file (default: ``path``). Raises ImportFailed, having written nothing, on any problem."""
    started = time.perf_counter()
    name = name or str(path)
    if fmt not in _READERS:
        raise ImportFailed(
            [RowError(file=name, row=None, field="format", message=f"must be one of {', '.join(FORMATS)}")]
        )
    vocabulary = vocabulary or Vocabulary()
    errors = ErrorLog(file=name)
    parsed = _READERS[fmt](path=path, name=name, vocabulary=vocabulary, errors=errors)
    errors.raise_if_any()
    criteria, units, judge = _check(parsed=parsed, campaign=campaign, judge_name=judge_name, errors=errors)
    errors.raise_if_any()
    with transaction.atomic():
        people = authors.resolve(authors=[label.author for label in parsed.labels if not label.author.nobody])
        created = []
        for author, person in people.items():
            if person is None:
                made = authors.create(author)
                people[author] = made
                created.append(made.username)
        rows = []
        for label in sorted(parsed.labels, key=lambda item: (item.created_at, item.record)):
            unit_pk = units.by_key[label.unit][0]
            person = None if label.author.nobody else people[label.author]
            assert person is not None or label.author.nobody
            rows.append(
                (
                    unit_pk,
                    criteria[label.criterion].pk,
                    None if person is None else person.pk,
                    Stage.IMPORTED.value,
                    label.value,
                    label.comment,
                    label.created_at,
                    label.edited_at,
                    label.seconds_spent,
                )
            )
        present = set(
            Label.objects.filter(unit_id__in={row[0] for row in rows}, stage=Stage.IMPORTED).values_list(
                "unit_id", "criterion_id", "user_id", "created_at"
            )
        )
        fresh = [row for row in rows if (row[0], row[1], row[2], row[6]) not in present]
        insert_rows(
            model=Label,
            columns=[
                "unit",
                "criterion",
                "user",
                "stage",
                "value",
                "comment",
                "created_at",
                "edited_at",
                "seconds_spent",
            ],  # fmt: skip
            rows=fresh,
            returning=False,
        )
        if parsed.predictions:
            judge = imported_judge(campaign=campaign, name=judge_name)
            insert_rows(
                model=Judgment,
                columns=["unit", "criterion", "judge", "status", "value", "raw_response"],
                rows=[
                    (
                        units.by_key[p.unit][0],
                        criteria[p.criterion].pk,
                        judge.pk,
                        Judgment.Status.OK.value,
                        p.value,
                        json.dumps(p.kept, sort_keys=True) if p.kept else "",
                    )
                    for p in parsed.predictions
                ],
                returning=False,
            )
        # Imported labels are final: the work queues of their criteria are set again.
        open_slots.rebuild_all(
            criteria=Criterion.objects.filter(pk__in={row[1] for row in fresh}).select_related("campaign")
        )
        touched = {row[1] for row in fresh} | {criteria[p.criterion].pk for p in parsed.predictions}
        announce_estimates_moved(criterion_ids=sorted(touched), trigger=ReportSnapshot.Trigger.IMPORT)
    return LabelImport(
        file=name,
        format=fmt,
        campaign=campaign,
        records=parsed.records,
        labels=len(fresh),
        already=len(rows) - len(fresh),
        judgments=len(parsed.predictions),
        judge=judge.name if judge is not None else None,
        people_matched=len(people) - len(created),
        people_created=created,
        skipped=parsed.skipped,
        prediction_ids=parsed.prediction_ids,
        seconds=time.perf_counter() - started,
    )
