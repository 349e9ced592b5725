"""Importing a corpus (questions, answers, sources) and its existing labels from a file.

An import reads its file twice. ``check_file`` (pass 1) validates every row without touching
the database, keeping compact bookkeeping but no text; ``load_file`` checks that against the
campaign, then reads the file again and writes it batch by batch in one transaction, handing
the judge labels it finds to the caller (the judge's side stores them). See
docs/import-format.md for the format.

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
    "JudgeLabelSink": "load",
    "LoadResult": "load",
    "ProgressCallback": "load",
    "load_file": "load",
    "FORMATS": "readers",
    "ImportMapping": "mapping",
    "check_mapping": "mapping",
    "file_format": "readers",
    "read_mapping": "mapping",
    "AnswerRecord": "records",
    "CheckedFile": "validate",
    "check_file": "validate",
}

__all__ = [
    "FORMATS",
    "MAX_ERRORS",
    "AnswerRecord",
    "CheckedFile",
    "ImportMapping",
    "ImportFailed",
    "JudgeLabel",
    "JudgeLabelSink",
    "LoadResult",
    "ProgressCallback",
    "RowError",
    "check_file",
    "check_mapping",
    "file_format",
    "load_file",
    "read_mapping",
]

if TYPE_CHECKING:
    from annotation.ingest.errors import MAX_ERRORS, ImportFailed, RowError
    from annotation.ingest.load import JudgeLabel, JudgeLabelSink, LoadResult, ProgressCallback, load_file
    from annotation.ingest.mapping import ImportMapping, check_mapping, read_mapping
    from annotation.ingest.readers import FORMATS, file_format
    from annotation.ingest.records import AnswerRecord
    from annotation.ingest.validate import CheckedFile, check_file


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'annotation.ingest' has no attribute {name!r}")
    return getattr(importlib.import_module(f"annotation.ingest.{module}"), name)
