"""The label history: every row kept with what it did, filters, the manager's page and the CSV export."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotation.models import Criterion, Label, Stage
from annotation.workflow import undo_last
from annotation.workflow.history import CSV_HEADER, action_of, history_csv_rows, label_history
from tests.factories import label, make_campaign, sampled

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def history(campaign, annotator, reviewer):
    """label 1, withdraw it, label 0 again, then a review; plus a veracity label by nobody."""
    criterion, units = sampled(campaign=campaign, answers=2)
    label(annotator, criterion, Stage.LABEL, 1, unit=units[0])
    undo_last(user=annotator, criterion=criterion, stage=Stage.LABEL)
    label(annotator, criterion, Stage.LABEL, 0, unit=units[0])
    label(reviewer, criterion, Stage.REVIEW, 0, unit=units[0], comment='=HYPERLINK("http://evil")')
    return criterion, units


def test_every_row_is_kept_with_what_it_did(campaign, history):
    rows = list(label_history(campaign=campaign, newest_first=False))
    assert [(r.stage, r.value, action_of(r)) for r in rows] == [
        (Stage.LABEL, 1, "label"),
        (Stage.LABEL, None, "withdrawal"),
        (Stage.LABEL, 0, "change"),
        (Stage.REVIEW, 0, "label"),
    ]
    assert rows[2].previous is None and rows[2].has_previous  # it follows the withdrawal


def test_history_filters_by_person_criterion_and_stage(campaign, history, annotator, reviewer):
    criterion, _ = history
    assert label_history(campaign=campaign, user_id=reviewer.pk).count() == 1
    assert label_history(campaign=campaign, user_id=annotator.pk, stage=Stage.LABEL).count() == 3
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    assert label_history(campaign=campaign, criterion_id=veracity.pk).count() == 0
    assert label_history(campaign=campaign, criterion_id=criterion.pk).count() == 4


def test_history_of_one_campaign_leaves_the_others_out(campaign, history):
    other = make_campaign(name="Other")
    assert label_history(campaign=other).count() == 0


def test_csv_rows_are_oldest_first_and_cannot_be_read_as_formulas(campaign, history, reviewer):
    rows = list(history_csv_rows(campaign=campaign))
    assert rows[0] == CSV_HEADER
    assert len(rows) == 5
    by_name = [dict(zip(CSV_HEADER, row, strict=True)) for row in rows[1:]]
    assert [r["action"] for r in by_name] == ["label", "withdrawal", "change", "label"]
    assert by_name[1]["value"] == ""
    review = by_name[3]
    assert review["user"] == "reviewer" and review["stage"] == "review"
    assert review["comment"] == '\'=HYPERLINK("http://evil")'
    assert review["time_utc"].endswith("+00:00")


# The pages


def test_manager_reads_the_history_page(client_for, manager, campaign, history):
    response = client_for(manager).get(reverse("annotation:history", args=[campaign.slug]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "<html" in page
    assert page.count("<tr>") - 1 == Label.objects.count()  # header row excluded
    assert "withdrawal" in page and "=HYPERLINK(&quot;http://evil&quot;)" in page


def test_history_htmx_request_returns_the_rows_fragment(client_for, manager, campaign, history, reviewer):
    url = reverse("annotation:history", args=[campaign.slug])
    response = client_for(manager).get(url, {"user": reviewer.pk}, **HTMX)
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in page and 'id="history-rows"' in page
    assert page.count("<tr>") - 1 == 1


def test_history_is_paginated(client_for, manager, campaign, annotator):
    criterion, units = sampled(campaign=campaign, answers=1)
    Label.objects.bulk_create(
        Label(unit=units[0], criterion=criterion, user=annotator, stage=Stage.LABEL, value=i % 2)
        for i in range(60)
    )
    client = client_for(manager)
    url = reverse("annotation:history", args=[campaign.slug])
    first = client.get(url).content.decode()
    assert "Page 1 of 2" in first
    second = client.get(url, {"page": 2}).content.decode()
    assert second.count("<tr>") - 1 == 10


def test_csv_download_streams_the_filtered_history(client_for, manager, campaign, history, reviewer):
    response = client_for(manager).get(
        reverse("annotation:history_csv", args=[campaign.slug]), {"user": reviewer.pk}
    )
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0] == CSV_HEADER and len(rows) == 2


def test_history_is_for_managers_only(client, client_for, annotator, analyst, outsider, campaign, history):
    for user, status in ((annotator, 403), (analyst, 403), (outsider, 404)):
        c = client_for(user)
        assert c.get(reverse("annotation:history", args=[campaign.slug])).status_code == status
        assert c.get(reverse("annotation:history_csv", args=[campaign.slug])).status_code == status
    client.logout()
    response = client.get(reverse("annotation:history", args=[campaign.slug]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_history_pages_refuse_post(client_for, manager, campaign):
    client = client_for(manager)
    assert client.post(reverse("annotation:history", args=[campaign.slug])).status_code == 405
    assert client.post(reverse("annotation:history_csv", args=[campaign.slug])).status_code == 405
