"""Every road to a report gives the same figures and the same provenance for the same request:
the page, its XLSX, CSV, JSON and ARES downloads, the ``report`` and ``export_campaign``
commands, the API, the release gate and the comparison of two campaigns. They all call
``evaluation.reports.read.read_report``; this checks that none drifted on the way out."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from django.core.management import call_command
from django.urls import reverse
from openpyxl import load_workbook

from evaluation.estimates import snapshots
from evaluation.models import ReportSnapshot
from evaluation.reports import gate, read
from tests.factories import add_member, api_token, make_campaign, member
from tests.judged import judged_campaign, study_campaign

THEMES = ("Finance", "IT", "RH", "overall")


def figures_of_report(report) -> dict[str, tuple]:
    """Per theme and overall: the PPI++ estimate and its bounds as shown, rounded to 12 digits
    (the JSON's floats and the workbook's cells are the same binary numbers; rounding only
    absorbs None against NaN)."""
    groups = [*report.themes, report.overall]
    return {g.theme: _triple(g.ppi.mean, g.ppi.shown_lo, g.ppi.shown_hi) for g in groups}


def figures_of_json(data: dict) -> dict[str, tuple]:
    groups = [*data["themes"], data["overall"]]
    return {g["theme"]: _triple(g["ppi_mean"], *g["ppi_ci"]) for g in groups}


def _triple(*values) -> tuple:
    return tuple(
        None if v is None or (isinstance(v, float) and math.isnan(v)) else round(v, 12) for v in values
    )


def same_source(data: dict) -> dict:
    """A provenance as every road must agree on it: a snapshot's whole, a computation's but its
    moment (each road computes at its own)."""
    return {key: value for key, value in data.items() if data["source"] == "snapshot" or key != "as_of"}


@pytest.fixture(params=["snapshot", "computed"])
def road(request, db, tmp_path):
    """A study campaign and its manager, read from a fresh snapshot or computed now (no snapshot)."""
    campaign, criterion, judge, _ = study_campaign(name="Roads")
    if request.param == "snapshot":
        snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    manager = member(campaign, "manager")
    shown = read.read_report(read.report_request(criterion=criterion))
    return {"campaign": campaign, "criterion": criterion, "manager": manager, "shown": shown, "tmp": tmp_path}


def test_every_road_gives_the_same_figures_and_provenance(road, client):
    campaign, criterion, shown = road["campaign"], road["criterion"], road["shown"]
    expected = figures_of_report(shown.binary)
    assert set(expected) == set(THEMES)
    provenance = shown.provenance.as_data()
    client.force_login(road["manager"])
    args = [campaign.slug, criterion.name]

    # The page.
    page = client.get(reverse("evaluation:report", args=args))
    assert page.status_code == 200
    assert figures_of_report(page.context["report"]) == expected
    assert same_source(page.context["shown"].provenance.as_data()) == same_source(provenance)

    # The JSON download, the report command and the API: one JSON.
    download = json.loads(client.get(reverse("evaluation:export_json", args=args)).content)
    out = io.StringIO()
    call_command(
        "report", "--campaign", campaign.name, "--criterion", criterion.name, "--format", "json", stdout=out
    )
    command = json.loads(out.getvalue())
    token = api_token(road["manager"])
    api = client.get(
        f"/api/v1/campaigns/{campaign.slug}/estimates/{criterion.name}", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()
    for data in (download, command, api):
        assert same_source(data.pop("estimates_source")) == same_source(provenance)
    assert download == command == api
    assert figures_of_json(api) == expected

    # The CSV download and the workbook.
    rows = list(
        csv.DictReader(io.StringIO(client.get(reverse("evaluation:export_csv", args=args)).content.decode()))
    )
    assert {
        r["theme"]: _triple(*(float(r[k]) if r[k] else None for k in ("ppi_mean", "ppi_lo", "ppi_hi")))
        for r in rows
    } == expected
    assert {r["estimates_source"] for r in rows} == {provenance["source"]}
    if provenance["source"] == "snapshot":
        assert {r["estimates_as_of"] for r in rows} == {provenance["as_of"].replace("Z", "+00:00")}
    book = load_workbook(io.BytesIO(client.get(reverse("evaluation:export_xlsx", args=args)).content))
    sheet = book[criterion.name]
    header = [cell.value for cell in sheet[1]]
    cells = {
        row[header.index("theme")]: _triple(*(row[header.index(k)] for k in ("ppi_mean", "ppi_lo", "ppi_hi")))
        for row in sheet.iter_rows(min_row=2, values_only=True)
    }
    assert cells == expected

    # ARES's keys, from the page and from export_campaign.
    ares_page = json.loads(client.get(reverse("evaluation:export_ares", args=args)).content)
    target = road["tmp"] / "ares.json"
    call_command(
        "export_campaign", "--campaign", campaign.name, "--format", "ares", "--output", str(target),
        "--criterion", criterion.name, stdout=io.StringIO(),
    )  # fmt: skip
    ares_command = json.loads(target.read_text(encoding="utf-8"))
    assert ares_page == ares_command
    assert {
        ("overall" if r["Attest_Theme"] == "overall" else r["Attest_Theme"]): _triple(
            r["ARES_Prediction"], *r["ARES_Confidence_Interval"]
        )
        for r in ares_page
    } == expected

    # The release gate (a fresh snapshot is trusted; nothing was recorded since).
    result = gate.evaluate_gate(campaign=campaign, criterion=criterion, min_lower=0)
    assert {f.group: _triple(f.estimate, f.lower, f.upper) for f in result.figures} == expected
    assert same_source(result.source.as_data()) == same_source(provenance)


def test_the_comparison_reads_each_side_as_its_report(db, client):
    left_campaign, left_criterion, _, _ = study_campaign(name="Left")
    right_campaign = make_campaign(name="Right")
    right_criterion, _, _ = judged_campaign(right_campaign)
    snapshots.record_snapshots(criterion=left_criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    manager = member(left_campaign, "manager")
    add_member(campaign=right_campaign, user=manager, roles=["manager"])
    client.force_login(manager)
    page = client.get(
        reverse("evaluation:compare", args=[left_campaign.slug, "relevance"]), {"other": right_campaign.slug}
    )
    assert page.status_code == 200
    left = read.read_report(read.report_request(criterion=left_criterion))
    right = read.read_report(read.report_request(criterion=right_criterion))
    assert figures_of_report(page.context["left"]) == figures_of_report(left.binary)
    assert figures_of_report(page.context["right"]) == figures_of_report(right.binary)
    assert same_source(page.context["left_source"].as_data()) == same_source(left.provenance.as_data())
    assert page.context["left_source"].from_snapshot and not page.context["right_source"].from_snapshot
