"""Which numbers the report page and its downloads show: the latest snapshot of their
parameters, how old it is and whether it is stale; other parameters computed now."""

from __future__ import annotations

import csv
import io

import openpyxl
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Label, Level, Stage, Unit
from evaluation.estimates import snapshots
from evaluation.estimates.codec import report_as_json
from evaluation.estimates.report import compute_report
from evaluation.models import ReportSnapshot
from tests.factories import make_answer, make_answer_units
from tests.judged import judged_campaign, pct, row_html


def url(campaign, name: str = "report") -> str:
    return reverse(f"evaluation:{name}", args=[campaign.slug, "relevance"])


def add_label(campaign, criterion) -> None:
    """One more final human label: the overall n_human moves from 42 to 43."""
    unit = Unit.objects.filter(campaign=campaign, level=Level.ANSWER, labels__isnull=True).first()
    Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1)


def assert_rows_show(content: str, data: dict) -> None:
    for group in [*data["themes"], data["overall"]]:
        row = row_html(content, css="(?:total )?estimate-row", attribute="theme", value=group["theme"])
        for key in ("human", "judge", "ppi"):
            lo, hi = group[f"{key}_ci"]
            assert pct(group[f"{key}_mean"]) in row and f"[{pct(lo)}, {pct(hi)}]" in row
        assert f">{group['n_human']}<" in row and f">{group['n_judge']}<" in row


@pytest.mark.parametrize("method", ["robust", "study"])
def test_the_page_shows_the_snapshot_not_a_recomputation(method, campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    snapshot = ReportSnapshot.objects.get(criterion=criterion, method=method)
    add_label(campaign, criterion)  # no refresh: the snapshot is now behind the labels
    now = report_as_json(report=compute_report(criterion=criterion, judge=judge, method=method))
    assert now["overall"]["n_human"] == 43 != snapshot.data["overall"]["n_human"]

    content = client_for(analyst).get(url(campaign), {"method": method}).content.decode()

    assert_rows_show(content, snapshot.data)
    assert f">{now['overall']['n_human']}<" not in row_html(
        content, css="total estimate-row", attribute="theme", value="overall"
    )
    assert f"Estimates as of {snapshot.created_at:%Y-%m-%d %H:%M} UTC, after an import." in content
    assert "Recorded since then: new human labels. These estimates may have moved." in content


def test_a_fresh_snapshot_says_nothing_was_recorded_since(campaign, manager, client_for):
    criterion, _, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.JUDGE_RUN)
    content = client_for(manager).get(url(campaign)).content.decode()
    assert "after a judge run finished." in content
    assert "No label or judgment has been recorded since." in content
    assert "Recorded since then" not in content
    assert 'data-source="snapshot"' in content and "Recompute now" in content


def test_recompute_now_from_the_report_comes_back_to_fresh_numbers(
    campaign, analyst, client_for, django_capture_on_commit_callbacks
):
    criterion, judge, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    add_label(campaign, criterion)
    client = client_for(analyst)
    assert "Recorded since then" in client.get(url(campaign)).content.decode()

    posted = {"judge": "imported", "method": "robust", "alpha": "0.05", "back": "report"}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url(campaign, "refresh_estimates"), posted)
    assert response.status_code == 302
    assert response["Location"] == url(campaign) + "?judge=imported&method=robust&alpha=0.05"

    content = client.get(response["Location"]).content.decode()
    latest = ReportSnapshot.objects.filter(criterion=criterion, method="robust").first()
    assert latest.trigger == "manual" and latest.n_human == 43
    assert_rows_show(content, latest.data)
    stored = {key: value for key, value in latest.data.items() if key != snapshots.BY_QUESTION}
    assert stored == report_as_json(report=compute_report(criterion=criterion, judge=judge))
    assert "recomputed on demand." in content and "Recorded since then" not in content


def test_without_a_snapshot_the_page_computes_and_says_so(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    content = client_for(analyst).get(url(campaign)).content.decode()
    assert "Computed now" in content and "no snapshot of these estimates has been stored yet" in content
    assert 'data-source="computed"' in content and "Recompute now" in content
    assert_rows_show(content, report_as_json(report=compute_report(criterion=criterion, judge=judge)))


def test_other_parameters_are_computed_now_even_with_a_snapshot(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    add_label(campaign, criterion)
    content = client_for(analyst).get(url(campaign), {"alpha": "0.1"}).content.decode()
    assert "for these parameters: snapshots are kept at alpha = 0.05 only." in content
    assert "Recompute now" not in content  # a recomputation would not change what this page shows
    data = report_as_json(report=compute_report(criterion=criterion, judge=judge, alpha=0.1))
    assert data["overall"]["n_human"] == 43
    assert_rows_show(content, data)


def test_a_recomputation_on_its_way_is_announced(campaign, analyst, client_for):
    criterion, _, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    add_label(campaign, criterion)
    snapshots.schedule_refresh(criterion_id=criterion.pk, trigger="labels", delay_s=30)
    content = client_for(analyst).get(url(campaign)).content.decode()
    assert "A recomputation is on its way" in content


def test_new_units_and_a_new_judgment_make_the_snapshot_stale(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    make_answer(campaign=campaign, theme="IT")
    content = client_for(analyst).get(url(campaign)).content.decode()
    assert "Recorded since then: units added or removed." in content
    unit = Unit.objects.filter(campaign=campaign, level=Level.ANSWER).last()
    judge.judgments.create(unit=unit, criterion=criterion, value=1)
    content = client_for(analyst).get(url(campaign)).content.decode()
    assert "Recorded since then: new judgments, units added or removed." in content


def _queries(client, path, params=None) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(path, params or {}).status_code == 200
    return len(queries)


def test_a_snapshot_is_read_in_a_fixed_number_of_queries(campaign, analyst, client_for):
    """session, user, campaign, membership, criterion, judges, criteria, snapshot, then what
    changed since: labels, judgments, current sample, units count, schedule. The judge's
    calibration, which reads every label, is loaded apart (its own request)."""
    criterion, _, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    client = client_for(analyst)
    first = _queries(client, url(campaign))
    assert first == 13
    # Twice the data: the same queries (the computation would read every label chunk again).
    for unit in make_answer_units(campaign=campaign, count=30):
        Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.LABELS)
    assert _queries(client, url(campaign)) == first
    # The judges compared: one more query per other judge's snapshot.
    assert _queries(client, url(campaign), {"method": "study"}) == first - 1


def test_two_judges_read_each_judges_snapshot(campaign, analyst, client_for):
    criterion, imported, lexical = judged_campaign(campaign, second_judge=True)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    add_label(campaign, criterion)
    client = client_for(analyst)
    assert _queries(client, url(campaign)) == 14  # the other judge's snapshot
    content = client.get(url(campaign)).content.decode()
    for judge in (imported, lexical):
        data = ReportSnapshot.objects.filter(criterion=criterion, judge=judge, method="robust").first().data
        row = row_html(content, css="judge-row", attribute="judge", value=judge.name)
        assert pct(data["overall"]["observed_agreement"]) in row
        assert f"±{(data['overall']['ppi_ci'][1] - data['overall']['ppi_ci'][0]) / 2 * 100:.1f} pts" in row


def test_downloads_read_what_the_page_shows_and_say_so(campaign, analyst, client_for):
    criterion, _, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    snapshot = ReportSnapshot.objects.get(criterion=criterion, method="robust")
    add_label(campaign, criterion)
    client = client_for(analyst)

    rows = list(csv.DictReader(io.StringIO(client.get(url(campaign, "export_csv")).content.decode())))
    assert {row["estimates_source"] for row in rows} == {"snapshot"}
    assert {row["snapshot_trigger"] for row in rows} == {"import"}
    assert rows[0]["estimates_as_of"] == snapshot.created_at.isoformat(timespec="seconds")
    overall = rows[-1]
    assert overall["theme"] == "overall" and overall["n_human"] == "42"
    assert float(overall["ppi_mean"]) == pytest.approx(snapshot.data["overall"]["ppi_mean"])

    workbook = openpyxl.load_workbook(io.BytesIO(client.get(url(campaign, "export_xlsx")).content))
    summary = list(workbook["Summary"].iter_rows(values_only=True))
    header, first = summary[2], summary[3]
    assert dict(zip(header, first, strict=True))["estimates_source"] == "snapshot"
    assert dict(zip(header, first, strict=True))["n_human"] == 42

    computed = client.get(url(campaign, "export_csv"), {"alpha": "0.1"}).content.decode()
    rows = list(csv.DictReader(io.StringIO(computed)))
    assert {row["estimates_source"] for row in rows} == {"computed"} and rows[-1]["n_human"] == "43"
