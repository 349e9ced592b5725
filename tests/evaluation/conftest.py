"""Fixtures the evaluation tests share across their rooms."""

from __future__ import annotations

import copy

import pytest

from tests.evaluation.measures.test_comparison import _outcomes, _version


@pytest.fixture(scope="module")
def _three_versions(module_transaction):
    """Three versions of the assistant that asked the same 20 questions (``_outcomes``: the
    second a little worse, the third much worse), built once for a module."""
    return [
        _version("Assistant v1", _outcomes(1, 0.0)),
        _version("Assistant v2", _outcomes(2, 0.1)),
        _version("Assistant v3", _outcomes(3, 0.3)),
    ]


@pytest.fixture
def three_versions(_three_versions, db):
    """``_three_versions`` for one test: its writes rolled back after it, the objects copied."""
    return copy.deepcopy(_three_versions)
