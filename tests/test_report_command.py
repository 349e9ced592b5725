"""python manage.py report: formats, judge choice and errors."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from openpyxl import load_workbook

from evaluation.models import Judge
from tests.judged import study_campaign


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("report", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def imported(db):
    return study_campaign(name="Velmont")


def test_json_report_has_themes_and_overall(imported):
    data = json.loads(run("--campaign", "Velmont", "--criterion", "relevance", "--format", "json"))
    assert data["judge"] == "imported" and data["alpha"] == 0.05
    assert [t["theme"] for t in data["themes"]] == ["Finance", "IT", "RH"]
    assert data["overall"]["theme"] == "overall"
    assert data["themes"][0]["method"] == "robust"


def test_alpha_method_and_difficulty_options_reach_the_report(imported):
    data = json.loads(
        run(
            "--campaign",
            "Velmont",
            "--criterion",
            "relevance",
            "--format",
            "json",
            "--alpha",
            "0.1",
            "--method",
            "study",
            "--by-difficulty",
        )  # fmt: skip
    )
    assert data["alpha"] == 0.1
    assert data["themes"][0]["method"] == "study"
    assert len(data["by_difficulty"]) == 6


def test_table_is_the_default_format(imported):
    out = run("--campaign", "Velmont", "--criterion", "relevance")
    assert "PPI++" in out
    assert [line.split()[0] for line in out.splitlines()[2:-1]] == ["Finance", "IT", "RH", "overall"]
    assert out.splitlines()[-1].startswith("human labels under guidelines ")


def test_csv_and_xlsx_are_written_to_the_output_file(imported, tmp_path):
    target = tmp_path / "relevance.csv"
    assert "wrote" in run(
        "--campaign", "Velmont", "--criterion", "relevance", "--format", "csv", "--output", str(target)
    )
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    assert [row["theme"] for row in rows] == ["Finance", "IT", "RH", "overall"]
    book = tmp_path / "report.xlsx"
    run("--campaign", "Velmont", "--criterion", "relevance", "--format", "xlsx", "--output", str(book))
    assert "relevance" in load_workbook(book).sheetnames


def test_csv_file_cannot_carry_a_formula(db, tmp_path):
    study_campaign(name="Hostile", design={'=HYPERLINK("http://evil","x")': ([(1, 1), (0, 1)], [0])})
    target = tmp_path / "relevance.csv"
    run("--campaign", "Hostile", "--criterion", "relevance", "--format", "csv", "--output", str(target))
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    assert rows[0]["theme"] == '\'=HYPERLINK("http://evil","x")'
    assert float(rows[0]["human_mean"]) == 0.5


def test_json_can_go_to_a_file(imported, tmp_path):
    target = tmp_path / "r.json"
    run("--campaign", "Velmont", "--criterion", "relevance", "--format", "json", "--output", str(target))
    assert json.loads(target.read_text(encoding="utf-8"))["criterion"] == "relevance"


def test_the_only_run_judge_is_chosen_over_the_imported_one(imported):
    campaign = imported[0]
    Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    data = json.loads(run("--campaign", "Velmont", "--criterion", "relevance", "--format", "json"))
    assert data["judge"] == "lexical"
    assert data["themes"][0]["n_judge"] == 0
    named = json.loads(
        run("--campaign", "Velmont", "--criterion", "relevance", "--format", "json", "--judge", "imported")
    )
    assert named["judge"] == "imported"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--campaign", "Nope", "--criterion", "relevance"], "campaign 'Nope' does not exist"),
        (["--campaign", "Velmont", "--criterion", "tone"], "criterion 'tone' does not exist"),
        (["--campaign", "Velmont", "--criterion", "relevance", "--format", "pdf"], "--format"),
        (["--campaign", "Velmont", "--criterion", "relevance", "--format", "xlsx"], "needs --output"),
        (["--campaign", "Velmont", "--criterion", "relevance", "--format", "csv"], "needs --output"),
        (["--campaign", "Velmont", "--criterion", "relevance", "--alpha", "x"], "--alpha must be a number"),
        (["--campaign", "Velmont", "--criterion", "relevance", "--alpha", "1"], "between 0 and 1"),
        (["--campaign", "Velmont", "--criterion", "relevance", "--method", "bayes"], "--method"),
        (
            ["--campaign", "Velmont", "--criterion", "relevance", "--judge", "gpt"],
            "judge 'gpt' does not exist",
        ),
    ],
)
def test_bad_arguments_raise_a_command_error_naming_the_problem(imported, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace("'", "'")):
        run(*args)


def test_several_judges_without_judge_option_lists_them(imported):
    campaign = imported[0]
    Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    with pytest.raises(CommandError, match="gpt, imported, lexical"):
        run("--campaign", "Velmont", "--criterion", "relevance")


@pytest.mark.parametrize("method", ["robust", "study"])
def test_json_csv_and_table_never_carry_a_bound_outside_0_1(imported, method, tmp_path):
    args = ["--campaign", "Velmont", "--criterion", "relevance", "--method", method, "--alpha", "0.001"]
    data = json.loads(run(*args, "--format", "json"))
    groups = [*data["themes"], data["overall"]]
    for group in groups:
        for key in ("human", "judge", "ppi"):
            assert all(b is None or 0 <= b <= 1 for b in group[f"{key}_ci"]), (group["theme"], key)
            if f"{key}_ci_raw" in group:
                assert method == "study"
                assert any(b is not None and not 0 <= b <= 1 for b in group[f"{key}_ci_raw"])
    clipped = [g for g in groups if any(f"{k}_ci_raw" in g for k in ("human", "judge", "ppi"))]
    assert bool(clipped) == (method == "study")
    run(*args, "--format", "csv", "--output", str(tmp_path / "r.csv"))
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    for row in rows:
        for column in ("human_lo", "human_hi", "judge_lo", "judge_hi", "ppi_lo", "ppi_hi"):
            assert row[column] == "" or 0 <= float(row[column]) <= 1
    assert any(row["clipped"] for row in rows) == (method == "study")
    table = run(*args)
    assert ("clipped to [0, 1]" in table) == (method == "study")
    bounds = [float(b) for pair in re.findall(r"\[\s*(-?[\d.]+),\s*(-?[\d.]+)\]", table) for b in pair]
    assert bounds and all(0 <= b <= 100 for b in bounds)
