"""The demo: a small campaign, people in every role, and the steps that make it look lived in.

``make demo`` (``manage.py load_demo``) imports the demo file once, creates the people and runs
:func:`demo_steps`; running it again changes nothing that is already there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.corpus.campaigns import get_or_create_campaign
from annotation.models import Answer, Campaign, Criterion, Membership, Role
from evaluation.imports.campaign_file import ImportSummary, import_file
from evaluation.models import ReportSnapshot

# Generated from demo/data by ``python -m demo.build`` (``make demo-file``), and committed.
DEMO_FILE = Path(__file__).resolve().parents[2] / "demo" / "campaign.jsonl"
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
    from evaluation.demo.categories import correctness_step
    from evaluation.demo.labelling import human_work_step

    return [
        correctness_step,
        _judge_demo_offline,
        _draw_demo_samples,
        human_work_step,
        _snapshot_demo_estimates,
        second_version_step,
    ]


def _judge_demo_offline(campaign: Campaign) -> str | None:
    """Judge every unit not yet judged with the offline lexical judge (no API key needed), on
    every criterion it can judge (0 or 1: not a criterion with categories)."""
    from annotation.criteria.categories import is_categorical
    from evaluation.judge import runs

    judge = runs.get_or_create_judge(campaign=campaign, name=runs.LEXICAL)
    judged = []
    for criterion in Criterion.objects.filter(campaign=campaign).order_by("name"):
        if is_categorical(criterion) or criterion.judgments.filter(judge=judge).exists():
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
    from evaluation.estimates.snapshots import record_snapshots

    stored = [
        snapshot
        for criterion in Criterion.objects.filter(campaign=campaign).order_by("name")
        for snapshot in record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    ]
    return f"stored {len(stored)} report snapshots" if stored else None


def second_version_step(campaign: Campaign) -> str | None:
    """The same questions answered by a second version of the assistant, in a campaign of its
    own with its own labels, judge run, samples and snapshots (``evaluation.demo.versions``), so
    that the comparison page compares two versions question by question."""
    from evaluation.demo.categories import correctness_step
    from evaluation.demo.versions import load_second_version

    _second, lines = load_second_version(
        path=DEMO_FILE,
        people=lambda second: demo_people(campaign=second)[1],
        # Not the first version's criterion with categories: its labels follow that version's
        # planted defects (evaluation.demo.categories).
        steps=[step for step in demo_steps() if step not in (second_version_step, correctness_step)],
    )
    return "\n".join(lines) or None


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


def demo_people(*, campaign: Campaign) -> tuple[list[str], int]:
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
    users, memberships = demo_people(campaign=campaign)
    lines = [line for step in demo_steps() if (line := step(campaign))]
    return DemoResult(
        campaign=campaign,
        imported=imported,
        users_created=users,
        memberships_created=memberships,
        step_lines=lines,
    )
