"""python manage.py judge_alignment: the page's JSON and CSV, the part of the held-out split they
are on, and its refusals."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Criterion
from evaluation.designs import held_out
from evaluation.models import Judge
from tests.evaluation.measures.test_judge_alignment import TABLE, labelled


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("judge_alignment", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def judged(campaign):
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    labelled(campaign, TABLE, judge=judge)
    return campaign


def test_json_and_csv_hold_the_table_worked_by_hand(judged):
    data = json.loads(run("--campaign", judged.name, "--criterion", "relevance"))
    (judge,) = data["judges"]
    assert judge["judge"] == "gpt" and judge["overall"]["confusion"] == {"tp": 4, "fp": 1, "fn": 2, "tn": 3}
    assert judge["overall"]["dorner_ceiling"]["value"] == pytest.approx(1.4, abs=1e-4)
    rows = list(
        csv.reader(io.StringIO(run("--campaign", judged.name, "--criterion", "relevance", "--format", "csv")))
    )
    assert rows[-1][5] == "overall" and float(rows[-1][12]) == pytest.approx(0.7)


def test_refusals_name_the_option(judged):
    with pytest.raises(CommandError, match="--criterion: criterion 'nope' does not exist"):
        run("--campaign", judged.name, "--criterion", "nope")
    with pytest.raises(CommandError, match="--alpha"):
        run("--campaign", judged.name, "--criterion", "relevance", "--alpha", "2")
    with pytest.raises(CommandError, match="--format"):
        run("--campaign", judged.name, "--criterion", "relevance", "--format", "xml")


def test_the_part_of_the_held_out_split_is_carried(judged):
    # Without a split: every labelled unit, and a part of a split refused by name.
    assert json.loads(run("--campaign", judged.name, "--criterion", "relevance"))["part"] == "all"
    with pytest.raises(CommandError, match="--part"):
        run("--campaign", judged.name, "--criterion", "relevance", "--part", "held_out")
    held_out.make_split(criterion=Criterion.objects.get(campaign=judged, name="relevance"), seed=11)
    data = json.loads(run("--campaign", judged.name, "--criterion", "relevance"))
    assert (data["part"], data["figures_part"], data["comparisons_part"]) == (
        "split",
        "held_out",
        "selection",
    )
    assert data["split"]["seed"] == 11
    parts = data["split"]["parts"]
    assert parts["held_out"]["units"] + parts["selection"]["units"] == parts["all"]["units"] == 10
    rows = list(
        csv.reader(
            io.StringIO(
                run(
                    "--campaign",
                    judged.name,
                    "--criterion",
                    "relevance",
                    "--format",
                    "csv",
                    "--part",
                    "selection",
                )
            )
        )
    )
    assert rows[0][-1] == "part" and {row[-1] for row in rows[1:]} <= {"selection"}
