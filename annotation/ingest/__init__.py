"""Importing a corpus (questions, answers, sources) and its existing labels from a file.

``parse_file`` reads and validates without touching the database; ``load_parsed`` checks the
records against the campaign and writes them in one transaction, handing back the judge labels
it found (the judge's side stores them). See docs/import-format.md for the format.

Names are resolved on first use: worker processes import ``annotation.ingest.analysis``
without setting Django up, so this package must not import the models when it is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "MAX_ERRORS": "errors",
    "ImportFailed": "errors",
    "RowError": "errors",
    "JudgeLabel": "load",
    "LoadResult": "load",
    "ProgressCallback": "load",
    "load_parsed": "load",
    "FORMATS": "readers",
    "ImportMapping": "mapping",
    "check_mapping": "mapping",
    "file_format": "readers",
    "read_mapping": "mapping",
    "AnswerRecord": "records",
    "ParsedFile": "records",
    "parse_file": "records",
}

__all__ = [
    "FORMATS",
    "MAX_ERRORS",
    "AnswerRecord",
    "ImportMapping",
    "ImportFailed",
    "JudgeLabel",
    "LoadResult",
    "ParsedFile",
    "ProgressCallback",
    "RowError",
    "check_mapping",
    "file_format",
    "load_parsed",
    "parse_file",
    "read_mapping",
]

if TYPE_CHECKING:
    from annotation.ingest.errors import MAX_ERRORS, ImportFailed, RowError
    from annotation.ingest.load import JudgeLabel, LoadResult, ProgressCallback, load_parsed
    from annotation.ingest.mapping import ImportMapping, check_mapping, read_mapping
    from annotation.ingest.readers import FORMATS, file_format
    from annotation.ingest.records import AnswerRecord, ParsedFile, parse_file


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'annotation.ingest' has no attribute {name!r}")
    return getattr(importlib.import_module(f"annotation.ingest.{module}"), name)
