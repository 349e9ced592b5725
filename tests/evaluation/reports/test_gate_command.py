"""python manage.py gate: exit codes, the figures it prints, the themes it checks."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.core.management import call_command, load_command_class
from django.db import connections

from annotation.models import Criterion, Label, Stage, Unit
from evaluation.estimates.snapshots import record_snapshots
from tests.factories import make_campaign
from tests.judged import HOSTILE, judged_campaign, study_campaign

HIGH = {"Finance": ([(1, 1)] * 18 + [(0, 0)] * 2, [1] * 17 + [0] * 3)}
LOW = {"Finance": ([(1, 1)] * 10 + [(0, 0)] * 10, [1] * 10 + [0] * 10)}


@pytest.fixture
def gate(monkeypatch, capsys):
    """Run the command as ``manage.py gate ...`` does (argument errors, CommandError and the
    verdict become the process's exit code): (exit code, stdout, stderr)."""
    # run_from_argv closes the connections when it ends, which would end the test's transaction.
    monkeypatch.setattr(connections, "close_all", lambda: None)

    def run(*args: str) -> tuple[int, str, str]:
        command = load_command_class("evaluation", "gate")
        try:
            command.run_from_argv(["manage.py", "gate", *args])
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="module")
def _candidate(module_transaction):
    campaign = make_campaign(name="Candidate")
    judged_campaign(campaign)
    return campaign


@pytest.fixture
def candidate(_candidate, db):
    """Three themes whose robust PPI++ lower bounds are about 0.60 (Finance), 0.57 (IT) and 0.45
    (the hostile theme); overall about 0.63."""
    return copy.deepcopy(_candidate)


def report_json(*args: str) -> dict:
    out = io.StringIO()
    call_command("report", *args, "--format", "json", stdout=out)
    return json.loads(out.getvalue())


def test_the_gate_passes_with_exit_code_0_when_every_lower_bound_clears_the_threshold(candidate, gate):
    code, out, _ = gate("--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.4")
    assert code == 0
    last = out.splitlines()[-1]
    assert last.startswith("PASS: 4 groups checked, lowest PPI++ lower bound 0.450")
    assert last.endswith(">= 0.4")


def test_a_lower_bound_below_the_threshold_fails_with_exit_code_1_and_one_line(candidate, gate):
    code, out, _ = gate("--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.5")
    assert code == 1
    assert out.splitlines()[-1] == f"FAIL: theme {HOSTILE}: PPI++ lower bound 0.450 < 0.5"


def test_several_failures_name_the_first_and_count_the_others(candidate, gate):
    code, out, _ = gate("--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.61")
    assert code == 1
    assert out.splitlines()[-1] == f"FAIL: theme {HOSTILE}: PPI++ lower bound 0.450 < 0.61 (and 2 more)"


def test_the_figures_printed_are_the_reports(candidate, gate):
    for method in ("robust", "study"):
        code, out, _ = gate(
            "--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0", "--method", method,
            "--format", "json",
        )  # fmt: skip
        assert code == 0
        printed = {row["group"]: row for row in json.loads(out)["groups"]}
        report = report_json("--campaign", "Candidate", "--criterion", "relevance", "--method", method)
        for group in [*report["themes"], report["overall"]]:
            row = printed[group["theme"]]
            assert [row["ppi_mean"], [row["ppi_lower"], row["ppi_upper"]]] == [
                group["ppi_mean"],
                group["ppi_ci"],
            ]
            assert (row["n_human"], row["n_paired"], row["size"]) == (
                group["n_human"], group["n_paired"], group["size"],
            )  # fmt: skip
        assert len(printed) == len(report["themes"]) + 1


def test_the_table_shows_each_groups_bounds_with_three_decimals(candidate, gate):
    _, out, _ = gate("--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0")
    report = report_json("--campaign", "Candidate", "--criterion", "relevance")
    finance = next(group for group in report["themes"] if group["theme"] == "Finance")
    row = next(line for line in out.splitlines() if line.startswith("* Finance"))
    assert row.split()[2:7] == [
        f"{finance['ppi_mean']:.3f}",
        f"{finance['ppi_ci'][0]:.3f}",
        f"{finance['ppi_ci'][1]:.3f}",
        str(finance["n_human"]),
        str(finance["n_paired"]),
    ]
    assert "estimates: computed now (no snapshot of these parameters yet)" in out


def test_only_the_themes_named_are_checked(candidate, gate):
    code, out, _ = gate(
        "--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.5",
        "--theme", "Finance", "--theme", "IT",
    )  # fmt: skip
    assert code == 0
    assert out.splitlines()[-1].startswith("PASS: 2 groups checked, lowest PPI++ lower bound 0.568")
    rows = [line for line in out.splitlines() if HOSTILE in line or line.lstrip("* ").startswith("overall")]
    assert all(not line.startswith("*") for line in rows) and len(rows) == 2
    code, out, _ = gate(
        "--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.6", "--theme", "overall"
    )
    assert code == 0
    assert "(overall) >= 0.6" in out.splitlines()[-1]


def test_a_significant_drop_against_the_baseline_fails_the_gate(db, gate):
    study_campaign(name="v1", design=HIGH)
    study_campaign(name="v2", design=LOW)
    code, out, _ = gate(
        "--campaign", "v2", "--criterion", "relevance", "--min-lower", "0.2", "--baseline", "v1"
    )
    assert code == 1
    last = out.splitlines()[-1]
    assert last.startswith("FAIL: theme Finance: significant drop against v1: -0.")
    assert "(and 1 more)" in last  # overall dropped too
    assert "baseline: v1 / judge imported: computed now" in out


def test_no_drop_against_an_equal_baseline_passes(db, gate):
    study_campaign(name="v1", design=LOW)
    study_campaign(name="v2", design=LOW)
    code, out, _ = gate(
        "--campaign", "v2", "--criterion", "relevance", "--min-lower", "0.2", "--baseline", "v1"
    )
    assert code == 0
    assert out.splitlines()[-1].endswith("; no significant drop against v1 (2 compared)")
    finance = next(line for line in out.splitlines() if line.startswith("* Finance"))
    assert finance.split()[-4:-2] == ["0.500", "+0.000"]


GATE = ["--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.5"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (GATE[2:], "the following arguments are required: --campaign"),
        (GATE[:4], "required: --min-lower"),
        ([*GATE[:5], "high"], "--min-lower must be a number"),
        ([*GATE[:5], "1.5"], "min_lower: must be a rate"),
        (["--campaign", "Nowhere", *GATE[2:]], "campaign 'Nowhere' does not exist"),
        ([*GATE[:3], "tone", *GATE[4:]], "criterion 'tone' does not exist in 'Candidate' (criteria: "),
        (
            [*GATE, "--judge", "gpt"],
            "judge: 'gpt' has no successful judgment of 'relevance' (judges that have: imported)",
        ),
        ([*GATE, "--theme", "Legal"], "theme: 'Legal' is not a theme of 'Candidate' (themes: "),
        ([*GATE, "--baseline", "Nowhere"], "baseline: campaign 'Nowhere' does not exist"),
        ([*GATE, "--baseline", "Candidate"], "baseline: 'Candidate' is the campaign itself"),
        ([*GATE, "--alpha", "2"], "alpha: must be strictly between 0 and 1"),
        ([*GATE, "--method", "exact"], "method: 'exact' is not one of robust, study"),
        ([*GATE, "--format", "xml"], "--format must be one of text, json"),
    ],
)
def test_a_refused_request_exits_with_code_2_and_says_why(candidate, gate, args, message):
    code, out, err = gate(*args)
    assert code == 2
    assert message in err
    assert "PASS" not in out and "FAIL" not in out


def test_json_output_is_one_document_and_the_verdict_goes_to_stderr(candidate, gate):
    code, out, err = gate(
        "--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.5", "--format", "json"
    )
    assert code == 1
    data = json.loads(out)
    assert data["passed"] is False and data["line"] == err.strip()
    assert data["failures"] == [f"theme {HOSTILE}: PPI++ lower bound 0.450 < 0.5"]
    assert data["estimates"]["source"] == "computed"
    assert [row["group"] for row in data["groups"]] == [HOSTILE, "Finance", "IT", "overall"]


def test_a_theme_without_paired_labels_fails_the_gate(db, gate):
    design = {"Finance": LOW["Finance"], "IT": ([], [1, 1, 0])}
    study_campaign(name="Thin", design=design)
    code, out, _ = gate("--campaign", "Thin", "--criterion", "relevance", "--min-lower", "0.1")
    assert code == 1
    assert out.splitlines()[-1] == "FAIL: theme IT: no PPI++ estimate (0 paired units) (and 1 more)"


def test_labels_recorded_after_the_snapshot_make_the_gate_compute(candidate, gate):
    criterion = Criterion.objects.get(campaign=candidate, name="relevance")
    record_snapshots(criterion=criterion, trigger="manual")
    code, out, _ = gate("--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.35")
    assert code == 0
    assert "estimates: snapshot of " in out and "after on demand; nothing recorded since" in out
    _, out, _ = gate(
        "--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.35", "--format", "json"
    )
    data = json.loads(out)
    assert data["estimates"]["source"] == "snapshot" and data["estimates"]["trigger"] == "manual"
    report = report_json("--campaign", "Candidate", "--criterion", "relevance")
    assert [(row["ppi_mean"], [row["ppi_lower"], row["ppi_upper"]]) for row in data["groups"]] == [
        (group["ppi_mean"], group["ppi_ci"]) for group in [*report["themes"], report["overall"]]
    ]
    unlabeled = Unit.objects.filter(campaign=candidate, level=criterion.level).exclude(
        pk__in=Label.objects.values("unit_id")
    )
    Label.objects.create(unit=unlabeled.first(), criterion=criterion, stage=Stage.IMPORTED, value=0)
    code, out, _ = gate("--campaign", "Candidate", "--criterion", "relevance", "--min-lower", "0.35")
    assert "estimates: computed now (the latest snapshot is stale: human labels recorded since)" in out
