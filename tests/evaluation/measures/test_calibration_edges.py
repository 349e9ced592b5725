"""The reliability bins with scikit-learn's edge convention (evaluation.measures.calibration,
``edges="sklearn"``) against ``sklearn.calibration.calibration_curve`` itself."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from evaluation.measures.calibration import LOWER, SKLEARN, calibration


@pytest.mark.parametrize("seed", range(10))
def test_sklearn_edges_give_sklearns_bins(seed):
    rng = np.random.default_rng(seed)
    # Probabilities on the edges (0.1, 0.3, ...) as a judge's rounded confidences give them.
    p = np.concatenate([rng.random(200), rng.integers(0, 11, 100) / 10])
    y = (rng.random(p.size) < p).astype(float)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    ours = calibration(p, y, edges=SKLEARN)
    assert np.abs(np.array([b.observed for b in ours.bins]) - prob_true).max() < 1e-12
    assert np.abs(np.array([b.mean_probability for b in ours.bins]) - prob_pred).max() < 1e-12


def test_the_two_conventions_differ_on_an_edge_only():
    p = np.array([0.1, 0.15, 0.55])
    y = np.array([1.0, 0.0, 1.0])
    lower, upper = calibration(p, y, edges=LOWER), calibration(p, y, edges=SKLEARN)
    assert [b.count for b in lower.bins] == [2, 1]  # 0.1 opens the bin [0.1, 0.2)
    assert [b.count for b in upper.bins] == [1, 1, 1]  # 0.1 closes the bin (0, 0.1]
    assert lower.brier == upper.brier
    with pytest.raises(ValueError):
        calibration(p, y, edges="middle")
