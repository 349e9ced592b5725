"""The judge on a criterion with categories: told the categories, held to their values with
strict JSON, never the lexical baseline."""

from __future__ import annotations

import pytest

from annotation.models import Level, Unit
from evaluation.judge import prompts, runs
from evaluation.judge.client import JudgeClient
from evaluation.judge.parsing import VerdictError, parse_verdicts
from evaluation.models import Judge, Judgment
from tests.categorical import correctness
from tests.factories import make_answer
from tests.llm_server import ScriptedLLMServer

pytestmark = pytest.mark.django_db
VALUES = (1, 2, 3, 4, 5)


@pytest.mark.parametrize(("label", "value"), [(3, 3), ("5", 5), (2.0, 2), (" 1 ", 1)])
def test_a_category_value_is_read_as_a_number(label, value):
    written = f'"{label}"' if isinstance(label, str) else str(label)
    reply = '{"verdicts": [{"index": 0, "reasoning": "r", "label": ' + written + "}]}"
    assert parse_verdicts(reply, expected_indices=[0], labels=VALUES)[0].label == value


@pytest.mark.parametrize("label", ["0", "6", "true", "true_json", '"fully correct"', "2.5"])
def test_anything_but_a_category_value_is_refused(label):
    text = {"true": '"true"', "true_json": "true", "0": "0", "6": "6", "2.5": "2.5"}.get(label, label)
    reply = '{"verdicts": [{"index": 0, "reasoning": "r", "label": ' + text + "}]}"
    with pytest.raises(VerdictError, match="is not one of the category values 1, 2, 3, 4, 5"):
        parse_verdicts(reply, expected_indices=[0], labels=VALUES)


def test_binary_parsing_is_unchanged():
    assert parse_verdicts('{"label": true}', expected_indices=[0])[0].label == 1
    with pytest.raises(VerdictError, match="is not 0 or 1"):
        parse_verdicts('{"label": 3}', expected_indices=[0])


def test_the_prompt_lists_the_categories_and_asks_for_one_value_in_both_languages():
    listed = [(1, "Pas assez d'information"), (5, "Entièrement correcte")]
    french = prompts.system_prompt(name="correctness", level="answer", title="Exactitude", categories=listed)
    assert "Catégories (valeur : intitulé) :\n1: Pas assez d'information\n5: Entièrement correcte" in french
    assert "la valeur d'une des catégories : 1, 5." in french
    assert "0 sinon" not in french
    english = prompts.system_prompt(
        name="relevance", level="answer", title="Correctness", categories=listed, language="en"
    )
    # A categorical criterion named like a built-in one still gets the categorical framing.
    assert "Categories (value: title):" in english and "relevance of an answer" not in english
    assert prompts.verdict_schema(VALUES)["properties"]["verdicts"]["items"]["properties"]["label"] == {
        "type": "integer",
        "enum": [1, 2, 3, 4, 5],
    }


def test_the_json_schema_response_format_holds_the_category_values():
    client = JudgeClient(
        base_url="http://127.0.0.1:9", api_key="k", model="m", response_format="json_schema", labels=VALUES
    )
    assert client._format["json_schema"]["schema"]["properties"]["verdicts"]["items"]["properties"]["label"][
        "enum"
    ] == [1, 2, 3, 4, 5]


def test_an_llm_run_stores_the_category_values_and_retries_a_reply_out_of_range(campaign):
    criterion = correctness(campaign)
    for _ in range(3):
        make_answer(campaign=campaign)
    units = list(Unit.objects.filter(campaign=campaign, level=Level.ANSWER).order_by("pk"))
    replies = iter([9, 4, 2, 5])
    with ScriptedLLMServer(labeler=lambda index, body: next(replies)) as server:
        judge = runs.get_or_create_judge(
            campaign=campaign, name="gpt", model="scripted", base_url=server.base_url
        )
        judge.settings.update({"timeout_s": 2.0, "max_attempts": 2, "backoff_base_s": 0.01})
        judge.save()
        runs.run_inline(run_id=runs.create_run(criterion=criterion, judge=judge, concurrency=1).pk)
        system = server.requests[0]["messages"][0]["content"]
    assert "5: Fully correct" in system
    stored = dict(Judgment.objects.filter(criterion=criterion, status="ok").values_list("unit_id", "value"))
    assert sorted(stored.values()) == [2, 4, 5]
    assert set(stored) == {unit.pk for unit in units}


def test_the_lexical_judge_is_refused_on_categories(campaign):
    criterion = correctness(campaign)
    judge = Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    with pytest.raises(runs.RunError) as refused:
        runs.create_run(criterion=criterion, judge=judge)
    assert refused.value.field == "judge"
    assert "the lexical judge gives 0 or 1 only; 'correctness' has categories" in str(refused.value)
