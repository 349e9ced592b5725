"""A criterion with categories in the report page, its downloads and the report command."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse
from openpyxl import load_workbook

from evaluation.estimates.categorical import compute_categorical_report
from evaluation.estimates.codec import categorical_report_as_json
from tests.categorical import categorical_campaign


def url(campaign, name: str = "correctness", view: str = "report") -> str:
    return reverse(f"evaluation:{view}", args=[campaign.slug, name])


@pytest.mark.parametrize("persona", ["analyst", "manager"])
def test_the_page_shows_every_category_and_group_per_theme_with_the_confusion_matrix(
    persona, campaign, client_for, request
):
    criterion, judge, _ = categorical_campaign(campaign)
    report = compute_categorical_report(criterion=criterion, judge=judge)
    response = client_for(request.getfixturevalue(persona)).get(url(campaign))
    content = response.content.decode()
    assert response.status_code == 200
    for theme in ("Finance", "IT", "overall"):
        assert f'data-theme="{theme}"' in content
    for name in ("not-enough-information", "fully-correct", "correct", "hallucination", "abstention"):
        assert f'data-category="{name}"' in content
    assert content.count('class="metrics-table confusion-matrix"') == 3
    assert "Fully correct" in content and "group hallucination" in content
    kappa = report.confusion[-1].kappa
    assert f"κ {kappa:.2f}" in content
    assert "ppi++-robust-pooled" in content


def test_the_page_as_htmx_is_the_results_region(campaign, analyst, client_for):
    categorical_campaign(campaign)
    response = client_for(analyst).get(url(campaign), headers={"HX-Request": "true"})
    content = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in content and 'id="report-results"' in content and "confusion-matrix" in content


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator", "outsider"])
def test_people_who_label_and_outsiders_never_see_it(persona, campaign, client_for, request):
    categorical_campaign(campaign)
    response = client_for(request.getfixturevalue(persona)).get(url(campaign))
    assert response.status_code == (404 if persona == "outsider" else 403)


def test_csv_download_has_a_row_per_category_or_group_and_theme(campaign, analyst, client_for):
    criterion, judge, _ = categorical_campaign(campaign)
    response = client_for(analyst).get(url(campaign, view="export_csv"), {"method": "study"})
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 8 * 3
    data = categorical_report_as_json(
        report=compute_categorical_report(criterion=criterion, judge=judge, method="study")
    )
    first = data["estimates"][0]["themes"][0]
    assert (rows[0]["category"], rows[0]["category_kind"], rows[0]["category_values"], rows[0]["theme"]) == (
        "not-enough-information",
        "category",
        "1",
        "Finance",
    )
    assert float(rows[0]["ppi_mean"]) == pytest.approx(first["ppi_mean"])
    assert [row["category_values"] for row in rows if row["category"] == "hallucination"] == ["2 4"] * 3


def test_xlsx_download_has_the_estimates_and_confusion_sheets(campaign, analyst, client_for):
    categorical_campaign(campaign)
    response = client_for(analyst).get(url(campaign, view="export_xlsx"))
    assert response.status_code == 200
    book = load_workbook(io.BytesIO(response.content), read_only=True)
    assert {"Summary", "correctness", "correctness confusion", "Units"} <= set(book.sheetnames)
    summary = [row[0] for row in book["Summary"].iter_rows(min_row=4, values_only=True)]
    assert summary[:1] == ["correctness: not-enough-information"] and len(summary) == 8


def test_ares_download_is_refused_for_categories(campaign, analyst, client_for):
    categorical_campaign(campaign)
    response = client_for(analyst).get(url(campaign, view="export_ares"))
    assert response.status_code == 400
    assert b"category" in response.content


def test_report_command_json_is_the_categorical_report(campaign):
    criterion, judge, _ = categorical_campaign(campaign)
    out = io.StringIO()
    call_command(
        "report", campaign=campaign.name, criterion="correctness", format="json", method="study", stdout=out
    )
    data = json.loads(out.getvalue())
    expected = categorical_report_as_json(
        report=compute_categorical_report(criterion=criterion, judge=judge, method="study")
    )
    provenance = data.pop("estimates_source")
    assert (data.pop("judge_choice"), provenance["computed_because"]) == ("only", "categories")
    assert data == json.loads(json.dumps(expected))
    assert data["kind"] == "categorical" and [c["value"] for c in data["categories"]] == [1, 2, 3, 4, 5]


def test_report_command_table_csv_and_xlsx(campaign, tmp_path):
    categorical_campaign(campaign)
    out = io.StringIO()
    call_command("report", campaign=campaign.name, criterion="correctness", format="table", stdout=out)
    text = out.getvalue()
    assert "category fully-correct (5): Fully correct" in text and "group hallucination (2, 4)" in text
    assert "confusion overall" in text
    for fmt in ("csv", "xlsx"):
        path = tmp_path / f"report.{fmt}"
        call_command(
            "report",
            campaign=campaign.name,
            criterion="correctness",
            format=fmt,
            output=str(path),
            stdout=out,
        )
        assert path.stat().st_size > 0


def test_the_api_gives_the_report_commands_json(campaign, analyst, client):
    from tests.factories import api_token

    criterion, judge, _ = categorical_campaign(campaign)
    response = client.get(
        f"/api/v1/campaigns/{campaign.slug}/estimates/correctness",
        {"method": "study"},
        headers={"Authorization": f"Bearer {api_token(analyst)}"},
    )
    assert response.status_code == 200
    expected = categorical_report_as_json(
        report=compute_categorical_report(criterion=criterion, judge=judge, method="study")
    )
    data = response.json()
    assert data.pop("estimates_source")["source"] == "computed" and data.pop("judge_choice") == "only"
    assert data == json.loads(json.dumps(expected))


def test_comparing_campaigns_on_categories_is_refused_with_a_message(campaign, analyst, client_for):
    categorical_campaign(campaign)
    response = client_for(analyst).get(url(campaign, view="compare"))
    assert response.status_code == 400
    assert "a criterion with categories has one per category" in response.content.decode()


def test_snapshots_are_not_recorded_for_categories(campaign):
    from evaluation.estimates.snapshots import record_snapshots

    criterion, _, _ = categorical_campaign(campaign)
    assert record_snapshots(criterion=criterion, trigger="import") == []


def test_the_page_reads_the_database_a_fixed_number_of_times(campaign, analyst, client_for):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import make_answer

    criterion, judge, _ = categorical_campaign(campaign)
    client = client_for(analyst)
    client.get(url(campaign))  # sessions and caches warmed
    with CaptureQueriesContext(connection) as first:
        assert client.get(url(campaign)).status_code == 200
    for theme in ("HR", "Legal"):
        for _ in range(5):
            make_answer(campaign=campaign, theme=theme)
    client.get(url(campaign))  # computed again for the new answers, then read from the page cache
    with CaptureQueriesContext(connection) as second:
        assert client.get(url(campaign)).status_code == 200
    assert len(first) == len(second) == 10


def test_label_studio_and_argilla_exchanges_refuse_categories_naming_the_criterion(
    campaign, analyst, client_for
):
    from annotation import ingest
    from annotation.models import Criterion
    from evaluation.interchange import exporting
    from evaluation.interchange.loading import import_labels
    from evaluation.interchange.vocabulary import check_vocabulary
    from tests.evaluation.interchange.test_interchange import LABEL_STUDIO_MAPPING
    from tests.interchange_files import LABEL_STUDIO_FILE, fixture_answers

    criterion, judge, _ = categorical_campaign(campaign)
    for view in ("export_label_studio", "export_argilla"):
        response = client_for(analyst).get(url(campaign, view=view))
        assert response.status_code == 400
        assert b"criterion 'correctness' has named categories" in response.content
    with pytest.raises(exporting.ExportError, match="the Argilla export carries 0/1 labels only"):
        exporting.write_argilla(campaign=campaign, criteria=[criterion], stream=io.StringIO(), judge=judge)

    fixture_answers(campaign)
    Criterion.objects.filter(campaign=campaign, name__in=["relevance", "veracity"]).update(
        kind="categorical", categories=criterion.categories
    )
    vocabulary = check_vocabulary(mapping=LABEL_STUDIO_MAPPING, name="mapping")
    with pytest.raises(ingest.ImportFailed, match="has named categories: Label Studio and Argilla labels"):
        import_labels(path=LABEL_STUDIO_FILE, fmt="label-studio", campaign=campaign, vocabulary=vocabulary)
