"""Importing a campaign file: the corpus and human labels, plus judge labels as judgments.

The corpus side lives in ``annotation.ingest``; judge labels found in the file become
judgments of the campaign's ``imported`` judge, in the same transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import ingest
from annotation.campaigns import get_or_create_campaign
from annotation.ingest.bulk import insert_rows
from annotation.models import Answer, Campaign, Criterion, Membership, Role
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
    manager: AbstractBaseUser | None = None,
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


# The demo: a small campaign, people in every role, and the steps that make it look lived in.

DEMO_FILE = Path(__file__).resolve().parent.parent / "annotation" / "demo" / "campaign.jsonl"
DEMO_CAMPAIGN = "Castelroc - due diligence (démo)"
DEMO_PASSWORD = "demo"
DEMO_MEMBERS: dict[str, list[str]] = {
    "manager": [Role.MANAGER],
    "annotator1": [Role.ANNOTATOR],
    "annotator2": [Role.ANNOTATOR, Role.REVIEWER],
    "annotator3": [Role.ANNOTATOR, Role.REVIEWER],
    "adjudicator": [Role.ADJUDICATOR],
    "analyst": [Role.ANALYST],
}
DEMO_SUPERUSER = "admin"


def demo_steps() -> list[Callable[[Campaign], str | None]]:
    """What runs after the demo corpus is in place, in order.

    Each step takes the demo campaign, must be safe to run again (a second ``load_demo`` calls
    it too) and returns a line to print, or None when it had nothing to do. Steps that build on
    the imported corpus, such as judging it with the offline judge, are listed here.
    """
    return [_judge_demo_offline, _draw_demo_samples, _snapshot_demo_estimates]


def _judge_demo_offline(campaign: Campaign) -> str | None:
    """Judge every unit not yet judged with the offline lexical judge (no API key needed)."""
    from evaluation.judge import runs

    judge = runs.get_or_create_judge(campaign=campaign, name=runs.LEXICAL)
    judged = []
    for criterion in Criterion.objects.filter(campaign=campaign).order_by("name"):
        if criterion.judgments.filter(judge=judge).exists():
            continue
        run = runs.create_run(criterion=criterion, judge=judge, scope="missing")
        run = runs.run_inline(run_id=run.pk)
        if run.total_units:
            judged.append(f"{run.done_units} {criterion.name}")
    return f"judged with the offline lexical judge: {', '.join(judged)} units" if judged else None


def _draw_demo_samples(campaign: Campaign) -> str | None:
    """Draw a small stratified sample per criterion, so annotators have work at once."""
    from annotation.models import Sample
    from annotation.sampling.draws import draw_sample

    drawn = []
    for criterion in Criterion.objects.filter(campaign=campaign).order_by("name"):
        if Sample.objects.filter(criterion=criterion).exists():
            continue
        sample = draw_sample(criterion=criterion, budget=36, seed=7, per_cluster=3)
        drawn.append(f"{sample.items.count()} {criterion.name}")
    return f"drew human samples: {', '.join(drawn)} units" if drawn else None


def _snapshot_demo_estimates(campaign: Campaign) -> str | None:
    """Store the first report snapshots, so the estimates' history starts with the demo."""
    from evaluation.snapshots import record_snapshots

    stored = [
        snapshot
        for criterion in Criterion.objects.filter(campaign=campaign).order_by("name")
        for snapshot in record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    ]
    return f"stored {len(stored)} report snapshots" if stored else None


@dataclass(frozen=True)
class DemoResult:
    campaign: Campaign
    imported: ImportSummary | None
    users_created: list[str]
    memberships_created: int
    step_lines: list[str]

    @property
    def changed(self) -> bool:
        return bool(self.imported or self.users_created or self.memberships_created or self.step_lines)


def _demo_people(*, campaign: Campaign) -> tuple[list[str], int]:
    User = get_user_model()
    created_users = []
    memberships = 0
    for username, roles in DEMO_MEMBERS.items():
        user = User.objects.filter(username=username).first()
        if user is None:
            user = User.objects.create_user(username=username, password=DEMO_PASSWORD)
            created_users.append(username)
        for role in roles:
            _, created = Membership.objects.get_or_create(campaign=campaign, user=user, role=role)
            memberships += created
    if not User.objects.filter(username=DEMO_SUPERUSER).exists():
        User.objects.create_superuser(username=DEMO_SUPERUSER, password=DEMO_PASSWORD)
        created_users.append(DEMO_SUPERUSER)
    return created_users, memberships


@transaction.atomic
def load_demo(*, path: Path = DEMO_FILE, campaign_name: str = DEMO_CAMPAIGN) -> DemoResult:
    """Import the demo corpus once, create the demo people (password ``demo``) and run demo_steps().

    Idempotent: a campaign that already holds answers is not imported again, existing users are
    left as they are (their passwords too), and memberships are only added when missing.
    """
    campaign, _ = get_or_create_campaign(name=campaign_name, expected_language="fr")
    imported = None
    if not Answer.objects.filter(campaign=campaign).exists():
        imported = import_file(path=path, campaign_name=campaign_name, name=str(path.name))
    users, memberships = _demo_people(campaign=campaign)
    lines = [line for step in demo_steps() if (line := step(campaign))]
    return DemoResult(
        campaign=campaign,
        imported=imported,
        users_created=users,
        memberships_created=memberships,
        step_lines=lines,
    )
