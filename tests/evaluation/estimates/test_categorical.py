"""Estimates of a criterion in named categories: per category and group, equal to ppi_py on the
indicator arrays, summing to 1, with the confusion matrix and kappa."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from annotation.models import Label, Level, Stage, Unit
from evaluation import errors
from evaluation.estimates.categorical import compute_categorical_report
from evaluation.estimates.codec import categorical_report_as_json
from evaluation.estimates.report import compute_report
from evaluation.models import Judge, Judgment
from inference.estimators.ppi import one_hot
from tests.categorical import categorical_campaign, correctness
from tests.factories import make_answer, make_campaign

ALPHA = 0.05
COLUMNS = (1, 2, 3, 4, 5)


def entry_of(data: dict, name: str) -> dict:
    return next(item for item in data["estimates"] if item["name"] == name)


def test_study_ppi_per_category_equals_ppi_py_on_the_indicator_arrays(db):
    campaign = make_campaign()
    criterion, judge, rows = categorical_campaign(campaign)
    report = compute_categorical_report(criterion=criterion, judge=judge, method="study", alpha=ALPHA)
    data = json.loads(json.dumps(categorical_report_as_json(report=report), allow_nan=False))
    assert [item["name"] for item in data["estimates"]] == [
        "not-enough-information",
        "partly-incorrect",
        "partly-incomplete",
        "fully-incorrect",
        "fully-correct",
        "abstention",
        "correct",
        "hallucination",
    ]
    assert [item["kind"] for item in data["estimates"]] == ["category"] * 5 + ["group"] * 3
    for theme, theme_rows in rows.items():
        humans = [h for _, h, _ in theme_rows["labeled"]]
        judged = [j for _, _, j in theme_rows["labeled"]]
        rest = [j for _, j in theme_rows["unlabeled"]]
        y, yhat, unl = one_hot(humans, COLUMNS), one_hot(judged, COLUMNS), one_hot(rest, COLUMNS)
        # ppi_py on the one-hot arrays: one lambda for the five coordinates.
        points = ppi_mean_pointestimate(y, yhat, unl, lam=None)
        los, his = ppi_mean_ci(y, yhat, unl, alpha=ALPHA, lam=None)
        sums = {"human": 0.0, "judge": 0.0, "ppi": 0.0}
        lams = set()
        for k, category in enumerate(data["categories"]):
            group = next(g for g in entry_of(data, category["name"])["themes"] if g["theme"] == theme)
            assert group["ppi_mean"] == pytest.approx(float(points[k]), abs=1e-12)
            raw = group.get("ppi_ci_raw", group["ppi_ci"])
            assert raw == pytest.approx([float(los[k]), float(his[k])], abs=1e-12)
            # ... which is ppi_py on this category's indicator arrays with that lambda.
            lam = group["lambda"]
            lams.add(round(lam, 12))
            alone = ppi_mean_pointestimate(y[:, k], yhat[:, k], unl[:, k], lam=lam)
            assert group["ppi_mean"] == pytest.approx(float(np.ravel(alone)[0]), abs=1e-12)
            human = y[:, k]
            assert group["human_mean"] == pytest.approx(human.mean(), abs=1e-12)
            assert group.get("human_ci_raw", group["human_ci"]) == pytest.approx(
                list(classical_mean_ci(human, alpha=ALPHA)), abs=1e-12
            )
            everything = np.concatenate([yhat[:, k], unl[:, k]])
            assert group["judge_mean"] == pytest.approx(everything.mean(), abs=1e-12)
            for name in sums:
                sums[name] += group[f"{name}_mean"]
        assert len(lams) == 1
        assert sums == pytest.approx({"human": 1.0, "judge": 1.0, "ppi": 1.0}, abs=1e-12)
        # A group's estimates are its categories' summed.
        for name, values in (("hallucination", [2, 4]), ("abstention", [1, 3]), ("correct", [5])):
            group = next(g for g in entry_of(data, name)["themes"] if g["theme"] == theme)
            assert group["ppi_mean"] == pytest.approx(sum(float(points[v - 1]) for v in values), abs=1e-12)
            assert group["human_mean"] == pytest.approx(sum(y[:, v - 1].mean() for v in values), abs=1e-12)


def test_robust_categories_sum_to_one_and_groups_to_their_categories(db):
    campaign = make_campaign()
    criterion, judge, _ = categorical_campaign(campaign)
    report = compute_categorical_report(criterion=criterion, judge=judge, method="robust")
    data = categorical_report_as_json(report=report)
    categories = [item for item in data["estimates"] if item["kind"] == "category"]
    for position in range(len(categories[0]["themes"])):
        for key in ("human_mean", "judge_mean", "ppi_mean"):
            assert sum(item["themes"][position][key] for item in categories) == pytest.approx(1.0, abs=1e-9)
        assert len({item["themes"][position]["lambda"] for item in categories}) == 1
        assert {item["themes"][position]["ppi_method"] for item in categories} == {"ppi++-robust-pooled"}
    for key in ("human_mean", "judge_mean", "ppi_mean"):
        assert sum(item["overall"][key] for item in categories) == pytest.approx(1.0, abs=1e-9)
    hallucination = entry_of(data, "hallucination")["overall"]["ppi_mean"]
    assert hallucination == pytest.approx(
        entry_of(data, "partly-incorrect")["overall"]["ppi_mean"]
        + entry_of(data, "fully-incorrect")["overall"]["ppi_mean"]
    )


def test_a_case_worked_by_hand(db):
    """Three categories; labeled (human, judge): (1, 1), (2, 2), (3, 3), (1, 1); judge alone on
    1, 2, 2, 2. ppi_py's lambda: sum_k Cov(Y_k, Yhat_k) = 0.25 + 0.1875 + 0.1875 = 0.625 over
    (1 + n/N) sum_k Var(Yhat_k) with ddof 1 over the eight judge labels (shares 3/8, 4/8, 1/8):
    2 * 8/7 * 38/64 = 38/28, so lambda = 0.625 * 28 / 38 = 35/76. theta_k = lambda u_k +
    (1 - lambda) y_k with u = (1/4, 3/4, 0), y = (1/2, 1/4, 1/4): 117/304, 146/304, 41/304."""
    campaign = make_campaign()
    criterion = correctness(campaign)
    criterion.categories = criterion.categories[:3]
    criterion.category_groups = {"unsure": [1, 3]}
    criterion.save()
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    for human, judged in [(1, 1), (2, 2), (3, 3), (1, 1), (None, 1), (None, 2), (None, 2), (None, 2)]:
        unit = Unit.objects.get(answer=make_answer(campaign=campaign), level=Level.ANSWER)
        Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=judged)
        if human is not None:
            Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=human)
    report = compute_categorical_report(criterion=criterion, judge=judge, method="study")
    data = categorical_report_as_json(report=report)
    finance = [item["themes"][0] for item in data["estimates"]]
    assert [group["lambda"] for group in finance[:3]] == pytest.approx([35 / 76] * 3)
    assert [group["ppi_mean"] for group in finance] == pytest.approx(
        [117 / 304, 146 / 304, 41 / 304, 158 / 304]
    )
    assert [group["human_mean"] for group in finance[:3]] == pytest.approx([0.5, 0.25, 0.25])
    assert [group["judge_mean"] for group in finance[:3]] == pytest.approx([3 / 8, 4 / 8, 1 / 8])
    confusion = data["confusion"][0]
    assert confusion["matrix"] == [[2, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert (confusion["observed_agreement"], confusion["kappa"]) == (1.0, 1.0)
    assert confusion["chance_agreement"] == pytest.approx((2 * 2 + 1 + 1) / 16)


def test_confusion_matrix_counts_human_rows_by_judge_columns_and_kappa_is_cohens(db):
    campaign = make_campaign()
    criterion, judge, rows = categorical_campaign(campaign)
    data = categorical_report_as_json(report=compute_categorical_report(criterion=criterion, judge=judge))
    from sklearn.metrics import cohen_kappa_score

    for confusion in data["confusion"]:
        pairs = [
            (h, j)
            for theme, theme_rows in rows.items()
            if confusion["theme"] in (theme, "overall")
            for _, h, j in theme_rows["labeled"]
        ]
        matrix = [[sum(1 for h, j in pairs if (h, j) == (a, b)) for b in range(1, 6)] for a in range(1, 6)]
        assert confusion["matrix"] == matrix
        assert confusion["n"] == len(pairs)
        assert confusion["kappa"] == pytest.approx(
            cohen_kappa_score([h for h, _ in pairs], [j for _, j in pairs])
        )


def test_compute_report_refuses_a_categorical_criterion(db):
    campaign = make_campaign()
    criterion, judge, _ = categorical_campaign(campaign)
    with pytest.raises(errors.EstimateError, match="categories"):
        compute_report(criterion=criterion, judge=judge)


def test_no_labels_give_nan_estimates_and_an_empty_confusion(db):
    campaign = make_campaign()
    criterion = correctness(campaign)
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    unit = Unit.objects.get(answer=make_answer(campaign=campaign), level=Level.ANSWER)
    Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=5)
    data = categorical_report_as_json(report=compute_categorical_report(criterion=criterion, judge=judge))
    assert entry_of(data, "correct")["themes"][0]["ppi_mean"] is None
    assert entry_of(data, "correct")["themes"][0]["judge_mean"] == 1.0
    assert data["confusion"][-1] == {
        "theme": "overall",
        "values": [1, 2, 3, 4, 5],
        "matrix": [[0] * 5 for _ in range(5)],
        "n": 0,
        "observed_agreement": None,
        "chance_agreement": None,
        "kappa": None,
    }
    assert not math.isnan(entry_of(data, "correct")["overall"]["judge_mean"])


def test_the_answer_correctness_example_is_a_valid_definition():
    from annotation.corpus.conventions import ANSWER_CORRECTNESS
    from annotation.criteria.categories import check_definition

    categories, groups = check_definition(
        categories=ANSWER_CORRECTNESS["categories"], groups=ANSWER_CORRECTNESS["groups"]
    )
    assert [c.value for c in categories] == [1, 2, 3, 4, 5]
    assert groups == {"correct": [5], "hallucination": [2, 4], "abstention": [1, 3]}
