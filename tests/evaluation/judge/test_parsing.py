from __future__ import annotations

import pytest

from evaluation.judge.parsing import Verdict, VerdictError, parse_verdicts

VALID = (
    '{"verdicts": ['
    '{"index": 0, "reasoning": "Politesse.", "label": 1}, '
    '{"index": 1, "reasoning": "12,4 M€ figure dans la source.", "label": 1}, '
    '{"index": 2, "reasoning": "Effectif absent des sources.", "label": 0}'
    "]}"
)
EXPECTED = [
    Verdict(index=0, label=1, reasoning="Politesse."),
    Verdict(index=1, label=1, reasoning="12,4 M€ figure dans la source."),
    Verdict(index=2, label=0, reasoning="Effectif absent des sources."),
]


def test_a_plain_verdicts_object_is_parsed():
    assert parse_verdicts(VALID, expected_indices=[0, 1, 2]) == EXPECTED


def test_verdicts_come_back_sorted_by_index():
    reply = (
        '{"verdicts": [{"index": 2, "reasoning": "c", "label": 0}, '
        '{"index": 0, "reasoning": "a", "label": 1}]}'
    )
    assert [v.index for v in parse_verdicts(reply, expected_indices=[2, 0])] == [0, 2]


def test_fenced_json_with_prose_around_is_parsed():
    reply = f"Voici mes verdicts :\n```json\n{VALID}\n```\nJ'espère que cela aide."
    assert parse_verdicts(reply, expected_indices=[0, 1, 2]) == EXPECTED


def test_a_fence_without_language_is_parsed():
    assert parse_verdicts(f"```\n{VALID}\n```", expected_indices=[0, 1, 2]) == EXPECTED


def test_leading_and_trailing_prose_without_fence_is_tolerated():
    reply = f"Après analyse de chaque phrase [voir ci-dessous] :\n{VALID}\nFin de l'analyse."
    assert parse_verdicts(reply, expected_indices=[0, 1, 2]) == EXPECTED


def test_a_bare_list_instead_of_the_object_is_accepted():
    reply = '[{"index": 0, "reasoning": "ok", "label": 1}, {"index": 1, "reasoning": "non", "label": 0}]'
    assert [v.label for v in parse_verdicts(reply, expected_indices=[0, 1])] == [1, 0]


def test_trailing_commas_are_tolerated_but_not_inside_strings():
    reply = '{"verdicts": [{"index": 0, "reasoning": "a, ]", "label": 1,},],}'
    assert parse_verdicts(reply, expected_indices=[0]) == [Verdict(index=0, label=1, reasoning="a, ]")]


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("1", 1),
        ("0", 0),
        ('"1"', 1),
        ('"0"', 0),
        ("true", 1),
        ("false", 0),
        ("1.0", 1),
        ("0.0", 0),
        ('"true"', 1),
    ],
)
def test_label_spellings_are_normalised_to_0_or_1(raw, label):
    reply = f'{{"verdicts": [{{"index": 0, "reasoning": "r", "label": {raw}}}]}}'
    assert parse_verdicts(reply, expected_indices=[0])[0].label == label


@pytest.mark.parametrize("raw", ["2", "-1", "0.5", '"yes"', "null", '"oui"', "[1]"])
def test_labels_outside_0_and_1_are_rejected(raw):
    reply = f'{{"verdicts": [{{"index": 0, "reasoning": "r", "label": {raw}}}]}}'
    with pytest.raises(VerdictError, match="label .* is not 0 or 1"):
        parse_verdicts(reply, expected_indices=[0])


def test_an_index_written_as_a_string_is_accepted_but_not_a_boolean():
    assert parse_verdicts('[{"index": "3", "label": 1, "reasoning": ""}]', expected_indices=[3])[0].index == 3
    with pytest.raises(VerdictError, match="not an integer"):
        parse_verdicts('[{"index": true, "label": 1, "reasoning": ""}]', expected_indices=[1])


def test_a_lone_verdict_without_index_is_accepted_when_one_is_expected():
    assert parse_verdicts('{"reasoning": "Hors sujet.", "label": 0}', expected_indices=[0]) == [
        Verdict(index=0, label=0, reasoning="Hors sujet.")
    ]


def test_a_verdict_without_index_is_rejected_when_several_are_expected():
    reply = '{"verdicts": [{"label": 1, "reasoning": ""}, {"index": 1, "label": 1, "reasoning": ""}]}'
    with pytest.raises(VerdictError, match="has no index"):
        parse_verdicts(reply, expected_indices=[0, 1])


def test_a_missing_reasoning_becomes_empty():
    assert parse_verdicts('[{"index": 0, "label": 1}]', expected_indices=[0])[0].reasoning == ""


def test_a_verdict_without_label_is_rejected():
    with pytest.raises(VerdictError, match="verdict 0 has no label"):
        parse_verdicts('[{"index": 0, "reasoning": "r"}]', expected_indices=[0])


def test_a_missing_index_is_rejected_and_named():
    reply = (
        '{"verdicts": [{"index": 0, "reasoning": "", "label": 1}, {"index": 1, "reasoning": "", "label": 1}]}'
    )
    with pytest.raises(VerdictError, match=r"missing \[2\]"):
        parse_verdicts(reply, expected_indices=[0, 1, 2])


def test_an_unexpected_index_is_rejected_and_named():
    reply = (
        '{"verdicts": [{"index": 0, "reasoning": "", "label": 1}, {"index": 5, "reasoning": "", "label": 1}]}'
    )
    with pytest.raises(VerdictError, match=r"unexpected \[5\]"):
        parse_verdicts(reply, expected_indices=[0])


def test_a_duplicate_index_is_rejected_and_named():
    reply = (
        '{"verdicts": [{"index": 1, "reasoning": "", "label": 1}, {"index": 1, "reasoning": "", "label": 0}]}'
    )
    with pytest.raises(VerdictError, match=r"duplicated \[1\]"):
        parse_verdicts(reply, expected_indices=[1])


def test_truncated_json_is_rejected_as_truncated():
    with pytest.raises(VerdictError, match="truncated"):
        parse_verdicts(VALID[: len(VALID) // 2], expected_indices=[0, 1, 2])


def test_truncation_after_a_complete_inner_verdict_is_still_rejected():
    # The only verdict is complete but the object around it never closes: the reply was cut.
    reply = '{"verdicts": [{"index": 0, "reasoning": "Répond à la question.", "label": 1}'
    with pytest.raises(VerdictError, match="truncated"):
        parse_verdicts(reply, expected_indices=[0])


def test_a_truncated_fenced_reply_is_rejected():
    with pytest.raises(VerdictError, match="truncated"):
        parse_verdicts(f"```json\n{VALID[:40]}", expected_indices=[0, 1, 2])


def test_prose_without_json_is_rejected():
    with pytest.raises(VerdictError, match="no JSON"):
        parse_verdicts("Toutes les phrases sont exactes.", expected_indices=[0])


def test_python_style_quotes_are_rejected_as_invalid_json():
    with pytest.raises(VerdictError, match="not valid JSON"):
        parse_verdicts("{'verdicts': [{'index': 0, 'label': 1}]}", expected_indices=[0])


@pytest.mark.parametrize("reply", ["", "   \n"])
def test_an_empty_reply_is_rejected(reply):
    with pytest.raises(VerdictError, match="empty"):
        parse_verdicts(reply, expected_indices=[0])


def test_json_of_the_wrong_shape_is_rejected():
    with pytest.raises(VerdictError, match="'verdicts' list"):
        parse_verdicts('{"result": "ok"}', expected_indices=[0])
    with pytest.raises(VerdictError, match="must be a list"):
        parse_verdicts('{"verdicts": {"index": 0, "label": 1}}', expected_indices=[0])
    with pytest.raises(VerdictError, match="not an object"):
        parse_verdicts("[1, 0]", expected_indices=[0, 1])


def test_verdict_error_is_a_value_error():
    assert issubclass(VerdictError, ValueError)
