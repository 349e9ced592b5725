"""The XLSX workbook and the CSV table of a report."""

from __future__ import annotations

import csv
import io

import pytest
from openpyxl import load_workbook

from annotation.models import Criterion, Label, Level, Stage, Unit
from annotation.workflow.history import CSV_HEADER
from evaluation.estimates.report import compute_report
from evaluation.models import Judgment
from evaluation.reports import tables, workbook
from tests.factories import make_answer, make_user
from tests.judged import study_campaign


@pytest.fixture
def reports(db):
    campaign, criterion, judge, units = study_campaign()
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    for unit in Unit.objects.filter(campaign=campaign, level=Level.SENTENCE)[:30]:
        Judgment.objects.create(unit=unit, criterion=veracity, judge=judge, value=unit.pk % 2)
    for unit in Unit.objects.filter(campaign=campaign, level=Level.SENTENCE)[:12]:
        Label.objects.create(unit=unit, criterion=veracity, stage=Stage.IMPORTED, value=1 - unit.pk % 3 // 2)
    relevance = compute_report(criterion=criterion, judge=judge, by_difficulty=True)
    veracity_report = compute_report(criterion=veracity, judge=judge)
    return campaign, [relevance, veracity_report], units


def _workbook(campaign, reports):
    buffer = io.BytesIO()
    workbook.build_workbook(campaign=campaign, criteria_reports=reports, path_or_buffer=buffer)
    buffer.seek(0)
    return load_workbook(buffer)


def test_workbook_has_the_summary_metrics_criteria_units_and_history_sheets(reports):
    campaign, criteria_reports, _ = reports
    wb = _workbook(campaign, criteria_reports)
    assert wb.sheetnames == [
        "Summary",
        "Automatic metrics",
        "relevance",
        "veracity",
        "Units",
        "Label history",
    ]
    summary = wb["Summary"]
    assert summary["B1"].value == campaign.name
    assert [summary.cell(row=4, column=c).value for c in (1, 2, 4, 5)] == [
        "relevance",
        "Relevance",
        "imported",
        "robust",
    ]
    assert summary.cell(row=4, column=12).value == pytest.approx(criteria_reports[0].overall.ppi.mean)


def test_each_criterion_sheet_has_a_bar_chart_with_error_bars_and_numbers_as_numbers(reports):
    campaign, criteria_reports, _ = reports
    wb = _workbook(campaign, criteria_reports)
    for report in criteria_reports:
        ws = wb[report.criterion]
        assert len(ws._charts) == 1
        chart = ws._charts[0]
        assert chart.series[0].errBars is not None
        assert chart.series[0].errBars.plus.numRef.f.startswith(f"'{report.criterion}'!") or (
            report.criterion in chart.series[0].errBars.plus.numRef.f
        )
        assert ws.freeze_panes == "B2"
        headers = [cell.value for cell in ws[1]]
        assert headers == tables.HEADERS
        col = headers.index("ppi_mean") + 1
        first = ws.cell(row=2, column=col)
        assert first.data_type == "n"
        assert first.number_format == "0.0%"
        assert first.value == pytest.approx(report.themes[0].ppi.mean)
        n_col = headers.index("n_human") + 1
        assert ws.cell(row=2, column=n_col).value == report.themes[0].n_human
        last = ws.max_row
        assert ws.cell(row=last, column=1).value == "overall"
    relevance = wb["relevance"]
    rows = [row[0].value for row in relevance.iter_rows(min_row=2)]
    assert rows == ["Finance", "IT", "RH"] + ["Finance", "Finance", "IT", "IT", "RH", "RH"] + ["overall"]


def test_units_sheet_lists_every_unit_with_final_human_and_judge_labels(reports):
    campaign, criteria_reports, units = reports
    wb = _workbook(campaign, criteria_reports)
    ws = wb["Units"]
    headers = [cell.value for cell in ws[1]]
    assert headers[:7] == ["unit", "level", "answer", "sentence", "theme", "difficulty", "text"]
    assert "relevance: human" in headers and "relevance: imported" in headers
    assert ws.max_row == 1 + Unit.objects.filter(campaign=campaign).count()
    assert ws.freeze_panes == "B2"
    unit, human, verdict = units["Finance"]["labeled"][3]
    row = next(r for r in ws.iter_rows(min_row=2, values_only=True) if r[0] == unit.pk)
    assert row[headers.index("relevance: human")] == human
    assert row[headers.index("relevance: imported")] == verdict
    assert row[headers.index("theme")] == "Finance"
    assert row[headers.index("text")] == unit.answer.text


FORMULA = '=HYPERLINK("http://evil","x")'


def test_untrusted_text_starting_with_equals_stays_inert_text(db):
    campaign, criterion, judge, _ = study_campaign(design={"Finance": ([(1, 1), (0, 0)], [1])})
    make_answer(campaign=campaign, theme="Finance", text='=HYPERLINK("http://evil")\x07')
    report = compute_report(criterion=criterion, judge=judge)
    wb = _workbook(campaign, [report])
    cells = [row[6] for row in wb["Units"].iter_rows(min_row=2)]
    hostile = next(cell for cell in cells if "HYPERLINK" in str(cell.value))
    assert hostile.value == '\'=HYPERLINK("http://evil")' and hostile.data_type == "s"


@pytest.fixture
def hostile_report(db):
    """A theme and a judge name that a spreadsheet would run as formulas."""
    campaign, criterion, judge, _ = study_campaign(design={FORMULA: ([(1, 1), (0, 0), (1, 0)], [1, 0])})
    judge.name = "-cmd|' /C calc'!A0"
    judge.save()
    return campaign, compute_report(criterion=criterion, judge=judge)


def test_csv_text_cells_cannot_run_as_formulas_and_numbers_stay_numbers(hostile_report):
    _, report = hostile_report
    stream = io.StringIO()
    tables.write_csv(report=report, stream=stream)
    rows = list(csv.reader(io.StringIO(stream.getvalue())))
    cells = [cell for row in rows[1:] for cell in row]
    assert "'" + FORMULA in cells and "'-cmd|' /C calc'!A0" in cells
    assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for cell in cells)
    first = dict(zip(rows[0], rows[1], strict=True))
    assert first["theme"] == "'" + FORMULA
    assert float(first["ppi_mean"]) == pytest.approx(report.themes[0].ppi.mean)
    assert float(first["n_human"]) == 3


def test_xlsx_text_cells_cannot_run_as_formulas_and_numbers_stay_numbers(hostile_report):
    campaign, report = hostile_report
    wb = _workbook(campaign, [report])
    cells = [cell for ws in wb.worksheets for row in ws.iter_rows() for cell in row]
    texts = [cell.value for cell in cells if isinstance(cell.value, str)]
    assert "'" + FORMULA in texts and "'-cmd|' /C calc'!A0" in texts
    assert not any(text.startswith(("=", "+", "-", "@", "\t", "\r")) for text in texts)
    assert not any(cell.data_type == "f" for cell in cells)
    sheet = wb["relevance"]
    header = [cell.value for cell in sheet[1]]
    first = [cell.value for cell in sheet[2]]
    assert first[header.index("theme")] == "'" + FORMULA
    assert first[header.index("ppi_mean")] == pytest.approx(report.themes[0].ppi.mean)


def test_label_history_has_every_label_row(reports):
    campaign, criteria_reports, units = reports
    user = make_user(username="reviewer-history")
    unit = units["IT"]["labeled"][0][0]
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    Label.objects.create(
        unit=unit, criterion=relevance, user=user, stage=Stage.REVIEW, value=0, comment="non"
    )
    wb = _workbook(campaign, criteria_reports)
    ws = wb["Label history"]
    assert ws.max_row == 1 + Label.objects.filter(unit__campaign=campaign).count()
    # The sheet is the history's CSV (annotation.workflow.history), with numbers and times as such.
    assert [cell.value for cell in ws[1]] == CSV_HEADER
    row = dict(zip(CSV_HEADER, [cell.value for cell in ws[ws.max_row]], strict=True))
    assert (row["unit_id"], row["criterion"], row["user"], row["stage"], row["value"], row["comment"]) == (
        unit.pk,
        "relevance",
        "reviewer-history",
        "review",
        0,
        "non",
    )
    assert row["action"] == "label" and row["time_utc"].tzinfo is None


def test_automatic_metrics_sheet_has_rates_as_percent_numbers(reports):
    campaign, criteria_reports, _ = reports
    ws = _workbook(campaign, criteria_reports)["Automatic metrics"]
    headers = [cell.value for cell in ws[1]]
    assert {"metric", "theme", "n", "rate", "ci_lo", "ci_hi"} <= set(headers)
    rates = [row[headers.index("rate")] for row in ws.iter_rows(min_row=2)]
    assert rates and all(cell.data_type == "n" and cell.number_format == "0.0%" for cell in rates)
    assert {row[headers.index("metric")].value for row in ws.iter_rows(min_row=2)} >= {
        "response",
        "functional_citation",
    }


def test_csv_has_one_row_per_group_with_fractions(reports):
    _, criteria_reports, _ = reports
    report = criteria_reports[0]
    stream = io.StringIO()
    tables.write_csv(report=report, stream=stream)
    rows = list(csv.DictReader(io.StringIO(stream.getvalue())))
    assert [row["theme"] for row in rows] == ["Finance", "IT", "RH"] + [
        "Finance",
        "Finance",
        "IT",
        "IT",
        "RH",
        "RH",
    ] + ["overall"]
    assert float(rows[0]["ppi_mean"]) == pytest.approx(report.themes[0].ppi.mean)
    assert rows[0]["criterion"] == "relevance" and rows[0]["alpha"] == "0.05"
    assert rows[-1]["missing_judgments"] == "2"


def test_table_lines_show_each_theme_and_overall(reports):
    _, criteria_reports, _ = reports
    lines = tables.table_lines(report=criteria_reports[1])
    assert "veracity" in lines[0] and "95% intervals" in lines[0]
    assert lines[-2].startswith("overall")
    # The last line names the texts the numbers rest on.
    assert lines[-1].startswith("human labels under guidelines ")


def test_csv_xlsx_and_table_show_bounds_in_0_1_and_flag_the_clipped_ones(reports):
    campaign, criteria_reports, _ = reports
    report = criteria_reports[1]  # veracity, study method: ppi_py's bounds, some outside [0, 1]
    groups = tables.report_groups(report=report)
    clipped = [group for group in groups if group.human.clipped or group.judge.clipped or group.ppi.clipped]
    assert clipped, "the fixture should hold an interval leaving [0, 1]"
    stream = io.StringIO()
    tables.write_csv(report=report, stream=stream)
    rows = list(csv.DictReader(io.StringIO(stream.getvalue())))
    for row, group in zip(rows, groups, strict=True):
        for key in ("human", "judge", "ppi"):
            for side in ("lo", "hi"):
                if row[f"{key}_{side}"]:
                    assert 0 <= float(row[f"{key}_{side}"]) <= 1
        names = [name for name, value in (("human", group.human), ("judge", group.judge), ("ppi", group.ppi))]
        flagged = [name for name in names if getattr(group, name).clipped]
        assert row["clipped"] == " ".join(flagged)
    assert any(row["clipped"] for row in rows)
    sheet = _workbook(campaign, criteria_reports)["veracity"]
    values = list(sheet.iter_rows(values_only=True))
    header = list(values[0]) if "clipped" in values[0] else next(r for r in values if r and "clipped" in r)
    at = {name: header.index(name) for name in ("human_lo", "human_hi", "ppi_lo", "ppi_hi", "clipped")}
    body = values[values.index(tuple(header)) + 1 :]
    assert any(row[at["clipped"]] for row in body)
    for row in body:
        for name in ("human_lo", "human_hi", "ppi_lo", "ppi_hi"):
            if isinstance(row[at[name]], float):
                assert 0 <= row[at[name]] <= 1
    lines = tables.table_lines(report=report)
    assert "clipped to [0, 1]" in lines[0]
    assert any("*" in line for line in lines[2:-1])
