"""Where our code calls a library's private functions, each behind one small function, pinned
to the version it was written against. A new version of the library fails here, saying what to
re-check before moving the pin (requirements.txt) and the version the code names."""

from __future__ import annotations

import ast
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from annotation.corpus import language
from inference.estimators import ppi

ROOT = Path(__file__).resolve().parents[1]

# (distribution, the version the code names, what to re-check on another version)
PRIVATE_USES = [
    (
        "ppi-python",
        ppi.PPI_PY_VERSION,
        "inference/estimators/ppi.py: study_lambda calls ppi_py.ppi._calc_lam_glm, private, to report the "
        "lambda that ppi_mean_ci(lam=None) uses. Re-check that ppi_mean_pointestimate and ppi_mean_ci "
        "still compute lambda with _calc_lam_glm(grads, grads_hat, grads_hat_unlabeled, eye(1), "
        "coord=None, clip=True, optim_mode='overall') around the lam=1 point estimate (or that a public "
        "function now returns lambda), run tests/inference/estimators/test_ppi.py, then set PPI_PY_VERSION.",
    ),
    (
        "langdetect",
        language.LANGDETECT_VERSION,
        "annotation/corpus/language.py: _Detector overrides langdetect's private "
        "Detector._extract_ngrams and _detect_block and calls _init_probability, copying their "
        "arithmetic to run faster. Re-check them against langdetect/detector.py (and "
        "NGram.add_char, which _extract_ngrams inlines), run tests/annotation/corpus/test_text.py "
        "(test_the_faster_detector_gives_exactly_langdetects_probabilities), then set "
        "LANGDETECT_VERSION; or drop _Detector for the public factory.create().",
    ),
]


def _pinned() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        found = re.match(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s;#]+)", line.strip())
        if found:
            pins[found.group(1).lower()] = found.group(2)
    return pins


@pytest.mark.parametrize(
    ("distribution", "written_against", "recheck"), PRIVATE_USES, ids=[use[0] for use in PRIVATE_USES]
)
def test_a_private_library_use_runs_on_the_version_it_was_written_against(
    distribution, written_against, recheck
):
    pinned = _pinned()[distribution]
    installed = version(distribution)
    assert (installed, pinned) == (written_against, written_against), (
        f"{distribution} {installed} is installed and {pinned} pinned in requirements.txt, but our code "
        f"uses its private API as of {written_against}. {recheck}"
    )


def test_the_pins_name_every_private_import_from_a_library():
    """``from lib import _name`` anywhere in the app is one of the uses above (a new one needs its
    own pin here)."""
    ours = ("annotation", "evaluation", "inference", "api", "integrations", "config")
    private_imports = set()
    for package in ours:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.level == 0
                    and node.module
                    and node.module.split(".")[0] not in ours
                ):
                    private_imports.update(
                        f"{node.module}.{alias.name}" for alias in node.names if alias.name.startswith("_")
                    )
    assert private_imports == {"ppi_py.ppi._calc_lam_glm"}
