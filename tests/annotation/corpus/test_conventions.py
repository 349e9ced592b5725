"""The conventions' order of criteria: the answer's criteria first, citation support last."""

from __future__ import annotations

from annotation.corpus.conventions import BUILTIN_CRITERIA, criterion_order


def ordered(criteria: list[tuple[str, str]]) -> list[str]:
    return [name for name, level in sorted(criteria, key=lambda c: criterion_order(name=c[0], level=c[1]))]


def test_people_read_relevance_and_correctness_first_and_citation_support_last():
    criteria = [
        ("citation_support", "citation"),
        ("veracity", "sentence"),
        ("correctness", "answer"),
        ("relevance", "answer"),
    ]
    assert ordered(criteria) == ["relevance", "correctness", "veracity", "citation_support"]
    # The built-in criteria alone, as every campaign has them.
    assert ordered([(name, spec["level"]) for name, spec in BUILTIN_CRITERIA.items()]) == [
        "relevance",
        "veracity",
        "citation_support",
    ]


def test_a_campaigns_own_criteria_come_after_the_conventions_ones_of_their_level_by_name():
    criteria = [
        ("tone", "sentence"),
        ("completeness", "answer"),
        ("citation_support", "citation"),
        ("veracity", "sentence"),
        ("clarity", "answer"),
        ("relevance", "answer"),
        ("odd", "paragraph"),
    ]
    assert ordered(criteria) == [
        "relevance",
        "clarity",
        "completeness",
        "veracity",
        "tone",
        "citation_support",
        "odd",
    ]
