"""The report's estimates on samples drawn by the judge's confidence (inverse-probability PPI on the
confidence, against inference.weighted_ppi and ppi_py) and on labels pooled from several samples
(union inclusion probabilities instead of equal weights)."""

from __future__ import annotations

import numpy as np
import ppi_py
import pytest

from annotation.models import Criterion, Label, Level, SampleItem, Stage, Unit
from evaluation.designs.active import draw_confidence_sample
from evaluation.estimates.report import compute_report
from evaluation.models import Judge, Judgment
from inference import notes
from inference.weighted_ppi import PPI_WEIGHTED, weighted_ppi
from tests.factories import make_answer, make_campaign, older_sample

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
    for index in range(units):
        unit = Unit.objects.get(answer=make_answer(campaign=campaign, theme="Finance"), level=Level.ANSWER)
        p = float(np.clip(rng.beta(2, 1), 0.02, 0.98))
        value = int(p >= 0.5)
        Judgment.objects.create(
            unit=unit, criterion=criterion, judge=judge, value=value, confidence=p if value else 1 - p
        )
        truth[unit.pk] = int(rng.random() < p)
        p_one[unit.pk] = p
        del index
    return campaign, criterion, judge, truth, p_one


def _label(*, criterion, unit_ids, truth) -> None:
    for unit_id in unit_ids:
        Label.objects.create(unit_id=unit_id, criterion=criterion, stage=Stage.IMPORTED, value=truth[unit_id])


def test_a_confidence_sample_is_estimated_by_inverse_probability_ppi_on_the_confidence():
    _, criterion, judge, truth, p_one = _campaign()
    sample = draw_confidence_sample(criterion=criterion, judge=judge, budget=16, seed=5)
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
    newer = draw_confidence_sample(criterion=criterion, judge=judge, budget=10, seed=2)
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
        criterion=criterion, judge=judge, budget=9, seed=4, stratum_budgets={"Finance": strata}
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
    expected = weighted_ppi(
        y=np.array([truth[u] for u in labeled], dtype=float),
        confidence=np.array([p_one[u] for u in labeled]),
        pi=np.array(pi),
        confidence_all=np.array([p_one[u] for u in ids]),
        alpha=0.05,
    )
    assert finance.weighted and finance.ppi.method == PPI_WEIGHTED
    assert finance.ppi.mean == pytest.approx(expected.mean)
    assert (finance.ppi.lo, finance.ppi.hi) == pytest.approx((expected.lo, expected.hi))


def test_a_label_in_no_sample_keeps_the_equal_weights_fallback():
    campaign, criterion, judge, truth, _ = _campaign(units=12)
    ids = sorted(truth)
    draw_confidence_sample(criterion=criterion, judge=judge, budget=4, seed=1)
    drawn = set(SampleItem.objects.values_list("unit_id", flat=True))
    outside = next(u for u in ids if u not in drawn)
    _label(criterion=criterion, unit_ids=drawn | {outside}, truth=truth)
    finance = compute_report(criterion=criterion, judge=judge).themes[0]
    assert not finance.weighted
    assert notes.NOT_ALL_SAMPLED in finance.notes


def test_the_report_page_names_the_method_and_explains_it(client_for):
    from django.urls import reverse

    from annotation.models import Role
    from inference.ppi import METHODS, PPI_CONFIDENCE
    from tests.factories import add_member, make_user

    campaign, criterion, judge, truth, _ = _campaign()
    sample = draw_confidence_sample(criterion=criterion, judge=judge, budget=16, seed=5)
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
