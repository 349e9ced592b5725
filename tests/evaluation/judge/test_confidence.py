"""The judge's confidence in each verdict (log-probabilities, verbal) and its calibration."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from annotation.models import Criterion, Role, Unit
from evaluation.judge import confidence, runs
from evaluation.judge.parsing import parse_verdicts
from evaluation.measures import calibration
from evaluation.models import Judgment
from tests.factories import import_label, make_answer, member
from tests.llm_server import ScriptedLLMServer, Status

pytestmark = pytest.mark.django_db


def _token(text: str, logprob: float = 0.0, alternatives: dict[str, float] | None = None) -> dict:
    top = [{"token": text, "logprob": logprob}] + [
        {"token": t, "logprob": lp} for t, lp in (alternatives or {}).items()
    ]
    return {"token": text, "logprob": logprob, "top_logprobs": top}


def _tokens(*pieces) -> list[dict]:
    return [p if isinstance(p, dict) else _token(p) for p in pieces]


# Label probabilities from the reply's tokens


def test_a_label_token_s_probability_is_renormalised_over_the_allowed_values():
    tokens = _tokens(
        '{"verdicts": [{"index": ',
        "0",
        ', "reasoning": "ok", "label": ',
        _token("1", math.log(0.6), {"0": math.log(0.3), "yes": math.log(0.1)}),
        '}, {"index": 1, "reasoning": "non", "label": ',
        _token("0", math.log(0.8), {"1": math.log(0.2)}),
        "}]}",
    )
    found = confidence.label_probabilities(tokens, values=(0, 1))
    # 0.6 / (0.6 + 0.3): "yes" is not a label value; the second: 0.8 / (0.8 + 0.2)
    assert found == pytest.approx([0.6 / 0.9, 0.8])


def test_digits_that_are_not_labels_and_escaped_label_keys_in_reasoning_are_not_counted():
    tokens = _tokens(
        '{"index": ',
        "1",
        ', "reasoning": "le \\"label\\": ',
        "0",
        ' cité", "label": "',
        _token("1", math.log(0.7), {"0": math.log(0.3)}),
        '"}',
    )
    assert confidence.label_probabilities(tokens, values=(0, 1)) == pytest.approx([0.7])


def test_no_log_probabilities_or_a_count_that_does_not_match_give_no_confidence():
    assert confidence.verdict_probabilities({"choices": [{"logprobs": None}]}, count=1, values=(0, 1)) is None
    raw = {"choices": [{"logprobs": {"content": _tokens('{"label": ', "1", "}")}}]}
    assert confidence.verdict_probabilities(raw, count=1, values=(0, 1)) == [1.0]
    assert confidence.verdict_probabilities(raw, count=2, values=(0, 1)) is None


def test_the_audit_record_leaves_the_token_log_probabilities_out():
    raw = {"id": "x", "choices": [{"message": {"content": "{}"}, "logprobs": {"content": _tokens("a", "b")}}]}
    kept = confidence.without_logprobs(raw)
    assert kept["choices"][0]["logprobs"] == {"omitted": "2 tokens' log-probabilities"}
    assert kept["choices"][0]["message"] == {"content": "{}"}
    assert raw["choices"][0]["logprobs"]["content"]  # the reply itself is not changed


@pytest.mark.parametrize(
    ("written", "read"),
    [(0.8, 0.8), ("0.35", 0.35), ("85%", 0.85), (90, 0.9), ("high", None), (150, None), (True, None)],
)
def test_a_verbal_confidence_is_read_when_it_is_a_probability_or_a_percentage(written, read):
    reply = json.dumps({"verdicts": [{"index": 0, "reasoning": "r", "label": 1, "confidence": written}]})
    (verdict,) = parse_verdicts(reply, expected_indices=[0])
    assert verdict.label == 1
    assert verdict.confidence == (pytest.approx(read) if read is not None else None)


# Calibration


def test_brier_score_and_expected_calibration_error_by_hand():
    found = calibration.calibration(np.array([0.9, 0.9, 0.2, 0.6]), np.array([1, 0, 0, 1]))
    # Brier: (0.01 + 0.81 + 0.04 + 0.16) / 4
    assert found.brier == pytest.approx(0.255)
    # Bins 9 (two units, mean 0.9, half 1s), 2 (0.2, none) and 6 (0.6, all):
    # 2/4 x 0.4 + 1/4 x 0.2 + 1/4 x 0.4
    assert found.ece == pytest.approx(0.35)
    assert [(b.low, b.count, b.observed) for b in found.bins] == [(0.2, 1, 0.0), (0.6, 1, 1.0), (0.9, 2, 0.5)]
    assert calibration.calibration(np.array([1.0]), np.array([1])).bins[0].low == 0.9  # p = 1: last bin
    assert calibration.calibration(np.array([]), np.array([])).brier is None


def test_the_probability_of_a_one_follows_the_judge_s_label():
    assert calibration.probability_of_one(value=1, confidence=0.8) == 0.8
    assert calibration.probability_of_one(value=0, confidence=0.8) == pytest.approx(0.2)


# Through a real run against the scripted server


def _answers(campaign, n: int = 4):
    for i in range(n):
        make_answer(campaign=campaign, theme="Finance", text=f"Réponse {i} sur le chiffre d'affaires.")


def _judge(campaign, server, **settings):
    judge = runs.get_or_create_judge(
        campaign=campaign, name="gpt", model="scripted", base_url=server.base_url
    )
    judge.settings.update({"timeout_s": 2.0, "max_attempts": 3, "backoff_base_s": 0.01, **settings})
    judge.save()
    return judge


def _run(criterion, judge):
    run = runs.create_run(criterion=criterion, judge=judge)
    return runs.run_inline(run_id=run.pk)


@pytest.mark.django_db(transaction=True)
def test_a_run_asks_for_log_probabilities_and_stores_each_verdict_s_probability(campaign):
    _answers(campaign)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer(confidence=lambda index, body: 0.75, labeler=lambda i, body: 0) as server:
        judge = _judge(campaign, server)
        run = _run(relevance, judge)
        sent = server.requests
    assert all(body["logprobs"] is True and body["top_logprobs"] == confidence.TOP_LOGPROBS for body in sent)
    stored = list(Judgment.objects.filter(judge=judge).values_list("value", "confidence"))
    assert len(stored) == 4 and all(value == 0 and c == pytest.approx(0.75) for value, c in stored)
    audit = run.batches.first().llm_calls[0]["raw_response"]
    assert "omitted" in audit["choices"][0]["logprobs"]


@pytest.mark.django_db(transaction=True)
def test_a_server_that_refuses_log_probabilities_is_asked_again_without_them(campaign):
    _answers(campaign, n=1)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer() as server:
        server.enqueue(Status(400, "Invalid parameter: 'logprobs' is not supported with this model."))
        judge = _judge(campaign, server)
        run = _run(relevance, judge)
        sent = server.requests
    assert run.status == run.Status.DONE
    assert "logprobs" in sent[0] and "logprobs" not in sent[1]
    assert list(Judgment.objects.filter(judge=judge).values_list("value", "confidence")) == [(1, None)]


@pytest.mark.django_db(transaction=True)
def test_a_verbal_judge_is_asked_for_its_confidence_and_it_is_stored(campaign):
    _answers(campaign, n=2)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    with ScriptedLLMServer(confidence=lambda index, body: 0.6) as server:
        judge = _judge(campaign, server, confidence="verbal")
        _run(relevance, judge)
        sent = server.requests
    assert "logprobs" not in sent[0]
    assert '"confidence"' in sent[0]["messages"][0]["content"]
    assert [c for (c,) in Judgment.objects.filter(judge=judge).values_list("confidence")] == [0.6, 0.6]


@pytest.mark.django_db(transaction=True)
def test_the_report_shows_the_judge_s_calibration_against_the_final_labels(client, campaign):
    _answers(campaign, n=4)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    units = Unit.objects.filter(campaign=campaign, level="answer").order_by("id")
    for unit, value in zip(units, [1, 0, 1, 1], strict=True):
        import_label(unit=unit, criterion=relevance, value=value)
    with ScriptedLLMServer(confidence=lambda index, body: 0.9) as server:
        judge = _judge(campaign, server)
        _run(relevance, judge)
    found = calibration.judge_calibration(criterion=relevance, judge=judge)
    # The judge says 1 with 0.9 everywhere: Brier (3 x 0.01 + 0.81) / 4, one bin, 0.9 vs 75%
    assert found.count == 4 and found.brier == pytest.approx(0.21)
    assert found.ece == pytest.approx(0.15)
    client.force_login(member(campaign, Role.ANALYST))
    report = client.get(f"/campaigns/{campaign.slug}/reports/relevance/", {"judge": "gpt"}).content.decode()
    # The report loads the section when it comes into view: it reads every label.
    section_url = f"/campaigns/{campaign.slug}/reports/relevance/calibration/?judge=gpt"
    assert f'hx-get="{section_url}"' in report and "0.21" not in report
    section = client.get(section_url, headers={"HX-Request": "true"})
    html = section.content.decode()
    assert section.status_code == 200 and not html.lstrip().startswith("<!doctype")
    assert 'id="calibration-title"' in html and "0.21" in html and 'class="diagonal"' in html
    # Without htmx, a page of its own; a judge that is not the campaign's is refused.
    assert "<!doctype html>" in client.get(section_url).content.decode()
    refused = client.get(section_url.replace("judge=gpt", "judge=nope"))
    assert refused.status_code == 400 and "judge:" in refused.content.decode()


def test_only_managers_and_analysts_read_the_calibration(client, campaign):
    url = f"/campaigns/{campaign.slug}/reports/relevance/calibration/"
    client.force_login(member(campaign, Role.ANNOTATOR))
    assert client.get(url).status_code == 403
    from tests.factories import make_campaign

    other = make_campaign(name="Other")
    client.force_login(member(other, Role.ANALYST))
    assert client.get(url).status_code == 404


def test_the_lexical_judge_s_confidence_grows_with_the_overlap_s_distance_to_its_threshold():
    from evaluation.judge.lexical import SCORE_SLOPE, VERACITY_THRESHOLD, lexical_relevance, lexical_veracity

    source = "Le chiffre d'affaires consolidé atteint 148,6 M€ en 2023, en progression."
    sure = lexical_veracity(sentence="Le chiffre d'affaires consolidé atteint 148,6 M€.", sources=[source])
    # Every content word found: the overlap is 1, the margin 1 - threshold.
    margin = 1 - VERACITY_THRESHOLD
    assert sure.label == 1 and sure.confidence == pytest.approx(1 / (1 + math.exp(-SCORE_SLOPE * margin)))
    unsupported = lexical_veracity(sentence="La dette nette baisse fortement.", sources=[source])
    assert unsupported.label == 0 and unsupported.confidence > 0.9
    assert lexical_veracity(sentence="La dette baisse.", sources=[]).confidence == 0.95
    # A number the sources lack makes the verdict 0; with every word found, it is a toss-up.
    missing = lexical_veracity(sentence="Le chiffre d'affaires atteint 150 M€.", sources=[source])
    assert (missing.label, missing.confidence) == (0, 0.5)
    relevant = lexical_relevance(
        question="Quel est le chiffre d'affaires ?", answer="Le chiffre d'affaires est de 148,6 M€."
    )
    assert relevant.label == 1 and relevant.confidence > 0.9


def test_agreement_shares_by_hand():
    # Labels 1, 0 from the first completion; three others: (1, 0), (0, 0), (1, 1)
    assert confidence.agreement_shares([1, 0], [[1, 0], [0, 0], [1, 1]]) == [0.75, 0.75]
    assert confidence.agreement_shares([1], []) == [1.0]


@pytest.mark.django_db(transaction=True)
def test_a_judge_with_sampled_verdicts_asks_for_k_completions_and_stores_the_share_that_agree(campaign):
    _answers(campaign, n=2)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    # The first completion says 1; of the four others, the first says 0.
    with ScriptedLLMServer(sample_labeler=lambda index, body, choice: int(choice != 1)) as server:
        judge = _judge(campaign, server, confidence="samples", confidence_samples=5)
        _run(relevance, judge)
        sent = server.requests
    assert all(body["n"] == 5 and "logprobs" not in body for body in sent)
    assert sorted(Judgment.objects.filter(judge=judge).values_list("value", "confidence")) == [
        (1, 0.8),
        (1, 0.8),
    ]


# Choosing a judge's confidence source


def test_a_new_judge_keeps_its_confidence_source_and_another_is_refused(campaign):
    judge = runs.get_or_create_judge(campaign=campaign, name="gpt", model="m", confidence_source="verbal")
    assert confidence.mode_of(judge.settings) == confidence.VERBAL
    assert runs.get_or_create_judge(campaign=campaign, name="gpt", confidence_source="verbal") == judge
    with pytest.raises(runs.RunError, match="'gpt''s confidence comes from verbal"):
        runs.get_or_create_judge(campaign=campaign, name="gpt", confidence_source="logprobs")
    with pytest.raises(runs.RunError, match="confidence source 'guess' is unknown"):
        runs.get_or_create_judge(campaign=campaign, name="other", confidence_source="guess")
    assert (
        confidence.mode_of(runs.get_or_create_judge(campaign=campaign, name="plain").settings) == "logprobs"
    )


def test_the_runs_page_makes_a_judge_with_the_confidence_source_chosen(
    client_for, manager, campaign, settings
):
    from django.urls import reverse

    from evaluation.models import Judge

    url = reverse("evaluation:run_list", args=[campaign.slug])
    page = client_for(manager).get(url).content.decode()
    assert '<select name="confidence" id="confidence"><option value="logprobs">' in page
    with ScriptedLLMServer() as server:  # the server a new LLM judge is checked against
        settings.OPENAI_BASE_URL = server.base_url
        response = client_for(manager).post(
            url, {"criterion": "relevance", "judge": "gpt", "confidence": "samples"}
        )
    assert response.status_code == 302
    assert Judge.objects.get(name="gpt").settings["confidence"] == "samples"
    refused = client_for(manager).post(
        url, {"criterion": "relevance", "judge": "gpt2", "confidence": "guess"}
    )
    assert (
        refused.status_code == 400
        and "confidence: &#x27;guess&#x27; is not one of" in refused.content.decode()
    )


def test_the_judge_command_takes_a_confidence_source(campaign):
    from django.core.management import CommandError, call_command

    from evaluation.models import Judge

    with pytest.raises(CommandError, match="--confidence-samples must be at least 2"):
        call_command(
            "judge",
            "--campaign",
            campaign.name,
            "--criterion",
            "relevance",
            "--judge",
            "g",
            "--confidence",
            "samples",
            "--confidence-samples",
            "1",
        )
    assert not Judge.objects.filter(name="g").exists()


def test_the_calibration_is_kept_until_a_label_or_a_judgment_changes_it(campaign, django_assert_num_queries):
    from evaluation.models import Judge

    _answers(campaign, n=4)
    relevance = Criterion.objects.select_related("campaign").get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="gpt", kind="openai")
    units = list(Unit.objects.filter(campaign=campaign, level="answer").order_by("id"))
    for unit, value in zip(units[:3], [1, 0, 1], strict=True):
        import_label(unit=unit, criterion=relevance, value=value)
    for unit in units:  # the fourth unit is judged, not labelled: not part of the calibration
        Judgment.objects.create(unit=unit, criterion=relevance, judge=judge, value=1, confidence=0.9)
    first = calibration.judge_calibration(criterion=relevance, judge=judge)
    assert first.count == 3 and first.brier == pytest.approx((0.01 + 0.81 + 0.01) / 3)
    # Read again: the key's two queries (the labels', the judgments' versions) and nothing else.
    with django_assert_num_queries(2):
        assert calibration.judge_calibration(criterion=relevance, judge=judge) == first
    import_label(unit=units[3], criterion=relevance, value=0)
    labelled = calibration.judge_calibration(criterion=relevance, judge=judge)
    assert labelled.count == 4 and labelled.brier == pytest.approx((0.01 + 0.81 + 0.01 + 0.81) / 4)
    # A judgment judged again in place (a retry) moves its confidence and its update time.
    again = Judgment.objects.get(judge=judge, unit=units[1])
    again.confidence, again.value = 0.8, 0
    again.save()
    rejudged = calibration.judge_calibration(criterion=relevance, judge=judge)
    assert rejudged.brier == pytest.approx((0.01 + 0.04 + 0.01 + 0.81) / 4)


def test_the_calibration_shows_the_confidence_recalibrated_cross_fitted_beside_it(client, campaign):
    """An overconfident judge (it says 0.99 and is right three times in four): recalibrated on 24
    labels, cross-fitted by folds of answers, its probabilities come down toward 75%."""
    from evaluation.models import Judge
    from inference.reliability.calibration import crossfit

    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    judge = Judge.objects.create(campaign=campaign, name="sure", kind=Judge.Kind.IMPORTED)
    truths = [1, 1, 1, 0] * 6
    for index, truth in enumerate(truths):
        unit = Unit.objects.get(answer=make_answer(campaign=campaign), level="answer")
        import_label(unit=unit, criterion=relevance, value=truth)
        Judgment.objects.create(
            unit=unit, criterion=relevance, judge=judge, value=1, confidence=0.99 if index % 2 else 0.9
        )
    found = calibration.judge_calibration(criterion=relevance, judge=judge)
    assert found.after is not None and found.platt is not None and found.platt.labels == 24
    fit = crossfit(
        confidence=[0.99 if i % 2 else 0.9 for i in range(24)],
        labels=truths,
        clusters=[u.answer_id for u in Unit.objects.filter(campaign=campaign, level="answer").order_by("id")],
    )
    assert found.after.brier == pytest.approx(float(np.mean((fit.labeled - np.array(truths)) ** 2)))
    assert found.after.brier < found.brier and found.after.ece < found.ece
    client.force_login(member(campaign, Role.MANAGER))
    html = client.get(
        f"/campaigns/{campaign.slug}/reports/relevance/calibration/",
        {"judge": "sure"},
        headers={"HX-Request": "true"},
    ).content.decode()
    assert 'id="recalibrated"' in html and 'id="recalibration"' in html and "24" in html
