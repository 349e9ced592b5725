"""The report's estimates on samples drawn by the judge's confidence (inverse-probability PPI on the
confidence, against inference.estimators.weighted_ppi and ppi_py) and on labels pooled from several samples
(union inclusion probabilities instead of equal weights)."""

from __future__ import annotations

import numpy as np
import ppi_py
import pytest

from annotation.models import Criterion, Label, SampleItem, Stage, Unit
from evaluation.designs.active import PilotNeeded, design_probabilities, draw_confidence_sample, judged_units
from evaluation.estimates.codec import report_as_json, report_from_json
from evaluation.estimates.report import compute_report
from evaluation.estimates.weights import prediction_mean, predictions
from evaluation.models import Judge, Judgment
from inference import notes
from inference.designs.inclusion import confidence_probabilities
from inference.estimators.weighted_ppi import PPI_WEIGHTED, weighted_ppi
from inference.reliability.calibration import Platt, crossfit, fit_platt, histogram
from tests.factories import make_answer_units, make_campaign, older_sample

pytestmark = pytest.mark.django_db


def _campaign(*, units: int = 40):
    """One theme of ``units`` answers; the judge's probability of a 1 spread over (0, 1), its
    verdict the rounded probability; the truth drawn from that probability."""
    rng = np.random.default_rng(11)
    campaign = make_campaign()
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind=Judge.Kind.IMPORTED)
    truth: dict[int, int] = {}
    p_one: dict[int, float] = {}
    for index, unit in enumerate(make_answer_units(campaign=campaign, count=units)):
        p = float(np.clip(rng.beta(2, 1), 0.02, 0.98))
        value = int(p >= 0.5)
        Judgment.objects.create(
            unit=unit, criterion=criterion, judge=judge, value=value, confidence=p if value else 1 - p
        )
        truth[unit.pk] = int(rng.random() < p)
        p_one[unit.pk] = p
        del index
    return campaign, criterion, judge, truth, p_one


def _estimate(*, labeled: list[int], pi: np.ndarray, truth: dict[int, int], p_one: dict[int, float]):
    """The inverse-probability PPI++ the report computes on these labels: the confidence
    recalibrated cross-fitted by answers once there are labels enough (one answer per unit here),
    as it is (``inference.reliability.calibration``) below."""
    y = np.array([truth[u] for u in labeled], dtype=float)
    c = np.array([p_one[u] for u in labeled])
    everything = np.array([p_one[u] for u in sorted(p_one)])
    fit = crossfit(confidence=c, labels=y, clusters=[Unit.objects.get(pk=u).answer_id for u in labeled])
    if not fit.fitted:
        return weighted_ppi(y=y, confidence=c, pi=pi, confidence_all=everything, alpha=0.05)
    values, counts = histogram(everything)
    return weighted_ppi(
        y=y,
        confidence=fit.labeled,
        pi=pi,
        confidence_all=everything,
        judge_mean=fit.mean_of(values, counts, weights=1 / pi),
        alpha=0.05,
    )


def _label(*, criterion, unit_ids, truth) -> None:
    for unit_id in unit_ids:
        Label.objects.create(unit_id=unit_id, criterion=criterion, stage=Stage.IMPORTED, value=truth[unit_id])


def test_a_confidence_sample_is_estimated_by_inverse_probability_ppi_on_the_confidence():
    _, criterion, judge, truth, p_one = _campaign()
    sample = draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=16, seed=5)
    items = dict(SampleItem.objects.filter(sample=sample).values_list("unit_id", "inclusion_probability"))
    _label(criterion=criterion, unit_ids=items, truth=truth)
    report = compute_report(criterion=criterion, judge=judge)
    finance = report.themes[0]
    assert finance.weighted and finance.ppi.method == PPI_WEIGHTED
    assert notes.CONFIDENCE_PPI in finance.notes
    ids = sorted(items)
    y = np.array([truth[u] for u in ids], dtype=float)
    c = np.array([p_one[u] for u in ids])
    pi = np.array([items[u] for u in ids])
    c_all = np.array([p_one[u] for u in sorted(p_one)])
    expected = weighted_ppi(y=y, confidence=c, pi=pi, confidence_all=c_all, alpha=0.05)
    assert finance.ppi.mean == pytest.approx(expected.mean)
    assert (finance.ppi.lo, finance.ppi.hi) == pytest.approx((expected.lo, expected.hi))
    # Where it coincides with ppi_py: lambda 1, weights 1 / pi, every unit's confidence unlabeled.
    point = ppi_py.ppi_mean_pointestimate(y, c, c_all, lam=1.0, w=1 / pi, w_unlabeled=np.ones(c_all.size))
    assert finance.ppi.mean == pytest.approx(float(np.asarray(point).ravel()[0]))
    # The study method stays the study's: ppi_py under simple random sampling.
    study = compute_report(criterion=criterion, judge=judge, method="study")
    assert study.themes[0].ppi.method != PPI_WEIGHTED


def test_labels_from_a_k_means_sample_and_a_confidence_sample_are_weighted_by_their_union():
    campaign, criterion, judge, truth, p_one = _campaign()
    ids = sorted(truth)
    kmeans_ids = ids[:8]
    older_sample(pi=0.2, campaign=campaign, criterion=criterion, unit_ids=kmeans_ids)
    newer = draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=10, seed=2)
    confidence_items = dict(newer.items.values_list("unit_id", "inclusion_probability"))
    _label(criterion=criterion, unit_ids=set(kmeans_ids) | set(confidence_items), truth=truth)
    report = compute_report(criterion=criterion, judge=judge)
    finance = report.themes[0]
    assert finance.weighted
    assert notes.POOLED_SAMPLES in finance.notes and notes.NOT_ALL_SAMPLED not in finance.notes
    assert finance.ppi.method == PPI_WEIGHTED
    # By hand: the K-means sample drew 8 of 40 units (rate 0.2 for those it did not draw); the
    # confidence sample's probability of every unit from its recorded shape.
    shape = newer.design_parameters["themes"]["Finance"]
    labeled = sorted(set(kmeans_ids) | set(confidence_items))
    union = {}
    for u in labeled:
        kmeans = 0.2
        spread = np.sqrt(p_one[u] * (1 - p_one[u]))
        confident = confidence_items.get(u, min(1.0, max(shape["low"], shape["scale"] * spread)))
        union[u] = 1 - (1 - kmeans) * (1 - confident)
    y = np.array([truth[u] for u in labeled], dtype=float)
    c = np.array([p_one[u] for u in labeled])
    pi = np.array([union[u] for u in labeled])
    c_all = np.array([p_one[u] for u in ids])
    expected = weighted_ppi(y=y, confidence=c, pi=pi, confidence_all=c_all, alpha=0.05)
    assert finance.ppi.mean == pytest.approx(expected.mean)
    assert (finance.ppi.lo, finance.ppi.hi) == pytest.approx((expected.lo, expected.hi))


def test_a_k_means_sample_and_a_sample_split_by_verdict_are_weighted_by_their_union():
    # A unit's probability in the split sample is its verdict stratum's: the stratum of its
    # verdict, shape from that stratum's record.
    campaign, criterion, judge, truth, p_one = _campaign()
    ids = sorted(truth)
    older_sample(pi=0.2, campaign=campaign, criterion=criterion, unit_ids=ids[:8])
    verdicts = {u: int(p_one[u] >= 0.5) for u in ids}
    strata = {"judge 1": 6, "judge 0": 3}
    newer = draw_confidence_sample(
        without_pilot=True,
        criterion=criterion,
        judge=judge,
        budget=9,
        seed=4,
        stratum_budgets={"Finance": strata},
    )
    drawn = dict(newer.items.values_list("unit_id", "inclusion_probability"))
    labeled = sorted(set(ids[:8]) | set(drawn))
    _label(criterion=criterion, unit_ids=labeled, truth=truth)
    finance = compute_report(criterion=criterion, judge=judge).themes[0]
    shapes = newer.design_parameters["themes"]["Finance"]["strata"]
    pi = []
    for u in labeled:
        shape = shapes[f"judge {verdicts[u]}"]
        spread = np.sqrt(p_one[u] * (1 - p_one[u]))
        confident = drawn.get(u, min(1.0, max(shape["low"], shape["scale"] * spread)))
        pi.append(1 - (1 - 0.2) * (1 - confident))
    expected = _estimate(labeled=labeled, pi=np.array(pi), truth=truth, p_one=p_one)
    assert finance.weighted and finance.ppi.method == PPI_WEIGHTED
    assert finance.ppi.mean == pytest.approx(expected.mean)
    assert (finance.ppi.lo, finance.ppi.hi) == pytest.approx((expected.lo, expected.hi))


def test_a_label_in_no_sample_keeps_the_equal_weights_fallback():
    campaign, criterion, judge, truth, _ = _campaign(units=12)
    ids = sorted(truth)
    draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=4, seed=1)
    drawn = set(SampleItem.objects.values_list("unit_id", flat=True))
    outside = next(u for u in ids if u not in drawn)
    _label(criterion=criterion, unit_ids=drawn | {outside}, truth=truth)
    finance = compute_report(criterion=criterion, judge=judge).themes[0]
    assert not finance.weighted
    assert notes.NOT_ALL_SAMPLED in finance.notes


def test_the_report_page_names_the_method_and_explains_it(client_for):
    from django.urls import reverse

    from annotation.models import Role
    from inference.estimators.ppi import METHODS, PPI_CONFIDENCE
    from tests.factories import add_member, make_user

    campaign, criterion, judge, truth, _ = _campaign()
    sample = draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=16, seed=5)
    _label(criterion=criterion, unit_ids=sample.items.values_list("unit_id", flat=True), truth=truth)
    analyst = make_user()
    add_member(campaign=campaign, user=analyst, roles=[Role.ANALYST])
    response = client_for(analyst).get(reverse("evaluation:report", args=[campaign.slug, "relevance"]))
    assert response.status_code == 200
    page = response.content.decode()
    assert PPI_CONFIDENCE in page
    assert (
        "Inverse-probability PPI++ on the judge&#x27;s confidence" in page or METHODS[PPI_CONFIDENCE] in page
    )


# The judge's confidence recalibrated: by the design on the pilot, by the estimate cross-fitted


def test_without_a_pilot_the_design_is_refused_naming_the_step_and_nothing_is_written():
    _, criterion, judge, truth, _ = _campaign()
    _label(criterion=criterion, unit_ids=sorted(truth)[:12], truth=truth)
    with pytest.raises(PilotNeeded) as refused:
        draw_confidence_sample(criterion=criterion, judge=judge, budget=10, seed=1)
    assert refused.value.field == "judge"
    assert "12 of the 20 needed" in str(refused.value) and "K-means sample" in str(refused.value)
    assert not SampleItem.objects.exists()


def test_with_a_pilot_the_design_follows_the_recalibrated_confidence_and_records_its_map():
    _, criterion, judge, truth, p_one = _campaign(units=60)
    pilot = sorted(truth)[:24]
    _label(criterion=criterion, unit_ids=pilot, truth=truth)
    sample = draw_confidence_sample(criterion=criterion, judge=judge, budget=12, seed=3)
    expected_map = fit_platt(confidence=[p_one[u] for u in pilot], labels=[truth[u] for u in pilot])
    recorded = Platt.from_json(sample.design_parameters["calibration"])
    # The same fit (its optimiser's last digits depend on the order the labels are read in).
    assert (recorded.slope, recorded.intercept) == pytest.approx(
        (expected_map.slope, expected_map.intercept), rel=1e-6
    )
    assert recorded.labels == expected_map.labels == 24
    assert sample.design_parameters["pilot_labels"] == 24
    ids = sorted(p_one)
    c = recorded.apply(np.array([p_one[u] for u in ids]))
    probabilities = confidence_probabilities(confidence=c, budget=12)
    drawn = dict(sample.items.values_list("unit_id", "inclusion_probability"))
    for unit_id, p in drawn.items():
        assert p == pytest.approx(probabilities[ids.index(unit_id)], rel=1e-9)
    # Recomputed later for every unit from the recorded map, as pooling needs.
    again = design_probabilities(
        sample=sample,
        themes=dict.fromkeys(ids, "Finance"),
        judged=judged_units(criterion=criterion, judge_id=judge.pk),
    )
    assert [again[u] for u in ids] == pytest.approx(list(probabilities), rel=1e-6)


def test_the_estimate_reads_the_confidence_recalibrated_cross_fitted_as_inference_computes_it():
    _, criterion, judge, truth, p_one = _campaign(units=60)
    sample = draw_confidence_sample(without_pilot=True, criterion=criterion, judge=judge, budget=30, seed=5)
    assert not Platt.from_json(sample.design_parameters["calibration"]).fitted
    items = dict(SampleItem.objects.filter(sample=sample).values_list("unit_id", "inclusion_probability"))
    _label(criterion=criterion, unit_ids=items, truth=truth)
    report = compute_report(criterion=criterion, judge=judge)
    finance = report.themes[0]
    ids = sorted(items)
    y = np.array([truth[u] for u in ids], dtype=float)
    c = np.array([p_one[u] for u in ids])
    pi = np.array([items[u] for u in ids])
    answers = [Unit.objects.get(pk=u).answer_id for u in ids]
    fit = crossfit(confidence=c, labels=y, clusters=answers)
    assert fit.fitted and len(ids) >= 20
    values, counts = histogram(np.array([p_one[u] for u in sorted(p_one)]))
    expected = weighted_ppi(
        y=y,
        confidence=fit.labeled,
        pi=pi,
        confidence_all=np.full(len(p_one), 0.5),
        judge_mean=fit.mean_of(values, counts, weights=1 / pi),
        alpha=0.05,
    )
    assert finance.ppi.mean == pytest.approx(expected.mean, rel=1e-9)
    assert (finance.ppi.lo, finance.ppi.hi) == pytest.approx((expected.lo, expected.hi), rel=1e-9)
    assert notes.RECALIBRATED % {"labels": len(ids), "folds": len(fit.maps)} in finance.notes
    assert report.calibration == {
        "method": "platt-crossfit",
        "labels": len(ids),
        "folds": len(fit.maps),
        "slope": pytest.approx(fit.whole.slope, rel=1e-12),
        "intercept": pytest.approx(fit.whole.intercept, rel=1e-9),
    }
    # The same report read back from its JSON says which recalibration it used.
    assert report_from_json(data=report_as_json(report=report)).calibration == report.calibration


def test_the_judges_confidences_are_counted_in_logit_bins_whose_means_are_exact():
    _, criterion, judge, _, p_one = _campaign(units=50)
    cells = predictions(criterion=criterion, judge=judge)
    [key] = cells
    finance = cells[key]
    assert sum(count for _, count in finance.scored) == 50 and finance.verdicts == 0
    values, counts = histogram(np.array(list(p_one.values())))
    assert sorted(zip(values.round(12), counts, strict=True)) == sorted(
        (round(value, 12), count) for value, count in finance.scored
    )
    assert prediction_mean(cells=cells, keys=[key], size=50) == pytest.approx(np.mean(list(p_one.values())))
