"""Importing a campaign file: the corpus and human labels, plus judge labels as judgments.

The corpus side lives in ``annotation.ingest``; judge labels found in the file become
judgments of the campaign's ``imported`` judge, in the same transaction.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction

from annotation import ingest
from annotation.ingest.bulk import insert_rows
from annotation.models import Campaign, Membership, Role
from evaluation.judge.runs import IMPORTED
from evaluation.models import Judge, Judgment, ReportSnapshot
from evaluation.tasks import enqueue_refresh


@dataclass(frozen=True)
class ImportSummary:
    """What an import wrote (and, with update, deleted)."""

    file: str
    campaign: Campaign
    campaign_created: bool
    questions_created: int
    chunks_created: int
    answers_created: int
    answers_replaced: int
    sentences: int
    units: int
    labels: int
    judgments: int
    deleted_labels: int
    deleted_judgments: int
    seconds: float
    warnings: list[str] = field(default_factory=list)

    @property
    def answers(self) -> int:
        return self.answers_created + self.answers_replaced

    @property
    def answers_per_second(self) -> float:
        return self.answers / self.seconds if self.seconds > 0 else 0.0

    def lines(self) -> list[str]:
        """The summary as short lines for a terminal or a page."""
        where = "into a new campaign" if self.campaign_created else "into campaign"
        lines = [
            f"{self.file}: imported {where} {self.campaign.name!r} in {self.seconds:.1f} s",
            f"answers: {self.answers_created} new, {self.answers_replaced} replaced",
            f"questions: {self.questions_created} new; chunks: {self.chunks_created} new",
            f"sentences: {self.sentences}; units: {self.units}",
            f"imported labels: {self.labels} human, {self.judgments} judge ('{IMPORTED}')",
        ]
        if self.answers_replaced:
            lines.append(
                f"replaced answers lost {self.deleted_labels} earlier imported labels and "
                f"{self.deleted_judgments} judgments on their old units (run the judges again on them)"
            )
        lines.extend(f"warning: {warning}" for warning in self.warnings)
        return lines


def _mapping(mapping: ingest.ImportMapping | Mapping | str | Path | None) -> ingest.ImportMapping | None:
    if mapping is None:
        return None
    if isinstance(mapping, str | Path):
        return ingest.read_mapping(path=Path(mapping), name=str(mapping))
    return ingest.check_mapping(mapping=mapping, name="mapping")


class _ImportedJudge:
    """Stores judge labels as judgments of the campaign's ``imported`` judge, batch by batch;
    the judge is created on the first label."""

    def __init__(self) -> None:
        self.judge: Judge | None = None

    def __call__(self, campaign: Campaign, labels: list[ingest.JudgeLabel]) -> int:
        if not labels:
            return 0
        if self.judge is None:
            self.judge = _imported_judge(campaign=campaign)
        ok = Judgment.Status.OK.value
        insert_rows(
            model=Judgment,
            columns=["unit", "criterion", "judge", "status", "value"],
            rows=[(label.unit_id, label.criterion_id, self.judge.pk, ok, label.value) for label in labels],
            returning=False,
        )
        return len(labels)


def _imported_judge(*, campaign: Campaign) -> Judge:
    judge, _ = Judge.objects.get_or_create(
        campaign=campaign,
        name=IMPORTED,
        defaults={"kind": Judge.Kind.IMPORTED, "language": campaign.expected_language or "fr"},
    )
    if judge.kind != Judge.Kind.IMPORTED:
        raise ingest.ImportFailed(
            [
                ingest.RowError(
                    file="campaign",
                    row=None,
                    field="judge",
                    message=f"the campaign's judge {IMPORTED!r} is not an imported judge; rename it first",
                )
            ]
        )
    return judge


def import_file(
    *,
    path: str | Path,
    campaign_name: str,
    mapping: ingest.ImportMapping | Mapping | str | Path | None = None,
    update: bool = False,
    progress: ingest.ProgressCallback | None = None,
    name: str | None = None,
    manager: User | None = None,
) -> ImportSummary:
    """Import the file at ``path`` into the campaign ``campaign_name`` (created on first use).

    ``mapping`` renames the file's columns and translates its values (an ImportMapping, its JSON
    as a dict, or the path of a JSON file; see annotation.ingest.mapping); ``name`` is
    how errors call the file (default: ``path``); ``manager`` becomes the manager of a campaign
    this import creates. Human labels become final imported labels, judge labels judgments of
    the ``imported`` judge. Any problem raises ``annotation.ingest.ImportFailed`` and nothing is
    written: the file is checked whole (pass 1), then read again and written (pass 2) in one
    transaction, so ``path`` must stay in place until this returns.
    """
    started = time.perf_counter()
    checked = ingest.check_file(path=path, name=name, mapping=_mapping(mapping))
    with transaction.atomic():
        result = ingest.load_file(
            checked=checked,
            campaign_name=campaign_name,
            update=update,
            progress=progress,
            judge_labels=_ImportedJudge(),
        )
        judgments = result.judgments
        if manager is not None and result.campaign_created:
            Membership.objects.get_or_create(campaign=result.campaign, user=manager, role=Role.MANAGER)
        if result.labels or judgments:
            for criterion_id in result.campaign.criteria.values_list("pk", flat=True):
                enqueue_refresh(criterion_id=criterion_id, trigger=ReportSnapshot.Trigger.IMPORT)
    return ImportSummary(
        file=checked.name,
        campaign=result.campaign,
        campaign_created=result.campaign_created,
        questions_created=result.questions_created,
        chunks_created=result.chunks_created,
        answers_created=result.answers_created,
        answers_replaced=result.answers_replaced,
        sentences=result.sentences,
        units=result.units,
        labels=result.labels,
        judgments=judgments,
        deleted_labels=result.deleted.get("annotation.Label", 0),
        deleted_judgments=result.deleted.get("evaluation.Judgment", 0),
        seconds=time.perf_counter() - started,
        warnings=result.warnings,
    )
