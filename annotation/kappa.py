"""Cohen's kappa, the one definition the app uses: between two people (``annotation.agreement``)
and between people and a judge (``evaluation.estimators``). Django-free.

kappa = (p_o - p_e) / (1 - p_e), computed by scikit-learn's ``cohen_kappa_score``. The one
degenerate case is decided here, the same way everywhere: when chance agreement is certain
(p_e = 1, both raters gave one and the same value throughout, so p_o = 1 as well) kappa is 0/0,
**undefined**, and the app shows a dash. It is never reported as 1: agreement that chance alone
guarantees says nothing about the raters. No pairs: undefined too.
"""

from __future__ import annotations

from collections.abc import Sequence


def cohen_kappa(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items (``a[i]`` and ``b[i]``), or None
    when undefined (no items, or chance agreement certain). Any label values; binary here."""
    if len(a) != len(b):
        raise ValueError(f"two raters, two label lists of one length: got {len(a)} and {len(b)}")
    if not a or (len(set(a)) == 1 and set(a) == set(b)):
        return None
    # Imported here: scikit-learn's metrics take half a second to import, and most requests
    # never compute a kappa.
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(a, b))
