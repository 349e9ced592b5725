"""The demo's criterion with categories: its labels follow the demo material, and its report
has real numbers after ``load_demo``."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from django.core.management import call_command

from annotation.models import Criterion, Label, Stage
from evaluation.demo import categories
from evaluation.demo.campaign import DEMO_CAMPAIGN
from evaluation.estimates.categorical import compute_categorical_report
from evaluation.models import Judge, Judgment


@pytest.mark.parametrize(
    ("defect", "difficulty", "repetition", "category"),
    [
        ("off_topic", "simple", 1, 4),
        ("answered_inappropriate", "inappropriee", 1, 4),
        ("unsupported_figure", "simple", 1, 2),
        ("missed_answer", "difficile", 1, 1),
        ("english", "simple", 1, 5),
        (None, "inappropriee", 3, 1),
        (None, "difficile", 2, 3),
        (None, "difficile", 3, 5),
        (None, "simple", 2, 5),
    ],
)
def test_a_demo_answer_s_category_follows_what_the_material_did_to_it(
    defect, difficulty, repetition, category
):
    found = categories.category_of(
        answer_id="Q-X-r1", difficulty=difficulty, repetition=repetition, defect=defect
    )
    assert found == category


def test_the_imported_judge_is_wrong_on_about_one_answer_in_seven_and_always_the_same():
    ids = [f"Q-{n}-r{r}" for n in range(40) for r in range(1, 7)]
    wrong = [a for a in ids if categories.judge_category(answer_id=a, truth=5) != 5]
    assert 0.08 < len(wrong) / len(ids) < 0.22
    assert all(categories.judge_category(answer_id=a, truth=5) == 2 for a in wrong)


def test_load_demo_gives_the_demo_a_five_category_criterion_with_real_numbers(loaded_demo, db):
    criterion = Criterion.objects.get(campaign__name=DEMO_CAMPAIGN, name="correctness")
    assert criterion.kind == "categorical" and len(criterion.categories) == 5
    human = Counter(
        Label.objects.filter(criterion=criterion, stage=Stage.IMPORTED).values_list("value", flat=True)
    )
    assert sum(human.values()) == 48 and set(human) >= {1, 4, 5}
    judge = Judge.objects.get(campaign=criterion.campaign, name="imported")
    assert Judgment.objects.filter(criterion=criterion, judge=judge).count() == 120
    report = compute_categorical_report(criterion=criterion, judge=judge, method="robust", alpha=0.05)
    assert report is not None
    # Nothing changes the second time.
    again = io.StringIO()
    call_command("load_demo", stdout=again)
    assert "nothing changed" in again.getvalue()
    assert Label.objects.filter(criterion=criterion).count() == 48


def test_the_report_of_a_criterion_with_categories_reads_a_judge_that_can_label_it(loaded_demo, db, client):
    """The offline lexical judge gives 0 or 1 only: the demo's correctness report defaults to the
    imported judge, the one judge able to label it, on the page and in the command."""
    from django.contrib.auth import get_user_model

    from annotation.models import Campaign

    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN)
    client.force_login(get_user_model().objects.get(username="analyst"))
    page = client.get(f"/campaigns/{campaign.slug}/reports/correctness/").content.decode()
    assert "Judge <strong>imported</strong>" in page
    out = io.StringIO()
    call_command(
        "report", "--campaign", campaign.name, "--criterion", "correctness", "--format", "json", stdout=out
    )
    assert '"judge": "imported"' in out.getvalue()
