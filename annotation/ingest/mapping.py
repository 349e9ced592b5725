"""Mapping files: how a file's own column names and vocabulary translate into the import format.

A mapping is a JSON object. Its short form renames columns only::

    {"Question ID": "question_id", "Réponse": "answer"}

Its full form renames columns and translates the values of ``theme`` and ``difficulty``; the
key ``""`` gives the value that an empty or missing cell stands for::

    {"columns": {"Thème": "theme", "Niveau": "difficulty"},
     "values": {"theme": {"Financial": "Finance"},
                "difficulty": {"intermédiaire": "intermediate", "": "inappropriate"}}}

Values are matched exactly, once trimmed; a value the mapping does not list is kept as it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal
from annotation.ingest.errors import CANNOT_BE_READ, INVALID_JSON_AT_LINE, NOT_UTF8, ImportFailed, RowError

# The fields whose values a mapping may translate: the ones estimates and metrics group by.
VALUE_FIELDS = ("theme", "difficulty")
SECTIONS = ("columns", "values")
# Nesting a mapping file may have: {"values": {"theme": {"a": "b"}}} is three levels.
_MAX_DEPTH = 3


@dataclass(frozen=True)
class ImportMapping:
    """Column renaming (file name -> our name) and value translation (our field -> file value
    -> our value, ``""`` standing for an empty or missing value)."""

    columns: dict[str, str] = field(default_factory=dict)
    values: dict[str, dict[str, str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.columns or self.values)


def _problem(*, name: str, key: str, message: str | Promise) -> RowError:
    return RowError(file=name, row=None, field=key, message=message)


def read_mapping(*, path: Path, name: str) -> ImportMapping:
    """The mapping in the JSON file at ``path`` (called ``name`` in errors).

    Raises ImportFailed naming the file and the key at fault when the file is not UTF-8 JSON
    of the shape ``check_mapping`` accepts.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ImportFailed(
            [_problem(name=name, key="mapping", message=refusal(CANNOT_BE_READ, reason=exc.strerror or exc))]
        ) from None
    try:
        mapping = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ImportFailed(
            [_problem(name=name, key="mapping", message=refusal(NOT_UTF8, line=line))]
        ) from None
    except json.JSONDecodeError as exc:
        raise ImportFailed(
            [
                _problem(
                    name=name,
                    key="mapping",
                    message=refusal(INVALID_JSON_AT_LINE, line=exc.lineno, column=exc.colno, reason=exc.msg),
                )
            ]
        ) from None
    except RecursionError:
        raise ImportFailed(
            [
                _problem(
                    name=name,
                    key="mapping",
                    message=refusal(_("nested too deeply (at most %(levels)s levels)"), levels=_MAX_DEPTH),
                )
            ]
        ) from None
    return check_mapping(mapping=mapping, name=name)


def _names(*, value: object, name: str, key: str, problems: list[RowError]) -> dict[str, str]:
    """``value`` as a dict of non-empty names to non-empty names; problems name ``key[...]``."""
    if not isinstance(value, dict):
        problems.append(
            _problem(
                name=name, key=key, message=_('must be an object such as {"Question ID": "question_id"}')
            )
        )
        return {}
    result = {}
    for source, target in value.items():
        if not (isinstance(source, str) and source.strip() and isinstance(target, str) and target.strip()):
            problems.append(
                _problem(name=name, key=f"{key}[{source!r}]", message=_("names must be non-empty strings"))
            )
            continue
        result[source.strip()] = target.strip()
    return result


def _values(*, value: object, name: str, problems: list[RowError]) -> dict[str, dict[str, str]]:
    if not isinstance(value, dict):
        problems.append(
            _problem(
                name=name,
                key="values",
                message=_('must be an object such as {"difficulty": {"intermédiaire": "intermediate"}}'),
            )
        )
        return {}
    result = {}
    for field_name, table in value.items():
        key = f"values[{field_name!r}]"
        if field_name not in VALUE_FIELDS:
            problems.append(
                _problem(
                    name=name,
                    key=key,
                    message=refusal(
                        _("only the values of %(fields)s can be mapped"), fields=" and ".join(VALUE_FIELDS)
                    ),
                )
            )
            continue
        if not isinstance(table, dict):
            problems.append(
                _problem(name=name, key=key, message=_('must be an object such as {"Financial": "Finance"}'))
            )
            continue
        translated = {}
        for source, target in table.items():
            if not isinstance(target, str) or not target.strip():
                problems.append(
                    _problem(name=name, key=f"{key}[{source!r}]", message=_("must be a non-empty string"))
                )
                continue
            # "" is a key of its own: the value an empty or missing cell stands for.
            translated[source.strip()] = target.strip()
        result[field_name] = translated
    return result


def check_mapping(*, mapping: object, name: str) -> ImportMapping:
    """``mapping`` (the decoded JSON) as an ImportMapping; else ImportFailed naming each bad key.

    The short form is an object of names; the full form an object with ``columns`` and/or
    ``values`` (see the module's docstring). An ImportMapping is returned as it is.
    """
    if isinstance(mapping, ImportMapping):
        return mapping
    if not isinstance(mapping, dict):
        raise ImportFailed(
            [
                _problem(
                    name=name,
                    key="mapping",
                    message=_('must be a JSON object such as {"Question ID": "question_id"}'),
                )
            ]
        )
    problems: list[RowError] = []
    if not any(isinstance(value, dict | list) for value in mapping.values()):
        result = ImportMapping(columns=_names(value=mapping, name=name, key="mapping", problems=problems))
    else:
        for key in mapping:
            if key not in SECTIONS:
                problems.append(
                    _problem(
                        name=name,
                        key=str(key),
                        message=_("unknown key: a mapping with values has only columns and values"),
                    )
                )
        result = ImportMapping(
            columns=_names(value=mapping.get("columns", {}), name=name, key="columns", problems=problems),
            values=_values(value=mapping.get("values", {}), name=name, problems=problems),
        )
    if problems:
        raise ImportFailed(problems)
    return result
