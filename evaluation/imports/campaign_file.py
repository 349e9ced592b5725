"""Importing a campaign file: the corpus and human labels, plus judge labels as judgments.

The corpus side lives in ``annotation.ingest``; judge labels found in the file become
judgments of the campaign's ``imported`` judge, in the same transaction.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from annotation import ingest
from annotation.criteria.editing import campaign_category_keys
from annotation.ingest import formats
from annotation.ingest.bulk import insert_rows
from annotation.ingest.checks import check_against_campaign
from annotation.models import Campaign, Membership, Role
from evaluation.estimates.snapshots import announce_estimates_moved
from evaluation.imports import previews
from evaluation.imports.previews import StoredUpload
from evaluation.judge.imported import IMPORTED, NotAnImportedJudge, imported_judge
from evaluation.models import Judge, Judgment, ReportSnapshot


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
    # Questions the file gave a reference answer or gold evidence.
    questions_given_evidence: int = 0
    # The format the file was read in, and the criteria it declared that the import created.
    format: str = formats.ATTEST
    criteria_created: list[str] = field(default_factory=list)

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
            f"{self.file}: imported {where} {self.campaign.name!r} in {self.seconds:.1f} s"
            + (f" (format {self.format})" if self.format != formats.ATTEST else ""),
            *([f"criteria created: {', '.join(self.criteria_created)}"] if self.criteria_created else []),
            f"answers: {self.answers_created} new, {self.answers_replaced} replaced",
            f"questions: {self.questions_created} new; chunks: {self.chunks_created} new",
            *(
                [f"questions given a reference answer or gold evidence: {self.questions_given_evidence}"]
                if self.questions_given_evidence
                else []
            ),
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


@dataclass(frozen=True)
class Breakdown:
    """Questions and answers of one theme (or one difficulty) in a previewed file."""

    name: str
    questions: int
    answers: int


@dataclass(frozen=True)
class LabelsPresent:
    """The labels a previewed file carries for one criterion at one level: units labelled, and
    how many of them by a human and by a judge."""

    criterion: str
    level: str
    units: int
    human: int
    llm: int


@dataclass(frozen=True)
class EvidencePresent:
    """The reference answers and gold evidence a previewed file gives its questions."""

    reference_answers: int = 0
    gold_questions: int = 0
    gold_texts: int = 0
    gold_chunks: int = 0


def _evidence_present(checked: ingest.CheckedFile) -> EvidencePresent:
    questions = checked.questions.values()
    return EvidencePresent(
        reference_answers=sum(bool(q.reference_row) for q in questions),
        gold_questions=sum(bool(q.gold_row) for q in questions),
        gold_texts=sum(q.gold_texts for q in questions),
        gold_chunks=sum(q.gold_chunks for q in questions),
    )


@dataclass(frozen=True)
class ImportPreview:
    """What importing a file would do, found by checking it (pass 1 and the checks against the
    campaign) without writing anything."""

    file: str
    campaign_name: str
    campaign_exists: bool
    answers: int
    answers_replaced: int
    questions: int
    questions_new: int
    chunks: int
    themes: list[Breakdown]
    difficulties: list[Breakdown]
    labels: list[LabelsPresent]
    warnings: list[str]
    token: str = ""
    evidence: EvidencePresent = EvidencePresent()
    # The format the file is read in; the criteria it declares that the campaign lacks (created
    # by the import), and the citation pattern it sets (None: the campaign's).
    format: str = formats.ATTEST
    criteria_new: list[str] = field(default_factory=list)
    citation_pattern: str | None = None

    @property
    def answers_new(self) -> int:
        return self.answers - self.answers_replaced

    @property
    def format_title(self) -> str:
        return formats.TITLES.get(self.format, self.format)


def _breakdown(checked: ingest.CheckedFile, attribute: str) -> list[Breakdown]:
    counts: dict[str, list[int]] = {}
    for question in checked.questions.values():
        count = counts.setdefault(getattr(question, attribute), [0, 0])
        count[0] += 1
        count[1] += question.answers
    return [Breakdown(name=name, questions=q, answers=a) for name, (q, a) in sorted(counts.items())]


def preview_file(
    *,
    path: str | Path,
    campaign_name: str,
    mapping: ingest.ImportMapping | Mapping | str | Path | None = None,
    update: bool = False,
    name: str | None = None,
    format: str = formats.AUTO,
) -> ImportPreview:
    """What ``import_file`` with these arguments would import, without writing anything: the
    file checked whole (pass 1) and against the campaign, counted by theme, difficulty and
    criterion. Raises ``annotation.ingest.ImportFailed`` with the very errors the import would
    give (a later import can still fail if the campaign changes meanwhile)."""
    checked = ingest.check_file(
        path=path,
        name=name,
        mapping=_mapping(mapping),
        categories=campaign_category_keys(campaign_name=campaign_name),
        format=format,
    )
    campaign = Campaign.objects.filter(name=campaign_name.strip()).first()
    existing = check_against_campaign(checked=checked, campaign=campaign, update=update)
    have = set(campaign.criteria.values_list("name", flat=True)) if campaign is not None else set()
    return ImportPreview(
        file=checked.name,
        campaign_name=campaign_name.strip(),
        campaign_exists=campaign is not None,
        answers=checked.count,
        answers_replaced=len(existing.replaced),
        questions=len(checked.questions),
        questions_new=len(checked.questions) - len(existing.questions),
        chunks=len(checked.chunks),
        themes=_breakdown(checked, "theme"),
        difficulties=_breakdown(checked, "difficulty"),
        labels=[
            LabelsPresent(criterion=criterion, level=level, units=uses.count, human=uses.human, llm=uses.llm)
            for (criterion, level), uses in sorted(checked.labels.items())
        ],
        warnings=checked.warnings + existing.warnings,
        evidence=_evidence_present(checked),
        format=checked.format,
        criteria_new=[c.name for c in checked.declarations.criteria if c.name not in have],
        citation_pattern=checked.declarations.citation_pattern,
    )


def _stored_mapping(stored: StoredUpload) -> ingest.ImportMapping | None:
    if stored.mapping is None:
        return None
    return ingest.read_mapping(path=stored.mapping, name=stored.mapping_name)


def preview_upload(
    *,
    upload: UploadedFile,
    mapping: UploadedFile | None,
    user_id: int,
    campaign_name: str,
    update: bool,
    format: str = formats.AUTO,
) -> ImportPreview:
    """Keep ``upload`` for a confirmation by ``user_id`` and preview its import; the preview's
    ``token`` names it for ``import_previewed``. A file that would be refused is not kept
    (ImportFailed, as from ``preview_file``)."""
    stored = previews.store_upload(
        upload=upload, mapping=mapping, user_id=user_id, campaign=campaign_name, update=update, format=format
    )
    try:
        preview = preview_file(
            path=stored.data,
            name=stored.name,
            campaign_name=campaign_name,
            mapping=_stored_mapping(stored),
            update=update,
            format=format,
        )
    except BaseException:
        previews.discard(stored)
        raise
    return dataclasses.replace(preview, token=stored.token)


def import_previewed(*, stored: StoredUpload, manager: User | None = None) -> ImportSummary:
    """Import the upload a preview kept (see ``evaluation.imports.previews.open_upload``), with
    the choices made with it, then delete it, imported or refused. Raises PreviewRefused when
    another confirmation took it first, ImportFailed as ``import_file`` does."""
    claimed = previews.claim(stored)
    try:
        return import_file(
            path=claimed.data,
            name=claimed.name,
            campaign_name=claimed.campaign,
            mapping=_stored_mapping(claimed),
            update=claimed.update,
            manager=manager,
            format=claimed.format,
        )
    finally:
        previews.discard(claimed)


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
            try:
                self.judge = imported_judge(campaign=campaign)
            except NotAnImportedJudge as exc:
                raise ingest.ImportFailed(
                    [ingest.RowError(file="campaign", row=None, field=exc.field, message=exc.message)]
                ) from None
        ok = Judgment.Status.OK.value
        insert_rows(
            model=Judgment,
            columns=["unit", "criterion", "judge", "status", "value"],
            rows=[(label.unit_id, label.criterion_id, self.judge.pk, ok, label.value) for label in labels],
            returning=False,
        )
        return len(labels)


def import_file(
    *,
    path: str | Path,
    campaign_name: str,
    mapping: ingest.ImportMapping | Mapping | str | Path | None = None,
    update: bool = False,
    progress: ingest.ProgressCallback | None = None,
    name: str | None = None,
    manager: User | None = None,
    format: str = formats.AUTO,
) -> ImportSummary:
    """Import the file at ``path`` into the campaign ``campaign_name`` (created on first use).

    ``format`` is our format or a published dataset's (``annotation.ingest.formats``; AUTO:
    detected from the file's shape), whose declared criteria are created in the same
    transaction. ``mapping`` renames the file's columns and translates its values (an
    ImportMapping, its JSON as a dict, or the path of a JSON file; see annotation.ingest.mapping); ``name`` is
    how errors call the file (default: ``path``); ``manager`` becomes the manager of a campaign
    this import creates. Human labels become final imported labels, judge labels judgments of
    the ``imported`` judge. Any problem raises ``annotation.ingest.ImportFailed`` and nothing is
    written: the file is checked whole (pass 1), then read again and written (pass 2) in one
    transaction, so ``path`` must stay in place until this returns.
    """
    started = time.perf_counter()
    checked = ingest.check_file(
        path=path,
        name=name,
        mapping=_mapping(mapping),
        categories=campaign_category_keys(campaign_name=campaign_name),
        format=format,
    )
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
            announce_estimates_moved(
                criterion_ids=list(result.campaign.criteria.values_list("pk", flat=True)),
                trigger=ReportSnapshot.Trigger.IMPORT,
            )
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
        questions_given_evidence=len(result.questions_given_evidence),
        format=checked.format,
        criteria_created=result.criteria_created,
    )
