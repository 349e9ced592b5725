"""Choice names to 0/1 and back: the vocabulary of another annotation tool.

Built in (matched without case, once trimmed): ``1``, ``yes``, ``true``, ``supported`` mean 1;
``0``, ``no``, ``false``, ``unsupported`` mean 0; the numbers 0 and 1 mean themselves. A mapping
file (JSON) adds names and renames the tool's questions to criteria::

    {"values": {"Supported": 1, "Not supported": 0},
     "criteria": {"faithful": "veracity"}}

An export writes, for each value, the first name the mapping gives it (``1`` and ``0`` without
one), so that importing with a mapping and exporting with the same mapping gives the same names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from annotation.ingest.errors import ImportFailed, RowError

BUILT_IN: dict[str, int] = {
    "1": 1,
    "yes": 1,
    "true": 1,
    "supported": 1,
    "0": 0,
    "no": 0,
    "false": 0,
    "unsupported": 0,
}
SECTIONS = ("values", "criteria")


@dataclass(frozen=True)
class Vocabulary:
    """Names of values (lower-cased) -> 0/1, the tool's question names -> criteria, and the
    names an export writes for 0 and 1."""

    values: dict[str, int] = field(default_factory=lambda: dict(BUILT_IN))
    criteria: dict[str, str] = field(default_factory=dict)
    names: tuple[str, str] = ("0", "1")

    def value(self, raw: object) -> int | None:
        """0 or 1 for a choice name or number this vocabulary knows; None otherwise."""
        if isinstance(raw, bool):
            return None
        if isinstance(raw, int | float) and raw in (0, 1):
            return int(raw)
        if isinstance(raw, str):
            return self.values.get(raw.strip().lower())
        return None

    def criterion(self, question: str) -> str:
        """The criterion a tool's question (Label Studio's from_name, Argilla's question name)
        stands for: its mapped name, else itself."""
        return self.criteria.get(question, question)

    def question(self, criterion: str) -> str:
        """The tool's question name an export gives ``criterion`` (the mapping read backwards)."""
        for question, name in self.criteria.items():
            if name == criterion:
                return question
        return criterion

    def name(self, value: int) -> str:
        """The choice name an export writes for ``value``."""
        return self.names[value]

    def known(self) -> str:
        """The names this vocabulary accepts, for error messages."""
        return ", ".join(sorted(self.values))


def _problem(name: str, key: str, message: str) -> ImportFailed:
    return ImportFailed([RowError(file=name, row=None, field=key, message=message)])


def check_vocabulary(*, mapping: object, name: str) -> Vocabulary:
    """The vocabulary a mapping (decoded JSON) describes; ImportFailed naming the mapping file
    and the key at fault when it is not of the documented shape."""
    if not isinstance(mapping, dict):
        raise _problem(name, "mapping", "must be a JSON object with 'values' and/or 'criteria'")
    unknown = sorted(set(mapping) - set(SECTIONS))
    if unknown:
        raise _problem(name, unknown[0], f"unknown key; the keys are {', '.join(SECTIONS)}")
    raw_values = mapping.get("values", {})
    if not isinstance(raw_values, dict):
        raise _problem(name, "values", "must be an object of choice names to 0 or 1")
    values = dict(BUILT_IN)
    first: dict[int, str] = {}
    for choice, value in raw_values.items():
        if isinstance(value, bool) or value not in (0, 1) or not str(choice).strip():
            raise _problem(name, f"values.{choice}", "must map a non-empty name to 0 or 1")
        values[str(choice).strip().lower()] = int(value)
        first.setdefault(int(value), str(choice).strip())
    raw_criteria = mapping.get("criteria", {})
    if not isinstance(raw_criteria, dict) or not all(
        isinstance(v, str) and v.strip() for v in raw_criteria.values()
    ):
        raise _problem(name, "criteria", "must be an object of question names to criterion names")
    criteria = {str(question): target.strip() for question, target in raw_criteria.items()}
    return Vocabulary(values=values, criteria=criteria, names=(first.get(0, "0"), first.get(1, "1")))


def read_vocabulary(*, path: str | Path | None) -> Vocabulary:
    """The vocabulary in the mapping file at ``path`` (the built-in one when None)."""
    if path is None:
        return Vocabulary()
    name = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise _problem(name, "mapping", f"cannot be read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _problem(name, "mapping", f"is not UTF-8 JSON: {exc}") from None
    except RecursionError:
        raise _problem(name, "mapping", "is nested too deeply to be a mapping") from None
    return check_vocabulary(mapping=data, name=name)
