"""Where a measure command writes: the file its ``--output`` names, or its standard output."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from django.core.management.base import BaseCommand


@contextmanager
def output_stream(command: BaseCommand, path: str | None) -> Iterator[TextIO]:
    """The file at ``path`` (UTF-8, its newlines as written: CSV writes its own), closed after, or
    the command's standard output when no path is given."""
    if not path:
        yield command.stdout  # type: ignore[misc]
        return
    with open(path, "w", newline="", encoding="utf-8") as stream:
        yield stream
