"""The estimates report page: access by role, parameters, numbers equal to compute_report's."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape
from openpyxl import load_workbook

from annotation.corpus.campaigns import content_changed
from annotation.models import Label, Level, Unit
from evaluation.estimates import planning, snapshots
from evaluation.estimates.codec import report_as_json
from evaluation.estimates.report import compute_report
from evaluation.models import Judge, Judgment, ReportSnapshot
from evaluation.templatetags.report_extras import method_name
from inference.estimators.shrinkage import shrink_to_judge
from inference.intervals import standard_error
from tests.categorical import categorical_campaign
from tests.factories import api_token, make_answer_units, make_judge
from tests.judged import HOSTILE, judged_campaign, pct, row_html


def url(campaign, criterion: str = "relevance") -> str:
    return reverse("evaluation:report", args=[campaign.slug, criterion])


@pytest.mark.parametrize("persona", ["analyst", "manager"])
def test_manager_and_analyst_see_chart_table_planner_and_metrics_link(persona, campaign, client_for, request):
    judged_campaign(campaign)
    user = request.getfixturevalue(persona)
    response = client_for(user).get(url(campaign))
    content = response.content.decode()
    assert response.status_code == 200
    assert "<svg" in content and "Estimates and agreement per theme" in content
    assert "Per-theme intervals are wide" in content
    assert "Budget planner" in content and "What a better judge would buy" in content
    assert reverse("evaluation:campaign_overview", args=[campaign.slug]) + "#automatic-metrics" in content
    assert "ppi++-robust-crossfit" in content and "alpha = 0.05" in content
    assert url(campaign, "veracity") in content  # the other criterion's report
    # One judge only: no comparison.
    assert "Judges compared" not in content


@pytest.mark.parametrize("persona", ["annotator", "reviewer", "adjudicator", "outsider"])
def test_people_who_label_get_403_outsiders_404_and_never_see_judge_labels(
    persona, campaign, client_for, request
):
    judged_campaign(campaign)
    user = request.getfixturevalue(persona)
    response = client_for(user).get(url(campaign))
    assert response.status_code == (404 if persona == "outsider" else 403)
    assert b"imported" not in response.content


def test_anonymous_is_sent_to_login(campaign, client):
    response = client.get(url(campaign))
    assert response.status_code == 302
    assert reverse("login") in response["Location"]


def test_post_is_refused_with_405(campaign, analyst, client_for):
    judged_campaign(campaign)
    assert client_for(analyst).post(url(campaign)).status_code == 405


def test_unknown_criterion_is_404(campaign, analyst, client_for):
    judged_campaign(campaign)
    assert client_for(analyst).get(url(campaign, "no-such-criterion")).status_code == 404


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"alpha": "abc"}, "alpha:"),
        ({"alpha": "1.5"}, "alpha:"),
        ({"alpha": "0"}, "alpha:"),
        ({"method": "bayes"}, "method:"),
        ({"target": "-1"}, "target:"),
        ({"judge": "nobody"}, "judge:"),
    ],
)
def test_bad_parameter_is_400_with_a_message_naming_the_field(params, field, campaign, analyst, client_for):
    judged_campaign(campaign)
    response = client_for(analyst).get(url(campaign), params)
    assert response.status_code == 400
    assert field in response.content.decode()
    assert "Estimates and agreement per theme" not in response.content.decode()


@pytest.mark.parametrize("method", ["robust", "study"])
def test_numbers_shown_equal_compute_report(method, campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    response = client_for(analyst).get(url(campaign), {"method": method, "alpha": "0.1"})
    content = response.content.decode()
    assert response.status_code == 200
    data = report_as_json(report=compute_report(criterion=criterion, judge=judge, alpha=0.1, method=method))
    assert "alpha = 0.1 (90% intervals)" in content
    for group in [*data["themes"], data["overall"]]:
        row = row_html(content, css="(?:total )?estimate-row", attribute="theme", value=group["theme"])
        for key in ("human", "judge", "ppi"):
            lo, hi = group[f"{key}_ci"]
            assert pct(group[f"{key}_mean"]) in row
            assert f"[{pct(lo)}, {pct(hi)}]" in row
        assert f"±{(group['ppi_ci'][1] - group['ppi_ci'][0]) / 2 * 100:.1f} pts" in row
        assert f">{group['n_human']}<" in row and f">{group['n_judge']}<" in row
        assert pct(group["observed_agreement"]) in row and pct(group["chance_agreement"]) in row
        assert f"{group['kappa']:.2f}" in row and f"{group['effective_n']:.0f}" in row
        assert method_name(group["ppi_method"]) in row
        if group["theme"] != "overall":
            assert f"{group['lambda']:.2f}" in row


def test_planner_shows_labels_needed_per_theme(campaign, manager, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    response = client_for(manager).get(url(campaign), {"target": "0.1"})
    content = response.content.decode()
    assert "±10 points" in content
    report = compute_report(criterion=criterion, judge=judge, method="robust")
    for group in report.themes:
        units = Unit.objects.filter(campaign=campaign, level=Level.ANSWER, theme=group.theme)
        labeled = {label.unit_id: label.value for label in Label.objects.filter(unit__in=units)}
        verdicts = dict(Judgment.objects.filter(unit__in=units, judge=judge).values_list("unit_id", "value"))
        y = [labeled[u] for u in sorted(labeled)]
        yhat = [verdicts[u] for u in sorted(labeled)]
        rest = [v for u, v in verdicts.items() if u not in labeled]
        # The robust page anchors the projection on the PPI++ interval it shows.
        needed = planning.labels_needed(
            y=y,
            yhat=yhat,
            yhat_unlabeled=rest,
            target_halfwidth=0.1,
            alpha=0.05,
            current_halfwidth=group.ppi.halfwidth,
        )
        assert (needed >= 1) == (group.ppi.halfwidth > 0.1)
        row = row_html(content, css="plan-row", attribute="theme", value=group.theme)
        assert re.search(rf'<td class="num lead"[^>]*>{needed}( <span|</td>)', row), (
            group.theme,
            needed,
            row,
        )


def test_theme_names_are_escaped_everywhere(campaign, analyst, client_for):
    judged_campaign(campaign)
    content = client_for(analyst).get(url(campaign)).content.decode()
    assert HOSTILE not in content
    assert "<script>alert" not in content
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; RH" in content


def test_two_judges_get_a_comparison_table_ranked_by_agreement(campaign, analyst, client_for):
    criterion, imported, lexical = judged_campaign(campaign, second_judge=True)
    response = client_for(analyst).get(url(campaign))
    content = response.content.decode()
    assert response.status_code == 200
    assert "Judges compared" in content
    # The single non-imported judge is the default.
    assert '<option value="lexical" selected>' in content
    rows = re.findall(r'<tr class="judge-row[^"]*" data-judge="([^"]+)">', content)
    assert rows == ["imported", "lexical"]  # the imported judge is wrong less often
    for judge in (imported, lexical):
        overall = compute_report(criterion=criterion, judge=judge).overall
        row = row_html(content, css="judge-row", attribute="judge", value=judge.name)
        assert pct(overall.agreement.observed) in row
        assert f"{overall.agreement.kappa:.2f}" in row
        assert f"±{overall.ppi.halfwidth * 100:.1f} pts" in row


def test_judge_parameter_picks_the_judge(campaign, analyst, client_for):
    judged_campaign(campaign, second_judge=True)
    content = client_for(analyst).get(url(campaign), {"judge": "imported"}).content.decode()
    assert "Judge <strong>imported</strong>" in content


def test_htmx_request_gets_the_results_fragment_only(campaign, analyst, client_for):
    judged_campaign(campaign)
    response = client_for(analyst).get(url(campaign), {"method": "study"}, HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in content
    assert 'id="report-results"' in content and "ppi++" in content


def test_with_two_judges_run_in_the_app_the_page_asks_which(campaign, analyst, client_for):
    judged_campaign(campaign, second_judge=True)
    make_judge(campaign=campaign, name="gpt")
    client = client_for(analyst)
    response = client.get(url(campaign))
    assert response.status_code == 200
    content = response.content.decode()
    assert "Several judges have labeled this criterion (gpt, imported, lexical)" in content
    assert '<option value="" selected>choose a judge</option>' in content
    assert "Judge <strong>" not in content
    # The same rule everywhere: the downloads refuse to guess too, naming the judges.
    csv_response = client.get(reverse("evaluation:export_csv", args=[campaign.slug, "relevance"]))
    assert csv_response.status_code == 400
    assert csv_response.content.decode() == (
        "several judges have labeled 'relevance': choose one (gpt, imported, lexical), or make one its "
        "primary judge"
    )
    chosen = client.get(url(campaign), {"judge": "lexical"}).content.decode()
    assert "Judge <strong>lexical</strong>" in chosen and "choose a judge" not in chosen


def test_campaign_without_judge_says_so(campaign, analyst, client_for):
    response = client_for(analyst).get(url(campaign))
    assert response.status_code == 200
    assert "No judge has labeled this criterion successfully yet" in response.content.decode()


def test_a_judge_run_whose_every_call_failed_leaves_the_report_to_the_judge_that_labeled(
    campaign, analyst, client_for
):
    """A run started without an API key: every judgment failed. That judge is no candidate, so
    the report, its downloads and the stability page read the judge that labeled, without asking."""
    criterion, imported, lexical = judged_campaign(campaign, second_judge=True)
    failed = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.OPENAI)
    for unit in Unit.objects.filter(campaign=campaign, level=Level.ANSWER):
        Judgment.objects.create(
            unit=unit, criterion=criterion, judge=failed, status=Judgment.Status.FAILED, error="no API key"
        )
    client = client_for(analyst)
    page = client.get(url(campaign))
    assert page.status_code == 200
    content = page.content.decode()
    assert "Judge <strong>lexical</strong>" in content and '<option value="gpt"' not in content
    assert client.get(reverse("evaluation:export_csv", args=[campaign.slug, "relevance"])).status_code == 200
    stability = client.get(
        reverse("evaluation:stability", args=[campaign.slug]), {"measure": "criterion:relevance"}
    )
    assert stability.status_code == 200 and "lexical" in stability.content.decode()


def test_a_manager_makes_the_judge_shown_the_primary_judge(campaign, manager, analyst, client_for):
    criterion, imported, lexical = judged_campaign(campaign, second_judge=True)
    make_judge(campaign=campaign, name="gpt")
    chooser = reverse("evaluation:primary_judge", args=[campaign.slug, "relevance"])
    shown = client_for(manager).get(url(campaign), {"judge": "imported"}).content.decode()
    assert f'action="{chooser}"' in shown and "Make imported the primary judge" in shown
    assert client_for(analyst).post(chooser, {"judge": "imported"}).status_code == 403
    assert (
        'action="' + chooser
        not in client_for(analyst).get(url(campaign), {"judge": "imported"}).content.decode()
    )
    response = client_for(manager).post(chooser, {"judge": "imported"})
    assert response.status_code == 302 and response["Location"] == url(campaign)
    default = client_for(analyst).get(url(campaign)).content.decode()
    assert "Judge <strong>imported</strong>" in default
    assert "Primary judge of this criterion: <strong>imported</strong>" in default
    refused = client_for(manager).post(chooser, {"judge": "nobody"}, follow=True)
    assert (
        "&#x27;nobody&#x27; has no successful judgment of &#x27;relevance&#x27;" in refused.content.decode()
    )
    assert criterion.primary_judge.judge == imported


def test_htmx_request_with_a_bad_parameter_gets_the_message_in_the_fragment(campaign, analyst, client_for):
    judged_campaign(campaign)
    response = client_for(analyst).get(url(campaign), {"alpha": "2"}, HTTP_HX_REQUEST="true")
    content = response.content.decode()
    # htmx swaps only 2xx responses, so the message must come with 200 to be seen.
    assert response.status_code == 200
    assert "<html" not in content and "alpha: must be strictly between 0 and 1" in content


@pytest.mark.parametrize("method", ["robust", "study"])
def test_no_bound_outside_0_100_is_shown_and_a_clipped_one_is_flagged(method, campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    response = client_for(analyst).get(url(campaign), {"method": method, "alpha": "0.01"})
    content = response.content.decode()
    assert response.status_code == 200
    bounds = [float(b) for b in re.findall(r"\[(-?[\d.]+)%, -?[\d.]+%\]", content)]
    bounds += [float(b) for b in re.findall(r"\[-?[\d.]+%, (-?[\d.]+)%\]", content)]
    assert bounds and all(0 <= b <= 100 for b in bounds)
    report = compute_report(criterion=criterion, judge=judge, alpha=0.01, method=method)
    clipped = any(
        getattr(group, name).clipped
        for group in [*report.themes, report.overall]
        for name in ("human", "judge", "ppi")
    )
    assert clipped == (method == "study")
    assert ("(bound clipped to [0, 1])" in content) == clipped


# Small themes: the shrinkage toward the judge, an option


def shrunk_expected(report):
    return shrink_to_judge(
        estimates=[g.ppi.mean for g in report.themes],
        standard_errors=[standard_error(g.ppi) for g in report.themes],
        judge_means=[g.judge.mean for g in report.themes],
        alpha=report.alpha,
    )


def test_shrinkage_is_off_by_default_and_the_page_is_unchanged(campaign, analyst, client_for):
    judged_campaign(campaign)
    client = client_for(analyst)
    content = client.get(url(campaign)).content.decode()
    assert 'name="shrinkage"' in content and 'id="shrinkage"' in content
    assert re.search(r'<input type="checkbox" name="shrinkage"[^>]*>', content).group(0).find("checked") == -1
    assert "Shrunk toward the judge" not in content and "shrinkage-note" not in content
    # Asked for and not: the same page but for the option's columns and note.
    off = client.get(url(campaign), {"shrinkage": ""}).content.decode()
    assert "Shrunk toward the judge" not in off


@pytest.mark.parametrize("method", ["robust", "study"])
def test_shrinkage_adds_the_shrunk_estimate_beside_ppi_equal_to_shrink_to_judge(
    method, campaign, analyst, client_for
):
    criterion, judge, _ = judged_campaign(campaign)
    report = compute_report(criterion=criterion, judge=judge, method=method)
    expected = shrunk_expected(report)
    response = client_for(analyst).get(url(campaign), {"method": method, "shrinkage": "on"})
    content = response.content.decode()
    assert response.status_code == 200
    assert re.search(r'<input type="checkbox" name="shrinkage"[^>]*checked', content)
    assert "Shrunk toward the judge" in content and "Own weight" in content
    for group, shrunk in zip(report.themes, expected, strict=True):
        row = row_html(content, css="estimate-row", attribute="theme", value=group.theme)
        # PPI++ is still there, and the shrunk estimate beside it.
        assert pct(group.ppi.mean) in row
        assert f"<strong>{pct(shrunk.mean)}</strong>" in row
        assert f"[{pct(shrunk.lo)}, {pct(shrunk.hi)}]" in row
        assert f">{shrunk.weight:.2f}<" in row
    note = re.search(r'id="shrinkage-note".*?</div>', content, re.S).group(0)
    assert "95% on average over the themes, not for each theme" in note
    assert "may be covered much less often" in note
    assert "91.5% to 100.0% of the themes covered on average, 86.6% in the worst single theme" in note
    assert "agreeing with the humans on 70.0% of units; at 85.0% or more, at least 99.0% on average" in note
    assert "shrinkage-weak-judge" not in content  # the judge agrees 85.7% overall
    assert f"±{(expected[0].tau2 ** 0.5) * 100:.1f} pts" in note


def test_shrinkage_with_a_judge_agreeing_less_than_the_benchs_says_so(campaign, analyst, client_for):
    judged_campaign(campaign, second_judge=True)  # the lexical judge is wrong one time in three
    content = client_for(analyst).get(url(campaign), {"judge": "lexical", "shrinkage": "on"}).content.decode()
    warning = re.search(r'class="shrinkage-weak-judge">(.*?)</p>', content, re.S).group(1)
    assert "Here the judge agrees with the humans on" in warning and "below 85.0%" in warning
    assert "Rely on the PPI++ columns." in warning


def test_shrinkage_as_htmx_is_in_the_results_fragment(campaign, analyst, client_for):
    judged_campaign(campaign)
    response = client_for(analyst).get(url(campaign), {"shrinkage": "on"}, HTTP_HX_REQUEST="true")
    content = response.content.decode()
    assert response.status_code == 200 and "<html" not in content
    assert "Shrunk toward the judge" in content and 'id="shrinkage-note"' in content


def test_shrinkage_with_fewer_than_two_themes_is_refused_naming_the_field(campaign, analyst, client_for):
    criterion, _, _ = judged_campaign(campaign)
    # One theme only (labels are append-only on PostgreSQL: the units join Finance instead).
    Unit.objects.filter(campaign=criterion.campaign).update(theme="Finance")
    client = client_for(analyst)
    response = client.get(url(campaign), {"shrinkage": "on"})
    assert response.status_code == 400
    content = response.content.decode()
    assert "shrinkage: needs at least 2 themes with a PPI++ estimate and a positive standard error" in content
    assert "this report has 1" in content
    fragment = client.get(url(campaign), {"shrinkage": "on"}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and "shrinkage: needs at least 2 themes" in fragment.content.decode()
    # Without the option the same report is shown.
    assert client.get(url(campaign)).status_code == 200


def test_the_report_of_a_criterion_with_categories_links_its_pdf_and_workbook(campaign, analyst, client_for):
    criterion, _, _ = categorical_campaign(campaign)
    content = client_for(analyst).get(url(campaign, criterion.name)).content.decode()
    pdf = reverse("evaluation:export_pdf", args=[campaign.slug, criterion.name])
    xlsx = reverse("evaluation:export_xlsx", args=[campaign.slug, criterion.name])
    assert f'href="{pdf}?' in content and f'href="{xlsx}?' in content


def test_shrinkage_on_a_criterion_with_categories_says_why_not(campaign, analyst, client_for):
    criterion, _, _ = categorical_campaign(campaign)
    response = client_for(analyst).get(url(campaign, criterion.name), {"shrinkage": "on"})
    assert response.status_code == 400
    content = response.content.decode()
    assert "shrinkage: not offered for a criterion with categories" in content
    assert "would no longer sum to one" in content


def test_shrinkage_reads_no_more_queries_than_the_report(
    campaign, analyst, client_for, django_assert_num_queries
):
    """From a snapshot: the 13 queries of the report (session, user, campaign, membership,
    criterion, judges, criteria, snapshot, then what changed since), with the option or not;
    computed now: the computation's queries, the same with the option."""
    criterion, _, _ = judged_campaign(campaign)
    client = client_for(analyst)
    client.get(url(campaign))  # computed once, then read from the page cache
    with CaptureQueriesContext(connection) as computed_off:
        client.get(url(campaign))
    with django_assert_num_queries(len(computed_off)):
        assert client.get(url(campaign), {"shrinkage": "on"}).status_code == 200
    snapshots.record_snapshots(criterion=criterion, trigger=ReportSnapshot.Trigger.IMPORT)
    with django_assert_num_queries(13):
        assert client.get(url(campaign)).status_code == 200
    with django_assert_num_queries(13):
        content = client.get(url(campaign), {"shrinkage": "on"}).content.decode()
    assert 'data-source="snapshot"' in content and "Shrunk toward the judge" in content


def test_the_downloads_carry_the_shrinkage_the_page_asked_for(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    client = client_for(analyst)
    content = client.get(url(campaign), {"shrinkage": "on"}).content.decode()
    csv_url = reverse("evaluation:export_csv", args=[campaign.slug, "relevance"])
    assert f"{csv_url}?shrinkage=on" in content
    expected = shrunk_expected(compute_report(criterion=criterion, judge=judge))
    rows = list(csv.DictReader(io.StringIO(client.get(csv_url, {"shrinkage": "on"}).content.decode())))
    assert [float(row["ppi_shrunk_mean"]) for row in rows[:-1]] == pytest.approx([s.mean for s in expected])
    assert "ppi_shrunk_mean" not in client.get(csv_url).content.decode()
    xlsx = client.get(
        reverse("evaluation:export_xlsx", args=[campaign.slug, "relevance"]), {"shrinkage": "on"}
    )
    sheet = load_workbook(io.BytesIO(xlsx.content))["relevance"]
    assert "ppi_shrunk_weight" in [cell.value for cell in sheet[1]]
    # Refused where the page refuses it, naming the field.
    Unit.objects.filter(campaign=criterion.campaign).update(theme="Finance")  # one theme only
    content_changed(campaign_id=criterion.campaign_id)  # units edited in SQL: said by hand
    refused = client.get(csv_url, {"shrinkage": "on"})
    assert refused.status_code == 400 and refused.content.decode().startswith("shrinkage: needs at least 2")


def test_the_api_adds_the_shrinkage_when_asked(campaign, analyst, client):
    criterion, judge, _ = judged_campaign(campaign)
    api = f"/api/v1/campaigns/{campaign.slug}/estimates/relevance"
    auth = {"Authorization": f"Bearer {api_token(analyst)}"}
    plain = client.get(api, headers=auth).json()
    assert "shrinkage" not in plain
    data = client.get(api, {"shrinkage": "true"}, headers=auth).json()
    expected = shrunk_expected(compute_report(criterion=criterion, judge=judge))
    assert [t["ppi_shrunk_mean"] for t in data["themes"]] == pytest.approx([s.mean for s in expected])
    assert data["shrinkage"]["guarantee"] == "on average over the themes, not for each theme"
    Unit.objects.filter(campaign=criterion.campaign).update(theme="Finance")  # one theme only
    content_changed(campaign_id=criterion.campaign_id)  # units edited in SQL: said by hand
    refused = client.get(api, {"shrinkage": "true"}, headers=auth)
    # Asked of a report its data cannot give it yet (one theme): a conflict with its state.
    assert refused.status_code == 409
    assert [e["field"] for e in refused.json()["errors"]] == ["shrinkage"]


# The report read top down


def test_the_page_reads_top_down_answer_then_how_sure_then_how_it_was_computed(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    content = client_for(analyst).get(url(campaign)).content.decode()
    order = [content.index(mark) for mark in ('id="answer-title"', 'id="sure-title"', 'id="report-method"')]
    assert order == sorted(order)
    report = compute_report(criterion=criterion, judge=judge)
    overall = report.overall
    assert f'<span class="answer-figure">{pct(overall.ppi.mean)}</span>' in content
    for group in [*report.themes, overall]:
        row = row_html(content, css="(?:total )?answer-row", attribute="theme", value=group.theme)
        assert f"<strong>{pct(group.ppi.mean)}</strong>" in row
        assert f"{pct(group.ppi.shown_lo)} to {pct(group.ppi.shown_hi)}" in row
        assert f">{group.n_human}<" in row
    # The method is folded (and every column is still there, inside it), its notes said once.
    method = content[content.index('<details class="report-method" id="report-method">') :]
    assert "Estimates and agreement per theme" in method and "ppi++-robust-crossfit" in method
    assert 'class="notes"' not in content  # no more three lines of notes under each theme
    for term in ("λ (lambda)", "n<sub>eff</sub>", "κ (kappa)", "Robust or study method"):
        assert term in method
    # Agreement in words, and what the simulated coverages mean.
    assert f"on <strong>{pct(overall.agreement.observed)}</strong> of the {overall.n_paired} units" in content
    assert "Coverage is the share of the 200 simulated campaigns whose interval held the true rate" in content
    # The sections that read every label load as soon as the page is shown, never when scrolled to.
    assert 'hx-trigger="revealed"' not in content
    # The previous version, the reference answers, the automatic metrics.
    assert content.count('hx-trigger="load"') == 3
    assert reverse("evaluation:export_pdf", args=[campaign.slug, "relevance"]) in content


def test_notes_shared_by_themes_are_said_once_naming_the_themes(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    content = client_for(analyst).get(url(campaign)).content.decode()
    report = compute_report(criterion=criterion, judge=judge)
    notes_list = re.search(r'<dl class="report-notes small".*?</dl>', content, re.S).group(0)
    every = {note for group in [*report.themes, report.overall] for note in group.notes}
    assert every, "the campaign's report has notes"
    for note in every:
        for part in note.split("; "):
            text = part.removeprefix("overall ")
            text = text.split(": ", 1)[-1] if text.startswith(("PPI++: ", "human: ", "judge: ")) else text
            assert notes_list.count(escape(text)) >= 1


def test_a_review_mode_report_says_which_labels_await_review(campaign, analyst, client_for):
    from annotation.models import Criterion, Role
    from tests.factories import label, member, sample_units

    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    units = make_answer_units(campaign=campaign, count=33)
    sample_units(criterion=criterion, units=units)
    annotator, reviewer = member(campaign, Role.ANNOTATOR), member(campaign, Role.REVIEWER)
    for unit in units:
        label(annotator, criterion, "label", 1, unit=unit)
    label(reviewer, criterion, "review", 1, unit=units[0])
    make_judge(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    content = client_for(analyst).get(url(campaign)).content.decode()
    account = re.search(r'<li id="label-account">(.*?)</li>', content, re.S).group(1)
    assert "33 units labelled by people:</strong>" in account
    assert "1 final, 32 awaiting review." in " ".join(account.split())
    assert "The estimates read the final labels only" in account
    assert "(34 labels given in all, reviews and adjudications included.)" in account


def test_the_page_in_french_reads_top_down_in_french(campaign, analyst, client_for):
    criterion, judge, _ = judged_campaign(campaign)
    content = client_for(analyst).get(url(campaign), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    for words in (
        "La réponse",
        "Avec quelle certitude, et pourquoi",
        "Comment c'est calculé",
        "Télécharger ce rapport",
    ):
        assert words in content
    overall = compute_report(criterion=criterion, judge=judge).overall
    figure = f"{overall.ppi.mean * 100:.1f}".replace(".", ",") + "\u00a0%"
    assert f'<span class="answer-figure">{figure}</span>' in content
