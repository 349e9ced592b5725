"""python manage.py judge_plan: the page's plan as text, JSON and CSV, its parameters, and its
refusals."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.judge_planned import planned


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("judge_plan", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def ready(campaign):
    planned(campaign=campaign)
    return campaign


def test_json_is_the_pages_download(ready, client_for, manager):
    data = json.loads(
        run("--campaign", ready.name, "--criterion", "relevance", "--target", "0.15", "--format", "json")
    )
    page = client_for(manager).get(
        f"/campaigns/{ready.slug}/relevance/judges/plan/export.json", {"target": "0.15"}
    )
    assert data == page.json()
    assert [theme["theme"] for theme in data["themes"]] == ["Finance", "IT"]
    assert data["ledger"]["human"]["source"] == "criterion"


def test_the_table_shows_the_ledger_each_theme_and_the_totals(ready):
    text = run("--campaign", ready.name, "--criterion", "relevance", "--target", "0.15")
    lines = text.splitlines()
    assert lines[0] == f"{ready.slug}: relevance, half-width 0.15 per theme, alpha = 0.05"
    assert "human label: 1.0000 (0.50 min per label, source criterion" in text
    assert "judge cheap: 0.001000 per unit" in text and "judge dear: 0.050000 per unit" in text
    assert any(line.startswith("Finance ") for line in lines)
    assert lines[-1].startswith("total ")


def test_csv_judges_and_minutes_per_label(ready):
    rows = list(
        csv.reader(
            io.StringIO(
                run(
                    "--campaign",
                    ready.name,
                    "--criterion",
                    "relevance",
                    "--target",
                    "0.15",
                    "--judge",
                    "cheap",
                    "--minutes-per-label",
                    "2",
                    "--format",
                    "csv",
                )
            )
        )
    )
    assert [row[0] for row in rows[1:4]] == ["Finance", "IT", "total"]
    human = next(row for row in rows if row and row[0] == "human_label_cost")
    assert human[2:4] == ["4.0", "given"]  # 2 minutes x 2 rows x 60 an hour
    assert [row[1] for row in rows if row and row[0] == "judge_cost_per_unit"] == ["cheap"]


def test_nothing_to_plan_is_said(campaign):
    planned(campaign=campaign, rate=None)
    text = run("--campaign", campaign.name, "--criterion", "relevance")
    assert text.rstrip().endswith(
        "a human label's cost is not known yet (no label timed, or no hourly rate set)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--target", "2"), "--target: give a half-width strictly between 0 and 0.5"),
        (("--judge", "nobody"), "--judge: nobody is not a judge of this criterion"),
        (("--judge", "a", "--judge", "b", "--judge", "c", "--judge", "d"), "--judge: "),
        (("--minutes-per-label", "0"), "--minutes-per-label: give the minutes"),
        (("--alpha", "1.5"), "--alpha: "),
        (("--format", "xml"), "Error: argument --format: invalid choice: 'xml'"),
    ],
)
def test_wrong_parameters_are_refused_naming_the_option(ready, args, message):
    with pytest.raises(CommandError, match="^" + message.replace("(", r"\(")):
        run("--campaign", ready.name, "--criterion", "relevance", *args)


def test_unknown_campaign_or_criterion(ready):
    with pytest.raises(CommandError, match="campaign 'Nope' does not exist"):
        run("--campaign", "Nope", "--criterion", "relevance")
    with pytest.raises(CommandError, match="criterion 'nope' does not exist"):
        run("--campaign", ready.name, "--criterion", "nope")
