"""The report's interchange downloads: ARES results, Label Studio tasks, Argilla records and
Parquet, for managers and analysts only, offered on the report page."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.models import Unit
from evaluation.estimates.codec import report_as_json
from evaluation.estimates.report import compute_report
from tests.factories import make_answer
from tests.judged import judged_campaign

DOWNLOADS = ["export_ares", "export_label_studio", "export_argilla", "export_parquet"]


def url(campaign, name: str, criterion: str = "relevance") -> str:
    return reverse(f"evaluation:{name}", args=[campaign.slug, criterion])


@pytest.mark.parametrize("name", DOWNLOADS)
@pytest.mark.parametrize("persona", ["manager", "analyst"])
def test_managers_and_analysts_download_every_format(name, persona, campaign, client_for, request):
    judged_campaign(campaign)
    response = client_for(request.getfixturevalue(persona)).get(url(campaign, name))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith('attachment; filename="velmont-due-diligence-relevance')
    content = b"".join(response) if response.streaming else response.content
    if name == "export_parquet":
        frame = pd.read_parquet(io.BytesIO(content))
        assert len(frame) == Unit.objects.filter(campaign=campaign, level="answer").count()
    else:
        assert isinstance(json.loads(content), list)


@pytest.mark.parametrize("name", DOWNLOADS)
@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator", "outsider"])
def test_people_who_label_get_403_and_outsiders_404(name, persona, campaign, client_for, request):
    judged_campaign(campaign)
    response = client_for(request.getfixturevalue(persona)).get(url(campaign, name))
    assert response.status_code == (404 if persona == "outsider" else 403)


@pytest.mark.parametrize("name", DOWNLOADS)
def test_anonymous_is_sent_to_login_and_post_is_refused(name, campaign, client, analyst, client_for):
    assert client.get(url(campaign, name)).status_code == 302
    judged_campaign(campaign)
    assert client_for(analyst).post(url(campaign, name)).status_code == 405


def test_a_bad_parameter_is_a_400_naming_it(campaign, analyst, client_for):
    judged_campaign(campaign)
    response = client_for(analyst).get(url(campaign, "export_ares"), {"alpha": "2"})
    assert response.status_code == 400 and "alpha" in response.content.decode()


def test_ares_download_has_the_report_pages_numbers(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    results = json.loads(client_for(analyst).get(url(campaign, "export_ares")).content)
    expected = report_as_json(report=compute_report(criterion=criterion, judge=judge, alpha=0.05))
    assert results[-1]["ARES_Prediction"] == pytest.approx(expected["overall"]["ppi_mean"])
    assert results[-1]["ARES_Confidence_Interval"] == pytest.approx(expected["overall"]["ppi_ci"])


def test_label_studio_download_holds_the_labels_and_the_reports_judge(campaign, analyst, client_for):
    judged_campaign(campaign, second_judge=True)
    tasks = json.loads(
        client_for(analyst).get(url(campaign, "export_label_studio"), {"judge": "lexical"}).content
    )
    assert sum(len(task["annotations"]) for task in tasks) == 14 + 12 + 16
    assert {p["model_version"] for task in tasks for p in task["predictions"]} == {"lexical"}


def test_the_report_page_offers_the_downloads(campaign, analyst, client_for):
    judged_campaign(campaign)
    content = client_for(analyst).get(reverse("evaluation:report", args=[campaign.slug, "relevance"])).content
    for name in DOWNLOADS:
        assert url(campaign, name).encode() in content


def test_queries_do_not_grow_with_the_units(campaign, analyst, client_for):
    judged_campaign(campaign)
    client = client_for(analyst)
    counts = []
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url(campaign, "export_argilla")).status_code == 200
        counts.append(len(queries))
        for _ in range(10):
            make_answer(campaign=campaign)
    assert counts[0] == counts[1]


def test_a_workbook_past_the_whole_size_is_sent_as_it_is_written_with_the_same_cells(
    campaign, analyst, client_for, monkeypatch
):
    from openpyxl import load_workbook

    from evaluation.views import downloads

    judged_campaign(campaign)
    client = client_for(analyst)
    small = client.get(url(campaign, "export_xlsx"))
    assert not small.streaming
    assert int(small["Content-Length"]) == len(small.content)
    monkeypatch.setattr(downloads, "WHOLE_BYTES", 1024)  # past it, the file goes as it is written
    large = client.get(url(campaign, "export_xlsx"))
    assert large.streaming and large["Content-Type"] == downloads.XLSX
    assert large["Content-Disposition"] == small["Content-Disposition"]

    def cells(content: bytes) -> dict:
        book = load_workbook(io.BytesIO(content))
        # The Summary says when the workbook was written and its numbers computed: its figures
        # (the columns before the texts and the provenance) are compared.
        return {
            ws.title: [
                [c.value for c in row][: 17 if ws.title == "Summary" else None]
                for row in ws.iter_rows()
                if row[0].value != "Generated"
            ]
            for ws in book.worksheets
        }

    assert cells(b"".join(large.streaming_content)) == cells(small.content)
