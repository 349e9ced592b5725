"""python manage.py report: formats, judge choice and errors."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from openpyxl import load_workbook

from annotation.models import Unit
from evaluation.estimates.report import compute_report
from evaluation.models import Judge
from inference.estimators.shrinkage import shrink_to_judge
from inference.intervals import standard_error
from tests.categorical import categorical_campaign
from tests.factories import make_judge
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


def test_table_is_the_default_format_and_says_where_its_numbers_come_from(imported):
    out = run("--campaign", "Velmont", "--criterion", "relevance")
    assert "PPI++" in out
    assert [line.split()[0] for line in out.splitlines()[2:-2]] == ["Finance", "IT", "RH", "overall"]
    assert out.splitlines()[-2].startswith("human labels under guidelines ")
    assert out.splitlines()[-1] == "estimates: computed now (no snapshot of these parameters yet)"


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
    make_judge(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    Judge.objects.create(campaign=campaign, name="gpt-without-a-key", kind=Judge.Kind.OPENAI)
    data = json.loads(run("--campaign", "Velmont", "--criterion", "relevance", "--format", "json"))
    assert data["judge"] == "lexical" and data["judge_choice"] == "only_run"
    assert data["overall"]["n_judge"] == 1
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
            "--judge: 'gpt' has no successful judgment of 'relevance' (judges that have: imported)",
        ),
    ],
)
def test_bad_arguments_raise_a_command_error_naming_the_problem(imported, args, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        run(*args)


def test_several_judges_without_judge_option_lists_them_until_one_is_primary(imported):
    campaign = imported[0]
    make_judge(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    make_judge(campaign=campaign, name="gpt")
    with pytest.raises(CommandError, match=re.escape("choose one (gpt, imported, lexical)")):
        run("--campaign", "Velmont", "--criterion", "relevance")
    call_command("primary_judge", "--campaign", "Velmont", "--criterion", "relevance", "--judge", "imported")
    data = json.loads(run("--campaign", "Velmont", "--criterion", "relevance", "--format", "json"))
    assert (data["judge"], data["judge_choice"]) == ("imported", "primary")


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


def shrunk_expected(report):
    return shrink_to_judge(
        estimates=[g.ppi.mean for g in report.themes],
        standard_errors=[standard_error(g.ppi) for g in report.themes],
        judge_means=[g.judge.mean for g in report.themes],
        alpha=report.alpha,
    )


def test_shrinkage_adds_the_shrunk_columns_to_json_csv_xlsx_and_table(imported, tmp_path):
    _, criterion, judge, _ = imported
    expected = shrunk_expected(compute_report(criterion=criterion, judge=judge))
    args = ("--campaign", "Velmont", "--criterion", "relevance")
    plain = json.loads(run(*args, "--format", "json"))
    data = json.loads(run(*args, "--format", "json", "--shrinkage"))
    assert "shrinkage" not in plain and "ppi_shrunk_mean" not in plain["themes"][0]
    assert data["shrinkage"]["method"] == "ppi++-shrunk"
    assert data["shrinkage"]["guarantee"] == "on average over the themes, not for each theme"
    assert data["shrinkage"]["bench_coverage"]["worst_theme"] == 0.866
    # The study design's judge agrees with the humans on 17 of 21 paired units (81%).
    assert data["shrinkage"]["overall_agreement"] == pytest.approx(17 / 21)
    assert data["shrinkage"]["weak_judge"] is True
    for theme, s in zip(data["themes"], expected, strict=True):
        assert theme["ppi_shrunk_mean"] == pytest.approx(s.mean)
        assert theme["ppi_shrunk_ci"] == pytest.approx([s.lo, s.hi])
        assert theme["ppi_shrunk_weight"] == pytest.approx(s.weight)
        assert (
            theme["ppi_mean"] == next(t for t in plain["themes"] if t["theme"] == theme["theme"])["ppi_mean"]
        )
    assert data["shrinkage"]["tau2"] == pytest.approx(expected[0].tau2)

    target = tmp_path / "shrunk.csv"
    run(*args, "--format", "csv", "--output", str(target), "--shrinkage")
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    for row, s in zip(rows, expected, strict=False):
        assert float(row["ppi_shrunk_mean"]) == pytest.approx(s.mean)
        assert float(row["ppi_shrunk_lo"]) == pytest.approx(s.lo)
        assert float(row["ppi_shrunk_weight"]) == pytest.approx(s.weight)
    assert rows[-1]["theme"] == "overall" and rows[-1]["ppi_shrunk_mean"] == ""
    unshrunk = tmp_path / "plain.csv"
    run(*args, "--format", "csv", "--output", str(unshrunk))
    assert "ppi_shrunk_mean" not in unshrunk.read_text(encoding="utf-8")

    book = tmp_path / "shrunk.xlsx"
    run(*args, "--format", "xlsx", "--output", str(book), "--shrinkage")
    sheet = load_workbook(book)["relevance"]
    header = [cell.value for cell in sheet[1]]
    first = dict(zip(header, [cell.value for cell in sheet[2]], strict=True))
    assert first["ppi_shrunk_mean"] == pytest.approx(expected[0].mean)
    assert first["ppi_shrunk_weight"] == pytest.approx(expected[0].weight)

    table = run(*args, "--shrinkage")
    assert "shrunk to judge" in table and "on average over the themes, not for each theme" in table
    assert "here the judge agrees 81.0%, below 85%: rely on the PPI++ columns" in table


def test_shrinkage_cells_cannot_carry_a_formula(db, tmp_path):
    study_campaign(
        name="Hostile",
        design={
            '=HYPERLINK("http://evil","x")': ([(1, 1), (0, 1), (1, 0), (1, 1)], [0, 1]),
            "@SUM(A1)": ([(1, 1), (0, 0), (1, 0)], [1, 1]),
            "IT": ([(1, 1)], [1]),  # one label: left as it is, with its reason
        },
    )
    target = tmp_path / "relevance.csv"
    args = ("--campaign", "Hostile", "--criterion", "relevance", "--shrinkage")
    run(*args, "--format", "csv", "--output", str(target))
    rows = {row["theme"]: row for row in csv.DictReader(target.open(encoding="utf-8"))}
    assert set(rows) == {'\'=HYPERLINK("http://evil","x")', "'@SUM(A1)", "IT", "overall"}
    assert rows["IT"]["ppi_shrunk_mean"] == "" and "standard error" in rows["IT"]["ppi_shrunk_note"]
    book = tmp_path / "r.xlsx"
    run(*args, "--format", "xlsx", "--output", str(book))
    sheet = load_workbook(book)["relevance"]
    themes = [row[0].value for row in sheet.iter_rows(min_row=2)]
    assert all(not str(theme).startswith(("=", "@")) for theme in themes)


def test_shrinkage_with_fewer_than_two_themes_is_refused_naming_the_option(imported):
    _, criterion, _, _ = imported
    Unit.objects.filter(campaign=criterion.campaign).update(theme="Finance")  # one theme only
    with pytest.raises(CommandError, match=r"^--shrinkage: needs at least 2 themes .* this report has 1"):
        run("--campaign", "Velmont", "--criterion", "relevance", "--format", "json", "--shrinkage")


def test_shrinkage_on_a_criterion_with_categories_is_refused_saying_why(campaign):
    criterion, _, _ = categorical_campaign(campaign)
    with pytest.raises(CommandError, match=r"^--shrinkage: not offered for a criterion with categories"):
        run("--campaign", campaign.name, "--criterion", criterion.name, "--format", "json", "--shrinkage")
