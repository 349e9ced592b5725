"""What an annotation tool's export says, tool-neutral: human labels and model predictions, each
with the unit it was written for and where in the file it came from (record and field), so a
refusal can name them."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.utils.dateparse import parse_datetime

from annotation.errors import refusal
from annotation.ingest.errors import ErrorLog, ImportFailed, RowError
from annotation.ingest.readers import TOO_DEEP_AT_LINE, too_deep_record
from annotation.text import clean_value


@dataclass(frozen=True)
class UnitKey:
    """How a record names its unit: the answer's external id, the sentence position (None: the
    answer itself) and, for a citation, the cited chunk's id (``source``); or Attest's unit id
    (our own exports carry both)."""

    answer_id: str | None = None
    sentence: int | None = None
    unit_id: int | None = None
    source: str | None = None


@dataclass(frozen=True)
class Author:
    """Who made a label, as the tool names them: Label Studio's user id and email, or Argilla's
    user id (a UUID); ``username`` when the file gives one."""

    tool: str
    key: str
    email: str = ""
    username: str = ""
    # No person made it (a label imported from a file, exported as authors.NO_AUTHOR_EMAIL).
    nobody: bool = False


@dataclass(frozen=True)
class HumanLabel:
    record: int
    field: str
    unit: UnitKey
    criterion: str
    author: Author
    value: int
    created_at: dt.datetime
    edited_at: dt.datetime | None = None
    seconds_spent: float | None = None
    comment: str = ""


@dataclass(frozen=True)
class Prediction:
    """A model's label on a unit (Label Studio prediction, Argilla suggestion); ``kept`` is what
    the tool said about it besides the value (model version, score, agent), stored with the
    judgment and written back on export."""

    record: int
    field: str
    unit: UnitKey
    criterion: str
    value: int
    kept: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclass
class Parsed:
    """A whole file read: its labels and predictions, and what was passed over (cancelled
    annotations, draft or discarded responses)."""

    file: str
    records: int = 0
    labels: list[HumanLabel] = dataclasses.field(default_factory=list)
    predictions: list[Prediction] = dataclasses.field(default_factory=list)
    skipped: int = 0
    # Predictions a Label Studio export names by their id alone (its Export dialog writes them
    # so): their choices are not in the file.
    prediction_ids: int = 0


def read_json(*, path: str | Path, name: str) -> Any:
    """The JSON document at ``path``; ImportFailed naming the file when it cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ImportFailed(
            [RowError(file=name, row=None, field="file", message=f"cannot be read: {exc.strerror or exc}")]
        ) from None
    try:
        text = data.decode("utf-8-sig")
        return clean_value(json.loads(text))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ImportFailed(
            [RowError(file=name, row=None, field="file", message=f"is not UTF-8 JSON: {exc}")]
        ) from None
    except RecursionError:
        # Never a crash: the record and line, as the campaign import says them.
        record, line = too_deep_record(text)
        raise ImportFailed(
            [RowError(file=name, row=record, field="json", message=refusal(TOO_DEEP_AT_LINE, line=line))]
        ) from None


class RecordReader:
    """Reads the fields of one record (1-based ``number``), logging each problem with its path."""

    def __init__(self, *, errors: ErrorLog, number: int) -> None:
        self.errors = errors
        self.number = number

    def error(self, path: str, message: str) -> None:
        self.errors.add(row=self.number, field=path, message=message)

    def mapping(self, value: object, path: str, *, required: bool = True) -> dict[str, Any]:
        if value is None and not required:
            return {}
        if not isinstance(value, dict):
            self.error(path, "must be a JSON object")
            return {}
        return value

    def listing(self, value: object, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path, "must be a JSON list")
            return []
        return value

    def time(self, value: object, path: str, *, required: bool = True) -> dt.datetime | None:
        """An ISO 8601 time (UTC when it names no offset)."""
        if value is None or value == "":
            if required:
                self.error(path, "is missing: a time in ISO 8601 is needed")
            return None
        parsed = parse_datetime(value) if isinstance(value, str) else None
        if parsed is None:
            self.error(path, f"must be a time in ISO 8601, not {value!r}")
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        return parsed

    def seconds(self, value: object, path: str) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            self.error(path, f"must be a number of seconds, not {value!r}")
            return None
        return float(value)

    def unit_key(self, data: dict[str, Any], path: str) -> UnitKey | None:
        """The unit named by ``answer_id`` (+ ``sentence``, + ``source`` for a citation) or
        ``unit_id`` in ``data``."""
        answer_id, sentence, unit_id = data.get("answer_id"), data.get("sentence"), data.get("unit_id")
        source = data.get("source")
        if source is not None and not isinstance(source, str | int):
            self.error(f"{path}.source", "must be the cited chunk's id, or null")
            return None
        if answer_id is not None and not isinstance(answer_id, str | int):
            self.error(f"{path}.answer_id", "must be text")
            return None
        if sentence is not None and (isinstance(sentence, bool) or not isinstance(sentence, int)):
            self.error(f"{path}.sentence", "must be a sentence position (a whole number) or null")
            return None
        if unit_id is not None and (isinstance(unit_id, bool) or not isinstance(unit_id, int)):
            self.error(f"{path}.unit_id", "must be a whole number")
            return None
        if answer_id in (None, "") and unit_id is None:
            self.error(path, "names no unit: give answer_id (and sentence) or unit_id")
            return None
        if answer_id not in (None, ""):
            return UnitKey(
                answer_id=str(answer_id), sentence=sentence, source=None if source is None else str(source)
            )
        return UnitKey(unit_id=unit_id)


def iso(value: dt.datetime | None) -> str | None:
    """A time as ISO 8601 in UTC with microseconds and ``Z``, as Label Studio writes them."""
    if value is None:
        return None
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
