"""The confidence-driven sample's page: the split before drawing, the draw, refusals, access."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Label, Sample, Stage
from evaluation.designs.budget_split import plan_split
from evaluation.models import Judge, Judgment
from inference.designs.allocation import LARGEST_THEME, OVERALL
from tests.factories import judged_corpus, make_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(campaign):
    criterion, judge, units = judged_corpus(campaign=campaign, answers_per_theme={"Finance": 8, "RH": 4})
    # A pilot of 20 Finance labels: the judge wrong on the first four units, right on the next 16.
    for index, unit in enumerate(units[:20]):
        value = index % 2 if index >= 4 else 1 - index % 2
        Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=value)
    return criterion, judge


def url(campaign) -> str:
    return reverse("evaluation:confidence_sample", args=[campaign.slug])


def test_the_page_shows_the_split_for_the_defaults_before_drawing(client_for, manager, campaign, judged):
    criterion, judge = judged
    response = client_for(manager).get(url(campaign))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="split"' in page and 'id="draw-confidence"' in page
    assert not Sample.objects.exists()


def test_the_split_follows_the_objective_and_the_pilot(campaign, judged):
    criterion, judge = judged
    overall = plan_split(criterion=criterion, judge=judge, budget=20, objective=OVERALL)
    largest = plan_split(criterion=criterion, judge=judge, budget=20, objective=LARGEST_THEME)
    assert overall.spent <= 20 and largest.spent <= 20
    assert [row.theme for row in overall.themes] == ["Finance", "RH"]
    assert overall.themes[0].pilot == 20 and overall.themes[1].pilot == 0
    # The largest theme's half-width is what the second objective lowers.
    assert max(r.halfwidth for r in largest.themes) <= max(r.halfwidth for r in overall.themes) + 1e-12
    assert overall.overall_halfwidth <= largest.overall_halfwidth + 1e-12


def test_the_split_is_kept_until_a_label_or_a_judgment_changes_it(
    campaign, judged, django_assert_num_queries
):
    criterion, judge = judged
    first = plan_split(criterion=criterion, judge=judge, budget=20, objective=OVERALL)
    # Read again: the key's two queries (the labels', the judgments' versions) and nothing else;
    # another budget is another split.
    with django_assert_num_queries(2):
        assert plan_split(criterion=criterion, judge=judge, budget=20, objective=OVERALL) == first
    assert plan_split(criterion=criterion, judge=judge, budget=24, objective=OVERALL).budget == 24
    unit = Judgment.objects.filter(judge=judge, criterion=criterion).order_by("unit_id").last().unit
    Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1)
    labelled = plan_split(criterion=criterion, judge=judge, budget=20, objective=OVERALL)
    assert [row.pilot for row in labelled.themes] == [20, 1]
    # A judgment judged again in place (a retry) moves its confidence and its update time.
    again = Judgment.objects.get(judge=judge, unit=unit)
    again.confidence = 0.999
    again.save()
    rejudged = plan_split(criterion=criterion, judge=judge, budget=20, objective=OVERALL)
    assert rejudged.themes[1].spread != labelled.themes[1].spread


def test_drawing_spends_the_split_shown(client_for, manager, campaign, judged):
    criterion, judge = judged
    data = {"criterion": "veracity", "judge": "gpt", "budget": "12", "objective": OVERALL, "seed": "4"}
    response = client_for(manager).post(url(campaign), data)
    sample = Sample.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("annotation:sample_detail", args=[campaign.slug, sample.pk])
    plan = plan_split(criterion=criterion, judge=judge, budget=12, objective=OVERALL)
    assert sample.design == Sample.Design.CONFIDENCE and sample.budget == plan.spent
    assert {t: v["budget"] for t, v in sample.design_parameters["themes"].items()} == plan.per_theme


def test_a_judge_without_confidence_is_refused_on_its_field(client_for, manager, campaign, judged):
    criterion, judge = judged
    plain = Judge.objects.create(campaign=campaign, name="plain", kind=Judge.Kind.IMPORTED)
    unit = Judgment.objects.filter(judge=judge, criterion=criterion).first().unit
    Judgment.objects.create(unit=unit, criterion=criterion, judge=plain, value=1)
    data = {"criterion": "veracity", "judge": "plain", "budget": "12", "objective": OVERALL, "seed": "0"}
    response = client_for(manager).post(url(campaign), data)
    assert response.status_code == 400
    assert "gave no confidence" in response.content.decode()
    assert not Sample.objects.exists()


def test_a_budget_below_the_minimums_is_refused(client_for, manager, campaign, judged):
    response = client_for(manager).get(
        url(campaign),
        {"criterion": "veracity", "judge": "gpt", "budget": "3", "objective": OVERALL, "seed": "0"},
    )
    assert response.status_code == 400
    assert "give at least 4" in response.content.decode()


def test_a_campaign_without_judge_asks_for_one_without_refusing(client_for, manager, campaign):
    """The page is reached by the app's own links: with no judge to default to it shows its form
    and the choice to make (200), and names the judge field when a choice is sent empty."""
    make_corpus(campaign=campaign)
    response = client_for(manager).get(url(campaign))
    assert response.status_code == 200
    assert 'id="choose-judge"' in response.content.decode()
    sent = client_for(manager).get(url(campaign), {"criterion": "veracity", "judge": "", "budget": "12"})
    assert sent.status_code == 400 and "needs a judge" in sent.content.decode()


def test_a_failed_judge_run_does_not_hide_the_judge_that_labeled(client_for, manager, campaign, judged):
    """A judge whose every call failed is no candidate: the page still opens on the one that
    labeled, with its split."""
    criterion, judge = judged
    failed = Judge.objects.create(campaign=campaign, name="gpt-no-key", kind=Judge.Kind.OPENAI)
    for unit in {j.unit for j in Judgment.objects.filter(judge=judge, criterion=criterion)}:
        Judgment.objects.create(
            unit=unit, criterion=criterion, judge=failed, status=Judgment.Status.FAILED, error="no key"
        )
    response = client_for(manager).get(url(campaign))
    assert response.status_code == 200
    page = response.content.decode()
    assert f'<option value="{judge.name}" selected>' in page and 'id="draw-confidence"' in page


def test_analysts_see_the_split_but_cannot_draw(client_for, analyst, campaign, judged):
    client = client_for(analyst)
    page = client.get(url(campaign))
    assert page.status_code == 200 and 'id="draw-confidence"' not in page.content.decode()
    data = {"criterion": "veracity", "judge": "gpt", "budget": "12", "objective": OVERALL, "seed": "0"}
    assert client.post(url(campaign), data).status_code == 403
    assert not Sample.objects.exists()


def test_access(client, client_for, annotator, outsider, campaign, judged):
    assert client.get(url(campaign)).status_code == 302
    assert client_for(outsider).get(url(campaign)).status_code == 404
    assert client_for(annotator).get(url(campaign)).status_code == 403
    assert client_for(annotator).put(url(campaign)).status_code == 405


def test_the_page_reads_in_a_fixed_number_of_queries(
    client_for, manager, campaign, judged, django_assert_num_queries
):
    client = client_for(manager)
    client.get(url(campaign))
    with django_assert_num_queries(QUERIES):
        client.get(url(campaign))


# Session, user, campaign, membership; the form's judges, criteria, the units labelled per
# criterion and the default criterion; the split kept in the page cache (its key: the campaign, the
# labels' and the judgments' versions); the rendered choices (criteria, judges, criterion). None
# grows with the campaign's units.
QUERIES = 15


def test_the_sampling_page_links_here_and_names_the_design(client_for, manager, campaign, judged):
    page = client_for(manager).get(reverse("annotation:sampling", args=[campaign.slug])).content.decode()
    assert url(campaign) in page


def test_the_sample_page_of_a_confidence_sample_offers_no_k_means_top_up(
    client_for, manager, campaign, judged
):
    from evaluation.designs.active import draw_confidence_sample

    criterion, judge = judged
    sample = draw_confidence_sample(criterion=criterion, judge=judge, budget=8, seed=1)
    response = client_for(manager).get(reverse("annotation:sample_detail", args=[campaign.slug, sample.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "Judge confidence" in page and 'id="top-up-title"' not in page and "K = " not in page


def test_split_by_verdict_sends_labels_where_the_pilot_saw_the_judge_err(campaign, judged):
    # The pilot: 20 labeled units of Finance, ten the judge said 0 and ten it said 1 (index % 2);
    # the Finance strata get pilot-corrected spreads, RH's the judge's own (recalibrated).
    criterion, judge = judged
    plan = plan_split(criterion=criterion, judge=judge, budget=24, objective=OVERALL, by_verdict=True)
    assert plan.by_verdict and plan.spent <= 24
    finance, rh = plan.themes
    assert [s.key for s in finance.strata] == ["judge 1", "judge 0"]
    assert sum(s.units for s in finance.strata) == finance.units
    assert sum(s.labels for s in finance.strata) == finance.labels
    assert [s.pilot for s in finance.strata] == [10, 10] and [s.pilot for s in rh.strata] == [0, 0]
    plain = plan_split(criterion=criterion, judge=judge, budget=24, objective=OVERALL)
    assert plan.per_stratum == {row.theme: {s.key: s.labels for s in row.strata} for row in plan.themes}
    assert plain.per_stratum is None and plain.themes[0].strata == []


def test_drawing_split_by_verdict_spends_each_stratum_s_share(client_for, manager, campaign, judged):
    criterion, judge = judged
    data = {
        "criterion": "veracity",
        "judge": "gpt",
        "budget": "16",
        "objective": OVERALL,
        "by_verdict": "on",
        "seed": "2",
    }
    page = client_for(manager).get(url(campaign), data).content.decode()
    assert "judge said 1" in page and "judge said 0" in page
    response = client_for(manager).post(url(campaign), data)
    assert response.status_code == 302
    sample = Sample.objects.get()
    plan = plan_split(criterion=criterion, judge=judge, budget=16, objective=OVERALL, by_verdict=True)
    recorded = {
        theme: {key: shape["budget"] for key, shape in value["strata"].items()}
        for theme, value in sample.design_parameters["themes"].items()
    }
    assert recorded == plan.per_stratum


def test_a_judge_without_confidence_can_split_by_verdict(client_for, manager, campaign, judged):
    criterion, _ = judged
    plain = Judge.objects.create(campaign=campaign, name="plain", kind=Judge.Kind.IMPORTED)
    for unit in campaign.units.filter(level=criterion.level):
        Judgment.objects.create(unit=unit, criterion=criterion, judge=plain, value=unit.pk % 2)
    data = {"criterion": "veracity", "judge": "plain", "budget": "12", "objective": OVERALL, "seed": "0"}
    assert client_for(manager).get(url(campaign), data).status_code == 400
    response = client_for(manager).post(url(campaign), {**data, "by_verdict": "on"})
    assert response.status_code == 302
    assert Sample.objects.get().design_parameters["by_verdict"] is True


def test_the_judges_offered_are_those_that_labeled(client_for, manager, campaign, judged):
    """A judge whose every call failed labels nothing: it is not offered to draw by."""
    Judge.objects.create(campaign=campaign, name="gpt-no-key", kind=Judge.Kind.OPENAI)
    page = client_for(manager).get(url(campaign)).content.decode()
    assert 'value="gpt"' in page and "gpt-no-key" not in page


def test_without_a_pilot_the_page_says_what_to_do_and_draws_only_when_told(client_for, manager, campaign):
    """The app's own link with no pilot yet: 200, the step to take, no split to draw; ticking
    "Draw without a pilot" shows the split, and the sample records that no map was fitted."""
    criterion, judge, units = judged_corpus(campaign=campaign, answers_per_theme={"Finance": 8, "RH": 4})
    client = client_for(manager)
    response = client.get(url(campaign))
    page = response.content.decode()
    assert response.status_code == 200
    assert 'id="pilot-needed"' in page and 'id="draw-confidence"' not in page
    assert "checked against 0 human labels so far, and the pilot needs 20" in page
    data = {"criterion": "veracity", "judge": "gpt", "budget": "12", "objective": OVERALL, "seed": "1"}
    assert client.post(url(campaign), data).status_code == 200 and not Sample.objects.exists()
    shown = client.get(url(campaign), {**data, "without_pilot": "on"}).content.decode()
    assert 'id="split"' in shown and 'id="draw-confidence"' in shown
    assert client.post(url(campaign), {**data, "without_pilot": "on"}).status_code == 302
    sample = Sample.objects.get()
    assert sample.design_parameters["pilot_labels"] == 0
    assert sample.design_parameters["calibration"]["labels"] == 0
    # The sample's page says it was drawn without a pilot.
    detail = client.get(reverse("annotation:sample_detail", args=[campaign.slug, sample.pk])).content.decode()
    assert 'id="without-pilot"' in detail and "Drawn without a pilot" in detail


def test_with_a_pilot_the_sample_records_the_map_it_followed(client_for, manager, campaign, judged):
    data = {"criterion": "veracity", "judge": "gpt", "budget": "12", "objective": OVERALL, "seed": "1"}
    client = client_for(manager)
    assert client.post(url(campaign), data).status_code == 302
    sample = Sample.objects.get()
    recorded = sample.design_parameters
    assert recorded["pilot_labels"] == 20 and recorded["calibration"]["labels"] == 20
    detail = client.get(reverse("annotation:sample_detail", args=[campaign.slug, sample.pk])).content.decode()
    assert 'id="without-pilot"' not in detail


def test_the_page_opens_on_a_criterion_with_a_pilot(client_for, manager, campaign, judged):
    """The judge gave confidences on relevance too (first by name) but nobody labelled it: the
    page opens on veracity, whose 20 labels make a pilot, and shows a split to draw."""
    criterion, judge = judged
    relevance = criterion.campaign.criteria.get(name="relevance")
    for unit in campaign.units.filter(level=relevance.level):
        Judgment.objects.create(unit=unit, criterion=relevance, judge=judge, value=1, confidence=0.9)
    response = client_for(manager).get(url(campaign))
    assert response.context["form"]["criterion"].value() == "veracity"
    assert 'id="draw-confidence"' in response.content.decode()


def test_a_theme_the_split_would_mostly_label_is_named_with_the_advice(client_for, manager, campaign, judged):
    from evaluation.designs.budget_split import MOST_OF_A_THEME, ThemePlan

    # Finance: 24 units, 20 of them the pilot's: past half of the theme before any draw.
    page = client_for(manager).get(url(campaign)).content.decode()
    assert 'id="mostly-labelled"' in page
    warning = page.split('id="mostly-labelled"')[1].split("</p>")[0]
    assert "In Finance" in warning and "K-means" in warning
    french = client_for(manager).get(url(campaign), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Dans Finance" in french.split('id="mostly-labelled"')[1].split("</p>")[0]
    # The rule: more than half of the units, the pilot's labels and the split's together.
    row = ThemePlan(theme="T", units=100, scored=100, pilot=20, spread=0.3, labels=30, halfwidth=0.1)
    assert MOST_OF_A_THEME == 0.5 and not row.mostly_labelled
    one_more = ThemePlan(theme="T", units=100, scored=100, pilot=20, spread=0.3, labels=31, halfwidth=0.1)
    assert one_more.mostly_labelled
