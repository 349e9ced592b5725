"""The judge's confidence in each verdict: the probability it gives the label it chose.

Three sources, by a judge's ``settings["confidence"]``:

- ``logprobs`` (the default of LLM judges): the reply's token log-probabilities, which the
  request asks for (``logprobs`` with ``top_logprobs``; OpenAI-compatible servers such as vLLM
  return them). The token that writes a verdict's label (the value after ``"label":``) carries
  the log-probabilities of the alternatives the model weighed at that point; the confidence is
  the chosen value's probability renormalised over the label values among them (the criterion's
  values: 0 and 1, or a categorical criterion's values). A server that returns no
  log-probabilities, or a reply whose label tokens cannot all be found, gives no confidence
  (None): never a guess.
- ``samples``: the same prompt is completed k times in one request (``n``, k from
  ``settings["confidence_samples"]``, 5 by default; the judge's temperature must be above 0 for
  the completions to differ); the label is the first completion's, the confidence the share of
  the completions whose verdicts parse that give the same label. It costs k times the completion
  tokens.
- ``verbal``: the judge is asked for a ``confidence`` between 0 and 1 in each verdict (the
  prompt says so); read by ``evaluation.judge.parsing``. Verbalised confidence is known to be
  overconfident: the calibration on the report shows by how much.
- ``none``: no confidence.

The offline lexical judge gives a score of its own (``evaluation.judge.lexical``).

Nothing here touches the database: pure functions over the reply's JSON.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence

LOGPROBS, SAMPLES, VERBAL, NONE = "logprobs", "samples", "verbal", "none"
MODES = (LOGPROBS, SAMPLES, VERBAL, NONE)
# Completions asked for each prompt by a judge whose confidence comes from sampled verdicts,
# unless its settings say otherwise (``confidence_samples``).
DEFAULT_SAMPLES = 5
# Alternatives asked for each token: enough to see every value of a binary label and most of a
# categorical one (OpenAI's limit is 20).
TOP_LOGPROBS = 5

# The reply so far ends where a label's value starts: after "label": (or "label": "), not after
# an escaped quote inside a string.
_BEFORE_LABEL = re.compile(r'(?<!\\)"label"\s*:\s*"?\s*$')


def mode_of(settings: dict) -> str:
    """The judge's confidence source (``settings["confidence"]``), ``logprobs`` by default."""
    mode = str(settings.get("confidence") or LOGPROBS)
    return mode if mode in MODES else LOGPROBS


def samples_of(settings: dict) -> int:
    """How many completions a judge with sampled verdicts asks for (at least 2)."""
    try:
        return max(2, int(settings.get("confidence_samples") or DEFAULT_SAMPLES))
    except (TypeError, ValueError):
        return DEFAULT_SAMPLES


def other_contents(raw: dict) -> list[str]:
    """The contents of a reply's choices after the first (sampled completions)."""
    choices = raw.get("choices") if isinstance(raw, dict) else None
    if not isinstance(choices, list):
        return []
    found = []
    for choice in choices[1:]:
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            found.append(content)
    return found


def agreement_shares(labels: Sequence[int], samples: Sequence[Sequence[int]]) -> list[float]:
    """For each verdict's label, the share of the completions (the first included) giving it:
    ``samples`` holds the labels of each other completion, in the same order as ``labels``."""
    return [
        (1 + sum(1 for other in samples if other[i] == label)) / (1 + len(samples))
        for i, label in enumerate(labels)
    ]


def _value(token: str) -> int | None:
    text = token.strip().strip('"').strip()
    return int(text) if text.isdigit() else None


def token_logprobs(raw: dict) -> list[dict] | None:
    """The per-token log-probabilities of a chat completion's first choice (``raw``: the reply's
    JSON), or None when the server gave none."""
    choices = raw.get("choices") if isinstance(raw, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list) or not content:
        return None
    return [token for token in content if isinstance(token, dict)]


def label_probabilities(tokens: Sequence[dict], *, values: Collection[int]) -> list[float]:
    """The probability of each label written in the reply, in the order the labels appear.

    ``tokens``: the reply's tokens, each ``{"token", "logprob", "top_logprobs": [{"token",
    "logprob"}, ...]}``; ``values``: the label values the criterion allows. A label token's
    probability is its own renormalised over the allowed values among the alternatives (itself
    included): a model that put 0.6 on "1", 0.3 on "0" and 0.1 elsewhere gives 0.6 / 0.9.
    """
    allowed = set(values)
    text = ""
    found: list[float] = []
    for token in tokens:
        piece = str(token.get("token", ""))
        chosen = _value(piece)
        if chosen is not None and chosen in allowed and _BEFORE_LABEL.search(text):
            weights = {chosen: math.exp(float(token.get("logprob", 0.0)))}
            for other in token.get("top_logprobs") or []:
                value = _value(str(other.get("token", "")))
                if value is not None and value in allowed and value not in weights:
                    weights[value] = math.exp(float(other.get("logprob", -math.inf)))
            total = sum(weights.values())
            found.append(weights[chosen] / total if total > 0 else 1.0)
        text += piece
        if len(text) > 200:
            text = text[-100:]  # only the end is ever looked at
    return found


def verdict_probabilities(raw: dict, *, count: int, values: Collection[int]) -> list[float] | None:
    """The probabilities of the ``count`` verdicts of a reply, in the order they appear in it;
    None when the reply has no log-probabilities or not exactly ``count`` label tokens."""
    tokens = token_logprobs(raw)
    if tokens is None:
        return None
    found = label_probabilities(tokens, values=values)
    return found if len(found) == count else None


def without_logprobs(raw: dict) -> dict:
    """The reply's JSON for the audit record, the token log-probabilities left out (several times
    the reply's size; what they gave is stored on each judgment)."""
    choices = raw.get("choices") if isinstance(raw, dict) else None
    if not isinstance(choices, list) or not any(isinstance(c, dict) and c.get("logprobs") for c in choices):
        return raw
    kept = []
    for choice in choices:
        if isinstance(choice, dict) and choice.get("logprobs"):
            content = choice["logprobs"].get("content") if isinstance(choice["logprobs"], dict) else None
            tokens = len(content) if isinstance(content, list) else 0
            choice = {**choice, "logprobs": {"omitted": f"{tokens} tokens' log-probabilities"}}
        kept.append(choice)
    return {**raw, "choices": kept}
