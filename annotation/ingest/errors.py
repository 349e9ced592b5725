"""Import errors: every problem names the file, the row and the field."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.errors import refusal

# Enough to show a systematic problem without flooding the screen; the rest is only counted.
MAX_ERRORS = 50
# Messages several readers and checks give (lazy translations; see annotation.errors.refusal).
MISSING = _("missing")
MUST_BE_TEXT = _("must be text, not %(type)s")
CANNOT_BE_READ = _("cannot be read: %(reason)s")
INVALID_JSON_AT_COLUMN = _("invalid JSON at column %(column)s: %(reason)s")
INVALID_JSON_AT_LINE = _("invalid JSON at line %(line)s column %(column)s: %(reason)s")
NOT_UTF8 = _("line %(line)s is not UTF-8; save the file as UTF-8")


@dataclass(frozen=True)
class RowError:
    """One problem in an import file.

    ``row`` is the 1-based line (JSONL), spreadsheet row with the header as row 1 (CSV, XLSX) or
    1-based record number (JSON); None for a problem with the file as a whole. ``message`` may be
    a lazy translation: it speaks the language active when it is shown.
    """

    file: str
    row: int | None
    field: str
    message: str | Promise

    def __str__(self) -> str:
        where = self.file if self.row is None else f"{self.file}:{self.row}"
        return f"{where}: {self.field}: {self.message}"


class ImportFailed(Exception):
    """The import was refused and nothing was written; ``errors`` says where and why.

    ``more`` counts the errors found beyond the first ``MAX_ERRORS``, which are not listed.
    """

    def __init__(self, errors: list[RowError], *, more: int = 0) -> None:
        self.errors = list(errors)
        self.more = more
        super().__init__(self.describe())

    def __str__(self) -> str:
        # Described again when read: the messages speak the language active then.
        return self.describe()

    def describe(self) -> str:
        """The errors, one per line, as ``FILE:ROW: FIELD: message``."""
        lines = [str(error) for error in self.errors]
        if self.more:
            lines.append(str(refusal(_("... and %(count)s more errors"), count=self.more)))
        return "\n".join(lines)


class ErrorLog:
    """Collects row errors up to ``limit``, then only counts them."""

    def __init__(self, *, file: str, limit: int = MAX_ERRORS) -> None:
        self.file = file
        self.limit = limit
        self.errors: list[RowError] = []
        self.more = 0

    def add(self, *, row: int | None, field: str, message: str | Promise, file: str | None = None) -> None:
        """Record one problem (in ``file``, by default the file being read)."""
        if len(self.errors) < self.limit:
            self.errors.append(RowError(file=file or self.file, row=row, field=field, message=message))
        else:
            self.more += 1

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        """Raise ImportFailed when any problem was recorded."""
        if self.errors:
            # File-level problems first, then by row: reading and validating log in two passes.
            ordered = sorted(self.errors, key=lambda error: -1 if error.row is None else error.row)
            raise ImportFailed(ordered, more=self.more)
