"""History of the estimates, on-demand recomputation, two campaigns compared, report downloads."""

from __future__ import annotations

import csv
import io
import re

import openpyxl
import pytest
from django.urls import reverse
from django.utils.html import escape

from annotation.access import ESTIMATE_REFRESHERS
from annotation.models import Role
from evaluation.estimates import snapshots
from evaluation.estimates.report import compute_report
from evaluation.measures import comparison
from evaluation.models import EstimateSchedule, ReportSnapshot
from tests.factories import add_member, make_campaign
from tests.judged import HOSTILE, judged_campaign, pct


def page(name: str, campaign, criterion: str = "relevance") -> str:
    return reverse(f"evaluation:{name}", args=[campaign.slug, criterion])


FORMULA = '=HYPERLINK("http://evil","x")'
GET_PAGES = ["history", "compare", "export_xlsx", "export_csv"]


@pytest.mark.parametrize("name", GET_PAGES)
@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator"])
def test_people_who_label_get_403(name, persona, campaign, client_for, request):
    judged_campaign(campaign)
    response = client_for(request.getfixturevalue(persona)).get(page(name, campaign))
    assert response.status_code == 403


@pytest.mark.parametrize("name", [*GET_PAGES, "refresh_estimates"])
def test_outsiders_get_404(name, campaign, outsider, client_for):
    judged_campaign(campaign)
    client = client_for(outsider)
    send = client.post if name == "refresh_estimates" else client.get
    response = send(page(name, campaign))
    assert response.status_code == 404
    assert not EstimateSchedule.objects.exists()


@pytest.mark.parametrize("name", [*GET_PAGES, "refresh_estimates"])
def test_anonymous_is_sent_to_login(name, campaign, client):
    response = client.get(page(name, campaign))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", GET_PAGES)
def test_post_is_refused_on_read_only_pages(name, campaign, analyst, client_for):
    assert client_for(analyst).post(page(name, campaign)).status_code == 405


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator"])
def test_refresh_needs_post_and_a_refresher_role(campaign, analyst, persona, client_for, request):
    judged_campaign(campaign)
    assert client_for(analyst).get(page("refresh_estimates", campaign)).status_code == 405
    refused = client_for(request.getfixturevalue(persona)).post(page("refresh_estimates", campaign))
    assert refused.status_code == 403
    assert not EstimateSchedule.objects.exists()


@pytest.mark.parametrize("persona", sorted(ESTIMATE_REFRESHERS))
def test_the_roles_of_the_rule_may_refresh_and_see_the_button(campaign, persona, client_for, request):
    judged_campaign(campaign)
    client = client_for(request.getfixturevalue(persona))
    assert "Recompute now" in client.get(page("history", campaign)).content.decode()
    assert client.post(page("refresh_estimates", campaign)).status_code == 302
    assert EstimateSchedule.objects.exists()


def test_history_lists_snapshots_newest_first_with_their_numbers(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    report = compute_report(criterion=criterion, judge=judge, method="robust")
    response = client_for(analyst).get(page("history", campaign))
    content = response.content.decode()
    assert response.status_code == 200
    assert "<svg" in content and "Import" in content
    rows = re.findall(r'<tr class="snapshot-row" data-snapshot="\d+">(.*?)</tr>', content, re.S)
    assert len(rows) == 1
    finance = next(g for g in report.themes if g.theme == "Finance")
    assert f"{pct(finance.ppi.mean)} [{pct(finance.ppi.lo)}, {pct(finance.ppi.hi)}]" in rows[0]
    assert f">{report.overall.n_human}<" in rows[0]
    # Theme names from the data are escaped in the table and in the chart.
    assert HOSTILE not in content and escape(HOSTILE) in content


def test_history_with_a_bad_parameter_is_400_naming_it(campaign, analyst, client_for):
    judged_campaign(campaign)
    response = client_for(analyst).get(page("history", campaign), {"method": "magic"})
    assert response.status_code == 400
    assert "method: &#x27;magic&#x27; is not one of robust, study" in response.content.decode()


def test_history_without_snapshots_says_so(campaign, manager, client_for):
    judged_campaign(campaign)
    content = client_for(manager).get(page("history", campaign)).content.decode()
    assert "No snapshot yet" in content


def test_recompute_now_stores_a_snapshot_and_comes_back_to_the_history(
    campaign, analyst, client_for, django_capture_on_commit_callbacks
):
    criterion, _, _ = judged_campaign(campaign)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(analyst).post(page("refresh_estimates", campaign), {"method": "study"})
    assert response.status_code == 302
    assert response["Location"] == page("history", campaign) + "?method=study"
    kept = ReportSnapshot.objects.filter(criterion=criterion)
    assert {(s.method, s.trigger) for s in kept} == {("robust", "manual"), ("study", "manual")}


def test_compare_shows_both_campaigns_and_the_difference(campaign, analyst, client_for):
    other = make_campaign(name="Velmont v2")
    add_member(campaign=other, user=analyst, roles=[Role.ANALYST])
    criterion_a, judge_a, _ = judged_campaign(campaign)
    criterion_b, judge_b, _ = judged_campaign(other)
    response = client_for(analyst).get(page("compare", campaign), {"other": other.slug, "method": "study"})
    content = response.content.decode()
    assert response.status_code == 200, content
    left = compute_report(criterion=criterion_a, judge=judge_a, method="study")
    right = compute_report(criterion=criterion_b, judge=judge_b, method="study")
    rows = comparison.compare_reports(left=left, right=right)
    for row in rows:
        match = re.search(
            rf'<tr class="compare-row[^"]*" data-theme="{re.escape(escape(row.theme))}">(.*?)</tr>',
            content,
            re.S,
        )
        assert match, row.theme
        assert pct(row.left.ppi.mean) in match.group(1) and pct(row.right.ppi.mean) in match.group(1)
        assert f"{row.difference.mean * 100:+.1f} pts" in match.group(1)
    assert "<svg" in content


def test_compare_with_a_campaign_i_do_not_analyse_is_400_as_with_one_that_does_not_exist(
    campaign, analyst, client_for
):
    other = make_campaign(name="Someone else's")
    judged_campaign(campaign)
    client = client_for(analyst)
    mine = client.get(page("compare", campaign), {"other": other.slug})
    missing = client.get(page("compare", campaign), {"other": "no-such-campaign"})
    assert mine.status_code == missing.status_code == 400
    assert mine.context["errors"] == [f"other: {other.slug!r} is not a campaign you manage or analyse"]
    assert missing.context["errors"] == ["other: 'no-such-campaign' is not a campaign you manage or analyse"]


def test_compare_with_a_campaign_without_the_criterion_is_400_naming_it(campaign, analyst, client_for):
    other = make_campaign(name="Empty v2")
    add_member(campaign=other, user=analyst, roles=[Role.ANALYST])
    judged_campaign(campaign)
    response = client_for(analyst).get(page("compare", campaign), {"other": other.slug})
    assert response.status_code == 400
    assert "other: no judge has labeled &#x27;relevance&#x27; successfully yet" in response.content.decode()


def test_compare_without_another_campaign_shows_the_form(campaign, analyst, client_for):
    judged_campaign(campaign)
    response = client_for(analyst).get(page("compare", campaign))
    assert response.status_code == 200
    assert "no other campaign you analyse" in response.content.decode()


def test_xlsx_download_has_the_report_sheets_and_the_same_numbers(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    response = client_for(analyst).get(page("export_xlsx", campaign), {"method": "study"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.openxmlformats")
    assert 'filename="velmont-due-diligence-relevance-imported-study.xlsx"' in response["Content-Disposition"]
    workbook = openpyxl.load_workbook(io.BytesIO(response.content))
    assert {"Summary", "Automatic metrics", "Units", "Label history"} <= set(workbook.sheetnames)
    report = compute_report(criterion=criterion, judge=judge, method="study")
    values = [cell for row in workbook["relevance"].iter_rows(values_only=True) for cell in row]
    assert pytest.approx(report.overall.ppi.mean) in values


def test_csv_download_has_one_row_per_theme_and_overall(campaign, manager, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    response = client_for(manager).get(page("export_csv", campaign))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    report = compute_report(criterion=criterion, judge=judge)
    assert len(rows) == len(report.themes) + 1
    assert all(row["judge"] == "imported" for row in rows)


def test_csv_download_neutralises_formulas_in_text_cells(campaign, manager, client_for):
    judged_campaign(campaign)
    # A theme is whatever the import file said.
    campaign.questions.filter(theme="IT").update(theme=FORMULA)
    campaign.units.filter(theme="IT").update(theme=FORMULA)
    response = client_for(manager).get(page("export_csv", campaign))
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert "'" + FORMULA in [row["theme"] for row in rows]
    assert FORMULA not in [row["theme"] for row in rows]


def test_download_with_a_bad_parameter_is_400_naming_it(campaign, analyst, client_for):
    judged_campaign(campaign)
    response = client_for(analyst).get(page("export_csv", campaign), {"alpha": "3"})
    assert response.status_code == 400
    assert "alpha" in response.content.decode()


def test_report_page_links_to_history_comparison_and_downloads(campaign, analyst, client_for):
    judged_campaign(campaign)
    content = client_for(analyst).get(page("report", campaign)).content.decode()
    for name in ("history", "compare", "export_xlsx", "export_csv"):
        assert page(name, campaign) in content
    # The automatic metrics load into the report when revealed.
    assert f'hx-get="{reverse("evaluation:campaign_overview", args=[campaign.slug])}"' in content


NUMBER_INPUT = re.compile(r"<input[^>]*type=\"number\"[^>]*>")


def _attribute(tag: str, name: str) -> str | None:
    found = re.search(rf'\b{name}="([^"]*)"', tag)
    return found.group(1) if found else None


@pytest.mark.parametrize("language", ["en", "fr"])
@pytest.mark.parametrize("name", ["report", "history", "compare"])
def test_every_number_input_holds_a_value_the_browser_accepts_as_it_is(
    name, language, campaign, analyst, client_for
):
    """A browser refuses to send a form whose number input is off its step or written with a
    decimal comma: the default values must be valid as they stand, in French too."""
    judged_campaign(campaign)
    report = reverse("evaluation:report", args=[campaign.slug, "relevance"])
    url = report if name == "report" else page(name, campaign)
    content = client_for(analyst).get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    inputs = NUMBER_INPUT.findall(content)
    assert inputs, "the page has number inputs"
    for tag in inputs:
        value = float(_attribute(tag, "value"))  # "0,05" would raise here
        low, high, step = (_attribute(tag, key) for key in ("min", "max", "step"))
        assert float(low) <= value <= float(high), tag
        if step not in (None, "any"):
            steps = (value - float(low)) / float(step)
            assert abs(steps - round(steps)) < 1e-9, tag


def test_recompute_now_in_french_comes_back_to_a_history_without_error(
    campaign, analyst, client_for, django_capture_on_commit_callbacks
):
    judged_campaign(campaign)
    client = client_for(analyst)
    history = client.get(page("history", campaign), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    hidden = re.search(r'<input type="hidden" name="alpha" value="([^"]*)">', history).group(1)
    assert hidden == "0.05"
    with django_capture_on_commit_callbacks(execute=True):
        posted = {"method": "robust", "alpha": hidden}
        response = client.post(page("refresh_estimates", campaign), posted, HTTP_ACCEPT_LANGUAGE="fr")
    followed = client.get(response["Location"], HTTP_ACCEPT_LANGUAGE="fr")
    assert followed.status_code == 200
    assert "is not a number" not in followed.content.decode()


def test_links_carry_alpha_as_a_number_in_french_too(campaign, analyst, client_for):
    judged_campaign(campaign)
    url = reverse("evaluation:report", args=[campaign.slug, "relevance"])
    content = client_for(analyst).get(url, HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "alpha=0.05" in content and "alpha=0,05" not in content


def test_an_old_snapshot_with_bounds_outside_0_1_is_shown_and_downloaded_clipped(
    campaign, analyst, client_for
):
    criterion, _, _ = judged_campaign(campaign)
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    # A snapshot stored before bounds were kept in [0, 1]: ppi_py's raw bounds in ppi_ci.
    stored = ReportSnapshot.objects.filter(method="robust").latest("created_at")
    data = stored.data
    theme = data["themes"][0]
    theme["ppi_mean"], theme["ppi_ci"] = 0.97, [0.91, 1.03]
    theme.pop("ppi_ci_raw", None)
    theme.pop("ppi_se", None)
    # Snapshots are never rewritten (a trigger on PostgreSQL): the old one stored in its place.
    original, stored.pk, stored.data = stored.pk, None, data
    stored.save()
    ReportSnapshot.objects.filter(pk=original).delete()
    client = client_for(analyst)
    mark = escape("(bound clipped to [0, 1])")
    history = client.get(page("history", campaign)).content.decode()
    assert f"97.0% [91.0%, 100.0%] {mark}" in history and "103.0%" not in history
    report = client.get(page("report", campaign)).content.decode()
    assert f"[91.0%, 100.0%] {mark}" in report and "103.0%" not in report
    rows = list(csv.DictReader(io.StringIO(client.get(page("export_csv", campaign)).content.decode())))
    row = next(row for row in rows if row["theme"] == theme["theme"])
    assert (float(row["ppi_lo"]), float(row["ppi_hi"])) == (0.91, 1.0) and row["clipped"] == "ppi"
