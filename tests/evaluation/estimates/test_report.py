"""Estimates per theme and overall: the numbers equal ppi_py / the estimators on the same arrays."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import norm

from annotation.models import Criterion, Label, Level, Sample, SampleItem, Stage, Unit
from annotation.workflow import final_labels
from evaluation import errors
from evaluation.estimates import codec, inputs
from evaluation.estimates.report import compute_report
from evaluation.models import Judge, Judgment
from inference import intervals, notes
from inference.estimators import means
from inference.estimators.ppi import robust_ppi, study_ppi
from inference.reliability import agreement as agreement_module
from tests.factories import make_answer, make_campaign
from tests.judged import DESIGN, study_campaign

ALPHA = 0.05


def arrays(rows: dict[str, list]):
    """The direct arrays, from every row in unit order (no aggregation)."""
    paired = [(h, j) for _, h, j in rows["labeled"] if j is not None]
    y = np.array([h for h, _ in paired], dtype=float)
    yhat = np.array([j for _, j in paired], dtype=float)
    y_all = np.array([h for _, h, _ in rows["labeled"]], dtype=float)
    unl = np.array([j for _, _, j in rows["unlabeled"] if j is not None], dtype=float)
    yhat_all = np.array([j for _, _, j in rows["labeled"] + rows["unlabeled"] if j is not None], dtype=float)
    return y, yhat, y_all, unl, yhat_all


def close(actual, expected) -> bool:
    if expected is None or actual is None:
        return actual is expected
    return math.isclose(actual, expected, rel_tol=1e-12, abs_tol=1e-12)


def raw_ci(entry, key):
    """The computed bounds (ppi_py's for the study method): ``<key>_ci_raw`` when the interval
    is shown clipped to [0, 1], which ``<key>_ci`` then is."""
    shown = entry[f"{key}_ci"]
    assert all(bound is None or 0 <= bound <= 1 for bound in shown)
    raw = entry.get(f"{key}_ci_raw", shown)
    assert shown == [None if b is None else min(1.0, max(0.0, b)) for b in raw]
    return raw


def test_study_report_json_has_every_field_equal_to_ppi_py_on_the_same_arrays(db):
    campaign, criterion, judge, units = study_campaign()
    report = compute_report(criterion=criterion, judge=judge, method="study")
    data = json.loads(json.dumps(codec.report_as_json(report=report), allow_nan=False))
    assert (data["campaign"], data["criterion"], data["judge"], data["alpha"]) == (
        "Imported study",
        "relevance",
        "imported",
        0.05,
    )
    assert [theme["theme"] for theme in data["themes"]] == ["Finance", "IT", "RH"]
    z = norm.ppf(1 - ALPHA / 2)
    sizes = {}
    for entry in data["themes"]:
        rows = units[entry["theme"]]
        y, yhat, y_all, unl, yhat_all = arrays(rows)
        sizes[entry["theme"]] = len(rows["labeled"]) + len(rows["unlabeled"])
        assert entry["method"] == "study"
        assert entry["n_human"] == len(y_all)
        assert entry["n_paired"] == len(y)
        assert entry["n_judge"] == len(yhat_all)
        assert entry["size"] == sizes[entry["theme"]]
        assert close(entry["human_mean"], y_all.mean())
        assert raw_ci(entry, "human") == pytest.approx(list(classical_mean_ci(y_all, alpha=ALPHA)), rel=1e-12)
        assert close(entry["judge_mean"], yhat_all.mean())
        assert raw_ci(entry, "judge") == pytest.approx(
            list(classical_mean_ci(yhat_all, alpha=ALPHA)), rel=1e-12
        )
        assert ("judge: bound clipped to [0, 1]" in entry["notes"]) == ("judge_ci_raw" in entry)
        assert (entry["human_method"], entry["judge_method"], entry["ppi_method"]) == (
            "classical",
            "judge-only",
            "ppi++",
        )
        point = ppi_mean_pointestimate(y, yhat, unl, lam=None)
        lo, hi = ppi_mean_ci(y, yhat, unl, alpha=ALPHA, lam=None)
        assert entry["ppi_mean"] == pytest.approx(float(point[0]), rel=1e-12)
        assert raw_ci(entry, "ppi") == pytest.approx([float(lo[0]), float(hi[0])], rel=1e-12)
        # The power-tuning lambda, by hand: Cov(Y, Yhat) / ((1 + n/N) Var(Yhat)), clipped to [0, 1]
        # (ppi_py: the covariance over n, the variance of all judge labels over n + N - 1).
        n, big_n = len(y), len(unl)
        pooled = np.concatenate([yhat, unl])
        lam = np.cov(y, yhat, ddof=0)[0, 1] / ((1 + n / big_n) * pooled.var(ddof=1))
        assert entry["lambda"] == pytest.approx(min(max(lam, 0.0), 1.0), rel=1e-9, abs=1e-12)
        observed = float(np.mean(y == yhat))
        chance = y.mean() * yhat.mean() + (1 - y.mean()) * (1 - yhat.mean())
        assert close(entry["observed_agreement"], observed)
        assert close(entry["chance_agreement"], chance)
        assert close(entry["kappa"], (observed - chance) / (1 - chance))
        assert entry["confusion"] == {
            "tp": int(((y == 1) & (yhat == 1)).sum()),
            "fp": int(((y == 0) & (yhat == 1)).sum()),
            "fn": int(((y == 1) & (yhat == 0)).sum()),
            "tn": int(((y == 0) & (yhat == 0)).sum()),
        }
        half = (raw_ci(entry, "ppi")[1] - raw_ci(entry, "ppi")[0]) / 2
        theta = entry["ppi_mean"]
        assert entry["effective_n"] == pytest.approx(z**2 * theta * (1 - theta) / half**2, rel=1e-9)
        missing = [unit.pk for unit, _, j in rows["labeled"] if j is None]
        assert entry["missing_judgments"] == missing
        assert entry["n_missing_judgments"] == (0 if entry["theme"] == "RH" else 1)

    overall = data["overall"]
    assert overall["theme"] == "overall"
    assert overall["method"] == "study"
    total = sum(sizes.values())
    assert overall["n_human"] == sum(t["n_human"] for t in data["themes"])
    assert overall["n_judge"] == sum(t["n_judge"] for t in data["themes"])
    for key in ("human", "judge", "ppi"):
        by_hand = sum(sizes[t["theme"]] / total * t[f"{key}_mean"] for t in data["themes"])
        assert overall[f"{key}_mean"] == pytest.approx(by_hand, rel=1e-12)
    parts = [(group.ppi, group.size) for group in report.themes]
    combined = intervals.stratified_combine(parts=parts, alpha=ALPHA, method="study")
    assert raw_ci(overall, "ppi") == pytest.approx([combined.lo, combined.hi], rel=1e-12)
    assert overall["ppi_ci"][0] < overall["ppi_mean"] < overall["ppi_ci"][1]
    everything = [(h, j) for rows in units.values() for _, h, j in rows["labeled"] if j is not None]
    agreement = agreement_module.agreement(
        y=np.array([h for h, _ in everything]), yhat=np.array([j for _, j in everything])
    )
    assert close(overall["observed_agreement"], agreement.observed)
    assert close(overall["kappa"], agreement.kappa)
    assert overall["n_missing_judgments"] == 2
    assert sorted(overall["missing_judgments"]) == sorted(
        unit.pk for rows in units.values() for unit, _, j in rows["labeled"] if j is None
    )
    half = (raw_ci(overall, "ppi")[1] - raw_ci(overall, "ppi")[0]) / 2
    theta = overall["ppi_mean"]
    assert overall["effective_n"] == pytest.approx(z**2 * theta * (1 - theta) / half**2, rel=1e-9)


def test_robust_report_passes_design_weights_and_answer_clusters_to_robust_ppi(db):
    campaign, criterion, judge, units = study_campaign()
    sample = Sample.objects.create(campaign=campaign, criterion=criterion, status=Sample.Status.DONE)
    probabilities = {}
    for theme, rows in units.items():
        for index, (unit, _, _) in enumerate(rows["labeled"]):
            pi = 0.2 if index % 3 else 0.5
            probabilities[unit.pk] = pi
            SampleItem.objects.create(
                sample=sample,
                unit=unit,
                theme=theme,
                cluster=index % 3,
                cluster_size=5,
                inclusion_probability=pi,
            )
    report = compute_report(criterion=criterion, judge=judge)
    assert report.method == "robust" and report.sample_id == sample.pk
    for group in report.themes:
        rows = units[group.theme]
        paired = [(u, h, j) for u, h, j in rows["labeled"] if j is not None]
        y, yhat, y_all, unl, _ = arrays(rows)
        expected = robust_ppi(
            y=y,
            yhat=yhat,
            yhat_unlabeled=unl,
            alpha=ALPHA,
            w=np.array([1 / probabilities[u.pk] for u, _, _ in paired]),
            clusters=np.array([u.answer_id for u, _, _ in paired]),
        )
        assert group.weighted
        assert group.ppi.mean == pytest.approx(expected.mean, rel=1e-12)
        assert (group.ppi.lo, group.ppi.hi) == pytest.approx((expected.lo, expected.hi), rel=1e-12)
        assert group.ppi.method == expected.method
        human = means.classical_mean(
            y=y_all,
            alpha=ALPHA,
            w=np.array([1 / probabilities[u.pk] for u, _, _ in rows["labeled"]]),
            clusters=np.array([u.answer_id for u, _, _ in rows["labeled"]]),
            population=group.size,
        )
        assert (group.human.mean, group.human.lo, group.human.hi) == pytest.approx(
            (human.mean, human.lo, human.hi), rel=1e-12
        )


def test_robust_report_without_a_sample_uses_equal_weights_and_says_so(db):
    _, criterion, judge, units = study_campaign()
    report = compute_report(criterion=criterion, judge=judge, method="robust")
    finance = report.themes[0]
    y, yhat, _, unl, _ = arrays(units["Finance"])
    paired = [u for u, _, j in units["Finance"]["labeled"] if j is not None]
    expected = robust_ppi(
        y=y, yhat=yhat, yhat_unlabeled=unl, alpha=ALPHA, clusters=np.array([u.answer_id for u in paired])
    )
    assert not finance.weighted
    assert any("no sample drawn" in note for note in finance.notes)
    assert (finance.ppi.mean, finance.ppi.lo, finance.ppi.hi) == pytest.approx(
        (expected.mean, expected.lo, expected.hi), rel=1e-12
    )


def test_sentence_level_criterion_clusters_sentences_by_answer(db):
    campaign = make_campaign(name="Sentences")
    criterion = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    labeled, unlabeled_values = [], []
    for index in range(12):
        answer = make_answer(campaign=campaign, theme="Finance")
        for position, unit in enumerate(Unit.objects.filter(answer=answer, level=Level.SENTENCE)):
            verdict = (index + position) % 3 != 0
            Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=int(verdict))
            if index < 6:
                human = int(index % 4 != 0)
                Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=human)
                labeled.append((unit.answer_id, human, int(verdict)))
            else:
                unlabeled_values.append(int(verdict))
    report = compute_report(criterion=criterion, judge=judge)
    group = report.themes[0]
    assert (group.n_human, group.n_judge, group.size) == (12, 24, 24)
    expected = robust_ppi(
        y=np.array([h for _, h, _ in labeled], dtype=float),
        yhat=np.array([j for _, _, j in labeled], dtype=float),
        yhat_unlabeled=np.array(unlabeled_values, dtype=float),
        alpha=ALPHA,
        clusters=np.array([a for a, _, _ in labeled]),
    )
    assert (group.ppi.mean, group.ppi.lo, group.ppi.hi) == pytest.approx(
        (expected.mean, expected.lo, expected.hi), rel=1e-12
    )


def test_aggregated_unlabeled_array_gives_the_same_ppi_numbers_as_the_real_array():
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 40).astype(float)
    yhat = np.where(rng.random(40) < 0.85, y, 1 - y)
    real = (rng.random(5003) < 0.63).astype(float)
    shortcut = inputs.ones_zeros(ones=int(real.sum()), count=len(real))
    assert shortcut.mean() == real.mean()
    assert shortcut.var(ddof=1) == pytest.approx(real.var(ddof=1), rel=1e-13)
    for lam in (None, 1.0):
        assert ppi_mean_pointestimate(y, yhat, shortcut, lam=lam)[0] == pytest.approx(
            ppi_mean_pointestimate(y, yhat, real, lam=lam)[0], rel=1e-13
        )
        lo_s, hi_s = ppi_mean_ci(y, yhat, shortcut, alpha=ALPHA, lam=lam)
        lo_r, hi_r = ppi_mean_ci(y, yhat, real, alpha=ALPHA, lam=lam)
        assert (lo_s[0], hi_s[0]) == pytest.approx((lo_r[0], hi_r[0]), rel=1e-13)
    robust_s = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=shortcut, alpha=ALPHA)
    robust_r = robust_ppi(y=y, yhat=yhat, yhat_unlabeled=real, alpha=ALPHA)
    assert (robust_s.mean, robust_s.lo, robust_s.hi) == pytest.approx(
        (robust_r.mean, robust_r.lo, robust_r.hi), rel=1e-12
    )


def test_report_from_sql_aggregates_equals_ppi_py_on_arrays_read_row_by_row(db):
    _, criterion, judge, _ = study_campaign()
    report = compute_report(criterion=criterion, judge=judge, method="study")
    finals = final_labels(criterion=criterion)
    verdicts = dict(
        Judgment.objects.filter(judge=judge, criterion=criterion, status="ok").values_list("unit_id", "value")
    )
    for group in report.themes:
        ids = (
            Unit.objects.filter(theme=group.theme, level=Level.ANSWER)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        y = np.array([finals[i] for i in ids if i in finals and i in verdicts], dtype=float)
        yhat = np.array([verdicts[i] for i in ids if i in finals and i in verdicts], dtype=float)
        unl = np.array([verdicts[i] for i in ids if i not in finals and i in verdicts], dtype=float)
        lo, hi = ppi_mean_ci(y, yhat, unl, alpha=ALPHA, lam=None)
        assert group.ppi.mean == pytest.approx(ppi_mean_pointestimate(y, yhat, unl, lam=None)[0], rel=1e-13)
        assert (group.ppi.lo, group.ppi.hi) == pytest.approx((lo[0], hi[0]), rel=1e-13)


def test_hand_computed_case_with_a_perfect_judge():
    # A judge that always agrees: with lambda clipped at 1, PPI++ is the judge's mean over all units.
    y = np.array([1, 1, 0, 1, 0, 1, 1, 0], dtype=float)
    unl = np.array([1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1], dtype=float)
    interval = study_ppi(y=y, yhat=y.copy(), yhat_unlabeled=unl, alpha=ALPHA)
    # lambda = Var(y) / ((1 + 8/12) Var(all judge labels)) = 0.234375 / (1.6667 * 0.2395) < 1.
    pooled = np.concatenate([y, unl])
    lam = y.var(ddof=0) / ((1 + 8 / 12) * pooled.var(ddof=1))
    assert interval.lam == pytest.approx(lam, rel=1e-9)
    assert interval.mean == pytest.approx(lam * unl.mean() + (1 - lam) * y.mean() + 0.0, rel=1e-9)
    agreement = agreement_module.agreement(y=y, yhat=y.copy())
    assert agreement.observed == 1.0
    assert agreement.chance == pytest.approx((5 / 8) ** 2 + (3 / 8) ** 2)
    assert agreement.kappa == pytest.approx(1.0)


def test_missing_judgments_are_counted_listed_and_left_out_of_ppi(db):
    _, criterion, judge, units = study_campaign()
    unit = units["RH"]["labeled"][0][0]
    Judgment.objects.filter(unit=unit, criterion=criterion).update(status="failed", value=None)
    report = compute_report(criterion=criterion, judge=judge, method="study")
    rh = next(group for group in report.themes if group.theme == "RH")
    assert rh.missing_judgments == [unit.pk]
    assert (rh.n_human, rh.n_paired) == (7, 6)
    assert unit.pk in report.overall.missing_judgments
    assert len(report.overall.missing_judgments) == 3
    assert any("no judgment" in note for note in rh.notes)


def test_by_difficulty_adds_one_group_per_theme_and_difficulty(db):
    _, criterion, judge, units = study_campaign()
    report = compute_report(criterion=criterion, judge=judge, method="study", by_difficulty=True)
    cells = {(group.theme, group.difficulty): group for group in report.by_difficulty}
    assert set(cells) == {(t, d) for t in DESIGN for d in ("hard", "simple")}
    for theme in DESIGN:
        assert cells[(theme, "hard")].n_judge + cells[(theme, "simple")].n_judge == next(
            group.n_judge for group in report.themes if group.theme == theme
        )
    data = codec.report_as_json(report=report)
    assert {entry["difficulty"] for entry in data["by_difficulty"]} == {"hard", "simple"}


def test_a_theme_without_human_labels_gets_null_estimates_not_an_error(db):
    design = {**DESIGN, "Juridique": ([], [1, 0, 1])}
    _, criterion, judge, _ = study_campaign(design=design)
    report = compute_report(criterion=criterion, judge=judge, method="study")
    data = json.loads(json.dumps(codec.report_as_json(report=report)))
    legal = next(entry for entry in data["themes"] if entry["theme"] == "Juridique")
    assert legal["n_human"] == 0 and legal["n_judge"] == 3
    assert legal["ppi_mean"] is None and legal["ppi_ci"] == [None, None]
    assert legal["kappa"] is None and legal["effective_n"] is None
    assert legal["judge_mean"] == pytest.approx(2 / 3)
    assert data["overall"]["ppi_mean"] is None


def test_alpha_changes_the_interval_width(db):
    _, criterion, judge, _ = study_campaign()
    wide = compute_report(criterion=criterion, judge=judge, alpha=0.05, method="study")
    narrow = compute_report(criterion=criterion, judge=judge, alpha=0.2, method="study")
    assert narrow.themes[0].ppi.halfwidth < wide.themes[0].ppi.halfwidth
    assert narrow.themes[0].ppi.alpha == 0.2


def test_bad_method_alpha_or_foreign_judge_are_refused(db):
    _, criterion, judge, _ = study_campaign()
    with pytest.raises(errors.EstimateError, match="method"):
        compute_report(criterion=criterion, judge=judge, method="bayes")
    with pytest.raises(errors.EstimateError, match="alpha"):
        compute_report(criterion=criterion, judge=judge, alpha=1.5)
    other = Judge.objects.create(
        campaign=make_campaign(name="Other"), name="lexical", kind=Judge.Kind.LEXICAL
    )
    with pytest.raises(errors.EstimateError, match="another campaign"):
        compute_report(criterion=criterion, judge=other)


def test_a_theme_with_one_label_has_a_point_estimate_and_null_bounds(db):
    design = {**DESIGN, "Juridique": ([(1, 1)], [1, 0, 1])}
    _, criterion, judge, _ = study_campaign(design=design)
    report = compute_report(criterion=criterion, judge=judge, method="study")
    data = json.loads(json.dumps(codec.report_as_json(report=report), allow_nan=False))
    legal = next(entry for entry in data["themes"] if entry["theme"] == "Juridique")
    assert legal["human_mean"] == 1.0 and legal["human_ci"] == [None, None]
    assert legal["ppi_ci"] == [None, None] and legal["ppi_mean"] is not None
    assert any("one label" in note for note in legal["notes"])
    assert data["overall"]["ppi_ci"] == [None, None]


def test_labels_partly_outside_the_sample_fall_back_to_equal_weights_and_study_ignores_the_sample(db):
    campaign, criterion, judge, units = study_campaign()
    sample = Sample.objects.create(campaign=campaign, criterion=criterion, status=Sample.Status.DONE)
    unit = units["Finance"]["labeled"][0][0]
    SampleItem.objects.create(
        sample=sample, unit=unit, theme="Finance", cluster=0, cluster_size=4, inclusion_probability=0.25
    )
    robust = compute_report(criterion=criterion, judge=judge)
    finance = robust.themes[0]
    assert not finance.weighted
    assert any("not all from the current sample" in note for note in finance.notes)
    study = compute_report(criterion=criterion, judge=judge, method="study")
    assert study.sample_id is None and not study.themes[0].weighted


def test_final_labels_take_the_latest_imported_label_of_each_unit(db):
    _, criterion, judge, units = study_campaign()
    unit, human, _ = units["Finance"]["labeled"][0]
    Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=1 - human)
    finals = final_labels(criterion=criterion)
    assert finals[unit.pk] == 1 - human
    assert len(finals) == sum(len(rows["labeled"]) for rows in units.values())
    report = compute_report(criterion=criterion, judge=judge, method="study")
    assert report.overall.n_human == len(finals)


def test_robust_effective_n_is_measured_against_the_human_only_interval_shown(db):
    _, criterion, judge, _ = study_campaign()
    for alpha in (0.05, 0.01):
        report = compute_report(criterion=criterion, judge=judge, method="robust", alpha=alpha)
        for group in [*report.themes, report.overall]:
            human, ppi = group.human, group.ppi
            if not (math.isfinite(human.halfwidth) and human.halfwidth > 0 and ppi.halfwidth > 0):
                continue
            assert group.effective_n == pytest.approx(human.n * (human.halfwidth / ppi.halfwidth) ** 2)
            if ppi.halfwidth <= human.halfwidth:
                assert group.effective_n >= group.n_paired
            for interval in (human, group.judge, ppi):
                assert 0 <= interval.lo <= interval.hi <= 1 and not interval.clipped


def _repeated_questions():
    """Ten questions of Finance asked four times each (answer level); half the answers labeled;
    the judge right but on one answer in five."""
    from annotation.models import Question

    campaign = make_campaign(name="Repeated")
    criterion = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    rng = np.random.default_rng(3)
    rows = []
    for q in range(10):
        question = Question.objects.create(
            campaign=campaign,
            external_id=f"R{q}",
            text=f"Question {q} ?",
            theme="Finance",
            difficulty="simple",
        )
        rate = rng.uniform(0.2, 0.95)
        for a in range(4):
            unit = Unit.objects.get(
                answer=make_answer(campaign=campaign, question=question), level=Level.ANSWER
            )
            truth = int(rng.random() < rate)
            verdict = truth if rng.random() > 0.2 else 1 - truth
            Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=verdict)
            human = truth if a % 2 == 0 else None
            if human is not None:
                Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=human)
            rows.append((unit, q, human, verdict))
    return criterion, judge, rows


def test_questions_as_clusters_speak_of_the_assistant_beyond_these_answers(db):
    criterion, judge, rows = _repeated_questions()
    by_question = compute_report(criterion=criterion, judge=judge, clusters="question")
    by_answer = compute_report(criterion=criterion, judge=judge)
    finance, default = by_question.themes[0], by_answer.themes[0]
    labeled = sorted((unit.pk, q, h, j) for unit, q, h, j in rows if h is not None)
    unlabeled = [(q, j) for unit, q, h, j in sorted(rows, key=lambda r: r[1]) if h is None]
    y = np.array([h for _, _, h, _ in labeled], dtype=float)
    yhat = np.array([j for _, _, _, j in labeled], dtype=float)
    questions = [Unit.objects.get(pk=u).answer.question_id for u, _, _, _ in labeled]
    unlabeled_questions = {q: [] for q, _ in unlabeled}
    for q, j in unlabeled:
        unlabeled_questions[q].append(j)
    question_ids = {q: Unit.objects.get(pk=u).answer.question_id for u, q, _, _ in labeled}
    # The judge's labels on the unlabeled units, question by question, ones then zeros.
    yhat_unlabeled = np.concatenate([sorted(v, reverse=True) for _, v in sorted(unlabeled_questions.items())])
    unlabeled_clusters = np.concatenate(
        [[question_ids[q]] * len(v) for q, v in sorted(unlabeled_questions.items())]
    )
    expected = robust_ppi(
        y=y,
        yhat=yhat,
        yhat_unlabeled=yhat_unlabeled,
        alpha=ALPHA,
        clusters=questions,
        unlabeled_clusters=unlabeled_clusters,
        finite=False,
    )
    assert finance.ppi.mean == pytest.approx(expected.mean, rel=1e-12)
    assert (finance.ppi.lo, finance.ppi.hi) == pytest.approx((expected.lo, expected.hi), rel=1e-12)
    human = means.classical_mean(y=y, alpha=ALPHA, clusters=questions)
    assert (finance.human.lo, finance.human.hi) == pytest.approx((human.lo, human.hi), rel=1e-12)
    # Ten questions for twenty labels: fewer clusters, no finite-population correction, the
    # judge's term a sample too: wider than the interval about this campaign's answers.
    assert finance.ppi.df == 9 and default.ppi.df == 19
    assert finance.ppi.halfwidth > default.ppi.halfwidth
    assert notes.BY_QUESTION in finance.notes and notes.BY_QUESTION not in default.notes
    assert (by_question.clusters, by_answer.clusters) == ("question", "answer")
    assert codec.report_as_json(report=by_question)["clusters"] == "question"


def test_unknown_clusters_are_refused_naming_the_field(db):
    criterion, judge, _ = _repeated_questions()
    with pytest.raises(errors.EstimateError) as refused:
        compute_report(criterion=criterion, judge=judge, clusters="theme")
    assert refused.value.field == "clusters"


def test_a_label_reads_the_judges_counts_kept_and_a_judgment_reads_them_again(campaign):
    """The judge's labels counted over the campaign's units (1 to 2 s of PostgreSQL at a million
    units) are kept under the units and the judge's judgments: a human label computes the
    estimates again without them, a judgment judged again in place counts them again."""
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.judged import judged_campaign

    criterion, judge, _ = judged_campaign(campaign)

    def computed():
        with CaptureQueriesContext(connection) as queries:
            report = compute_report(criterion=criterion, judge=judge, method="study")
        counted = [
            q["sql"] for q in queries.captured_queries if 'COUNT("evaluation_judgment"."id")' in q["sql"]
        ]
        return report, len(counted)

    first, counted = computed()
    assert counted == 1
    unit = (
        Unit.objects.filter(campaign=campaign, level=Level.ANSWER)
        .exclude(pk__in=Label.objects.values("unit_id"))
        .order_by("pk")
        .first()
    )
    Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=0)
    labelled, counted = computed()
    assert counted == 0 and labelled.overall.n_human == first.overall.n_human + 1
    cache.clear()
    assert computed()[0] == labelled  # the same numbers as counted afresh
    judgment = (
        Judgment.objects.filter(judge=judge, criterion=criterion).exclude(unit=unit).order_by("pk").last()
    )
    judgment.value = 1 - judgment.value
    judgment.save()
    rejudged, counted = computed()
    assert counted == 1 and rejudged.overall.judge.mean != labelled.overall.judge.mean
