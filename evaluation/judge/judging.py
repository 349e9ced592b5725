"""Judging one batch: the lexical baseline, or the LLM through ``evaluation.judge.client``, asked
again (up to ``VERDICT_ATTEMPTS`` times) while its verdicts do not fit the units sent.

Nothing here writes to the database but the record of each request before it is sent (``calls``,
see ``evaluation.judge.accounting``): what a batch's judging gave is an ``Outcome``, stored by
``evaluation.judge.storage``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from django.conf import settings

from annotation.criteria.categories import allowed_values
from annotation.models import Criterion, CriterionVersion, Level
from evaluation.judge import confidence
from evaluation.judge.accounting import BatchCallLog, judge_prices
from evaluation.judge.client import (
    SETUP,
    BudgetExceeded,
    JudgeClient,
    PermanentError,
    TokenBudget,
    TransientError,
)
from evaluation.judge.inputs import BatchInput, build_messages
from evaluation.judge.lexical import lexical_relevance, lexical_veracity
from evaluation.judge.parsing import Verdict, VerdictError, parse_verdicts
from evaluation.models import Judge

# A reply whose verdicts do not fit is asked again this many times before the batch fails.
VERDICT_ATTEMPTS = 3


@dataclass
class Outcome:
    """What judging one batch gave: a verdict or a failure reason per unit, and what it spent."""

    verdicts: dict[int, Verdict]  # unit id -> verdict
    failures: dict[int, str]  # unit id -> reason its verdict is missing
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_ms: int = 0
    calls: int = 0
    raw: str = ""
    # One entry per reply of the server, accepted or rejected (JudgeBatch.llm_calls).
    log: list[dict] = field(default_factory=list)
    # The token budget ran out before the batch could be judged.
    budget_stopped: bool = False


# The key sent to a server given by its address when OPENAI_API_KEY is not set: vLLM, Ollama and
# llama.cpp's server need none, and the SDK wants one.
NO_KEY = "not-needed"


class NoServer(PermanentError):
    """Neither an API key nor a server address is configured for an LLM judge."""


def server_of(judge: Judge) -> tuple[str | None, str]:
    """The address (None: the SDK's default, OpenAI's) and the key of an LLM judge's server: the
    judge's ``base_url`` or ``OPENAI_BASE_URL``, and ``OPENAI_API_KEY`` (``NO_KEY`` for a server
    given by its address). ``NoServer`` when neither a key nor an address is configured."""
    base_url = judge.settings.get("base_url") or settings.OPENAI_BASE_URL
    api_key = settings.OPENAI_API_KEY or (NO_KEY if base_url else "")
    if not api_key:
        raise NoServer(
            "OPENAI_API_KEY is not set: use the 'lexical' judge, or configure a server", kind=SETUP
        )
    return base_url, api_key


def client_for(
    judge: Judge, *, budget: TokenBudget | None = None, labels: tuple[int, ...] = (0, 1)
) -> JudgeClient:
    """The client of an LLM judge (its server, model and settings); PermanentError when no server
    or key is configured (``NoServer``). ``labels``: the criterion's label values
    (``allowed_values``)."""
    base_url, api_key = server_of(judge)
    prices = judge_prices(judge)
    mode = confidence.mode_of(judge.settings)
    return JudgeClient(
        base_url=base_url,
        api_key=api_key,
        model=judge.model,
        temperature=judge.temperature,
        timeout_s=float(judge.settings.get("timeout_s", settings.OPENAI_TIMEOUT_S)),
        max_attempts=int(judge.settings.get("max_attempts", settings.OPENAI_MAX_ATTEMPTS)),
        backoff_base_s=float(judge.settings.get("backoff_base_s", 0.5)),
        price_per_1k_prompt=prices[0],
        price_per_1k_completion=prices[1],
        budget=budget,
        shared=True,
        top_logprobs=confidence.TOP_LOGPROBS if mode == confidence.LOGPROBS else None,
        samples=confidence.samples_of(judge.settings) if mode == confidence.SAMPLES else None,
        labels=labels,
    )


def judge_lexically(*, data: BatchInput, criterion: Criterion) -> Outcome:
    """The offline baseline's verdicts on one batch: a verdict for every unit, no call."""
    verdicts: dict[int, Verdict] = {}
    # A citation item names its one source in ``cited_ids``: the sentence is compared with it alone.
    if criterion.level in (Level.SENTENCE, Level.CITATION):
        texts = {s["id"]: s["text"] for s in data.sources}
        for item in data.items:
            found = lexical_veracity(
                sentence=item["text"],
                sources=[texts[c] for c in item["cited_ids"] if c in texts],
                citation_pattern=data.citation_pattern,
            )
            verdicts[item["unit_id"]] = Verdict(
                index=item["index"], label=found.label, reasoning=found.reasoning, confidence=found.confidence
            )
    else:
        found = lexical_relevance(
            question=data.question, answer=data.answer, citation_pattern=data.citation_pattern
        )
        verdicts[data.items[0]["unit_id"]] = Verdict(
            index=0, label=found.label, reasoning=found.reasoning, confidence=found.confidence
        )
    return Outcome(verdicts=verdicts, failures={})


def judge_with_llm(
    *,
    data: BatchInput,
    criterion: Criterion,
    judge: Judge,
    client: JudgeClient,
    calls: Callable[[list[dict]], BatchCallLog] | None = None,
    texts: CriterionVersion | None = None,
) -> Outcome:
    """Ask the judge about one batch, again when its verdicts do not fit. ``calls`` makes the log
    that records each request before it is sent; ``texts`` as for ``build_messages``."""
    messages = build_messages(data=data, criterion=criterion, judge=judge, texts=texts)
    log = calls(messages) if calls is not None else None
    expected = [item["index"] for item in data.items]
    outcome = Outcome(verdicts={}, failures={})
    reason = ""
    for _ in range(VERDICT_ATTEMPTS):
        try:
            # The budget is checked before every request, so also between the attempts below.
            completion = client.complete(messages=messages, log=log)
        except BudgetExceeded:
            outcome.budget_stopped = True
            return outcome
        except (TransientError, PermanentError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            break
        cost = client.cost(completion)
        outcome.calls += 1
        outcome.prompt_tokens += completion.prompt_tokens
        outcome.completion_tokens += completion.completion_tokens
        outcome.cost += cost
        outcome.latency_ms += int(completion.latency_s * 1000)
        outcome.raw = completion.content
        call = {
            "accepted": False,
            "error": "",
            "finish_reason": completion.finish_reason or "",
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "cost": cost,
            "latency_ms": int(completion.latency_s * 1000),
            "http_attempts": completion.attempts,
            "raw_response": confidence.without_logprobs(completion.raw),
            "call_id": completion.call_id,
        }
        outcome.log.append(call)
        try:
            verdicts = parse_verdicts(
                completion.content, expected_indices=expected, labels=allowed_values(criterion)
            )
        except VerdictError as exc:
            reason = f"invalid verdicts (finish_reason={completion.finish_reason}): {exc}"
            call["error"] = reason[:2000]
            continue
        call["accepted"] = True
        verdicts = _with_confidence(
            verdicts,
            raw=completion.raw,
            mode=confidence.mode_of(judge.settings),
            expected=expected,
            labels=allowed_values(criterion),
        )
        by_index = {v.index: v for v in verdicts}
        outcome.verdicts = {item["unit_id"]: by_index[item["index"]] for item in data.items}
        return outcome
    outcome.failures = {item["unit_id"]: reason or "no reply" for item in data.items}
    return outcome


def _with_confidence(
    verdicts: list[Verdict], *, raw: dict, mode: str, expected: list[int], labels: tuple[int, ...]
) -> list[Verdict]:
    """The verdicts with the judge's confidence in each (``evaluation.judge.confidence``): from
    the reply's log-probabilities, the other sampled completions, or as the judge wrote it
    (verbal), or none."""
    if mode == confidence.VERBAL:
        return verdicts
    if mode == confidence.SAMPLES:
        # Completions whose verdicts do not parse are left out of the share.
        samples = []
        for content in confidence.other_contents(raw):
            try:
                samples.append(
                    [v.label for v in parse_verdicts(content, expected_indices=expected, labels=labels)]
                )
            except VerdictError:
                continue
        shares = confidence.agreement_shares([v.label for v in verdicts], samples)
        return [replace(v, confidence=share) for v, share in zip(verdicts, shares, strict=True)]
    if mode == confidence.LOGPROBS:
        found = confidence.verdict_probabilities(raw, count=len(verdicts), values=labels)
        if found is not None:
            return [replace(v, confidence=found[v.position]) for v in verdicts]
    return [replace(v, confidence=None) for v in verdicts]
