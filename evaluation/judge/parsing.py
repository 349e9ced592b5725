"""Turning a judge's reply into validated verdicts.

LLM replies are untrusted text. The parser is lenient about the wrapping (a ```json fence, prose
before or after, a bare list instead of the object, trailing commas, labels written "1", true or
1.0) and strict about the content: a reply that is cut short, covers the wrong indices, repeats
one, or gives a label other than 0 or 1 raises ``VerdictError`` with a message that says which.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

_FENCE = re.compile(r"```[ \t]*[A-Za-z]*[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)
_DECODER = json.JSONDecoder()
# Replies are small; a reply with more opening brackets than this before its JSON is not one.
_MAX_CANDIDATES = 200
_EXCERPT = 120


@dataclass(frozen=True)
class Verdict:
    index: int
    label: int
    reasoning: str
    # The judge's probability for its label (evaluation.judge.confidence), None when unknown.
    confidence: float | None = None
    # Where the verdict stands among the reply's verdicts (0: the first written); not part of
    # what a verdict says.
    position: int = field(default=0, compare=False)


class VerdictError(ValueError):
    """The reply does not hold one valid verdict per expected index (the message says why)."""


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT else text[: _EXCERPT - 3] + "..."


def _span_end(text: str, start: int) -> int | None:
    """End (exclusive) of the bracketed structure opening at ``start``; None when it never closes."""
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        char = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _without_trailing_commas(text: str) -> str:
    out: list[str] = []
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == ",":
            rest = text[i + 1 :].lstrip()
            if rest[:1] in ("}", "]"):
                continue
        out.append(char)
    return "".join(out)


def _decode(span: str) -> object:
    try:
        return json.loads(span)
    except json.JSONDecodeError:
        return json.loads(_without_trailing_commas(span))


def _acceptable(value: object) -> bool:
    if isinstance(value, list):
        return all(isinstance(item, dict) for item in value)
    return isinstance(value, dict) and ("verdicts" in {str(k).lower() for k in value} or "label" in value)


def _extract_json(content: str) -> object:
    """The first JSON object or list in ``content`` that looks like verdicts."""
    fenced = [m.group(1) for m in _FENCE.finditer(content) if "{" in m.group(1) or "[" in m.group(1)]
    text = fenced[0] if fenced else content
    first_decoded: object = None
    decoded_any = False
    last_error = ""
    position = 0
    for _ in range(_MAX_CANDIDATES):
        starts = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        end = _span_end(text, start)
        if end is None:
            # Trying brackets nested inside an unclosed structure would accept a verdict
            # salvaged from a reply that was cut short.
            raise VerdictError(
                f"the reply's JSON is truncated (it ends before its closing brackets): "
                f"...{_excerpt(text[-_EXCERPT:])}"
            )
        try:
            value = _decode(text[start:end])
        except json.JSONDecodeError as exc:
            last_error = f"{exc.msg} in {_excerpt(text[start:end])!r}"
            position = end
            continue
        if _acceptable(value):
            return value
        if not decoded_any:
            first_decoded, decoded_any = value, True
        position = end
    if decoded_any:
        return first_decoded
    if last_error:
        raise VerdictError(f"the reply is not valid JSON: {last_error}")
    raise VerdictError(f"the reply holds no JSON object: {_excerpt(content)!r}")


def _items(data: object) -> list:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key, value in data.items():
            if str(key).lower() == "verdicts":
                if not isinstance(value, list):
                    raise VerdictError(f"'verdicts' must be a list, got {type(value).__name__}")
                return value
        if "label" in data:
            return [data]
    raise VerdictError(f"expected an object with a 'verdicts' list, got {_excerpt(json.dumps(data))!r}")


def _as_index(value: object, *, position: int) -> int:
    if isinstance(value, bool):
        raise VerdictError(f"verdict #{position}: index {value!r} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise VerdictError(f"verdict #{position}: index {value!r} is not an integer")


def _as_label(value: object, *, index: int, labels: tuple[int, ...] = (0, 1)) -> int:
    if labels != (0, 1):
        return _as_category(value, index=index, labels=labels)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "false"):
            return int(word == "true")
        try:
            number = float(word)
        except ValueError:
            number = None
        if number in (0.0, 1.0):
            return int(number)
    raise VerdictError(f"verdict {index}: label {value!r} is not 0 or 1")


def _as_confidence(value: object) -> float | None:
    """A verbalised confidence: a number from 0 to 1 (or a percentage); None for anything else,
    which does not make the verdict invalid."""
    if isinstance(value, str):
        value = value.strip().rstrip("%")
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    if 0 <= value <= 1:
        return float(value)
    if 1 < value <= 100:
        return float(value) / 100
    return None


def _as_category(value: object, *, index: int, labels: tuple[int, ...]) -> int:
    """A category's value, written as a number or a numeric string; never a boolean."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is not None and number.is_integer() and int(number) in labels:
        return int(number)
    allowed = ", ".join(str(label) for label in labels)
    raise VerdictError(f"verdict {index}: label {value!r} is not one of the category values {allowed}")


def parse_verdicts(
    content: str, *, expected_indices: list[int], labels: tuple[int, ...] = (0, 1)
) -> list[Verdict]:
    """The verdicts in ``content``, one per expected index, sorted by index.

    Accepts ``{"verdicts": [...]}``, a bare list of verdicts, or a lone verdict object, possibly
    fenced or surrounded by prose, with trailing commas; labels may be 0/1, "0"/"1", true/false
    or 0.0/1.0. A verdict without an index is accepted only when exactly one is expected. Raises
    ``VerdictError`` for an empty reply, truncated or invalid JSON, missing, unexpected or
    duplicate indices, and labels other than 0 or 1. ``labels``: the values a categorical
    criterion's labels take (its category values), then the only labels accepted, as numbers.
    """
    if content is None or not content.strip():
        raise VerdictError("the reply is empty")
    items = _items(_extract_json(content))
    expected = {int(i) for i in expected_indices}
    verdicts: list[Verdict] = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise VerdictError(f"verdict #{position} is not an object: {_excerpt(json.dumps(item))!r}")
        if "index" in item:
            index = _as_index(item["index"], position=position)
        elif len(items) == 1 and len(expected) == 1:
            index = next(iter(expected))
        else:
            raise VerdictError(f"verdict #{position} has no index")
        if "label" not in item:
            raise VerdictError(f"verdict {index} has no label")
        reasoning = item.get("reasoning", "")
        verdicts.append(
            Verdict(
                index=index,
                label=_as_label(item["label"], index=index, labels=tuple(labels)),
                reasoning=reasoning if isinstance(reasoning, str) else json.dumps(reasoning),
                confidence=_as_confidence(item.get("confidence")),
                position=position,
            )
        )
    seen: set[int] = set()
    duplicated: set[int] = set()
    for verdict in verdicts:
        if verdict.index in seen:
            duplicated.add(verdict.index)
        seen.add(verdict.index)
    missing = sorted(expected - seen)
    unexpected = sorted(seen - expected)
    problems = [
        f"{name} {values}"
        for name, values in (
            ("missing", missing),
            ("unexpected", unexpected),
            ("duplicated", sorted(duplicated)),
        )
        if values
    ]
    if problems:
        raise VerdictError(
            f"the verdicts do not match the expected indices {sorted(expected)}: {'; '.join(problems)}"
        )
    return sorted(verdicts, key=lambda v: v.index)
