"""A campaign written out for another tool: Label Studio or Argilla JSON, Parquet, ARES results.

JSON lists are written item by item, so a large campaign streams instead of being held whole.
JSON and Parquet carry text as data: no spreadsheet ever evaluates it, so no formula
neutralisation is needed here (the CSV and XLSX exports have theirs).
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from annotation.criteria.categories import is_categorical
from annotation.models import Campaign, Criterion
from annotation.spreadsheets import Writable, neutralise
from evaluation.estimates.codec import report_as_json
from evaluation.estimates.report import Report
from evaluation.interchange import argilla, label_studio, parquet
from evaluation.interchange.ares import ares_results
from evaluation.interchange.vocabulary import Vocabulary
from evaluation.models import Judge

LABEL_STUDIO, ARGILLA, PARQUET, ARES = "label-studio", "argilla", "parquet", "ares"
FORMATS = (LABEL_STUDIO, ARGILLA, PARQUET, ARES)
EXTENSIONS = {
    LABEL_STUDIO: "label-studio.json",
    ARGILLA: "argilla.json",
    PARQUET: "parquet",
    ARES: "ares.json",
}


def write_json_list(items: Iterable[Any], stream: Writable) -> int:
    """Write ``items`` to ``stream`` as one JSON list, an item per line; how many."""
    count = 0
    stream.write("[")
    for item in items:
        stream.write(("," if count else "") + "\n" + json.dumps(item, ensure_ascii=False))
        count += 1
    stream.write("\n]\n")
    return count


def write_label_studio(
    *,
    campaign: Campaign,
    criteria: Sequence[Criterion],
    stream: Writable,
    vocabulary: Vocabulary | None = None,
    judges: Sequence[Judge] | None = None,
    people: list[dict[str, Any]] | None = None,
) -> int:
    """The units at the criteria's levels as Label Studio tasks (see ``label_studio``); how many.
    ExportError for a criterion with named categories (``binary_only``). ``people``, when given,
    is filled with who the annotations name (``label_studio.people``): the emails the Label
    Studio admin makes sure exist before importing."""
    binary_only(criteria=criteria, tool="Label Studio")
    tasks = label_studio.export_tasks(
        campaign=campaign,
        criteria=list(criteria),
        vocabulary=vocabulary or Vocabulary(),
        judges=None if judges is None else list(judges),
    )
    if people is None:
        return write_json_list(tasks, stream)
    written: list[dict[str, Any]] = []

    def noted() -> Iterable[dict[str, Any]]:
        for task in tasks:
            written.append(
                {"annotations": [{"completed_by": a["completed_by"]} for a in task["annotations"]]}
            )
            yield task

    count = write_json_list(noted(), stream)
    people.extend(label_studio.people(written))
    return count


def write_people_csv(people: Sequence[dict[str, Any]], stream: Writable) -> int:
    """The people of a Label Studio export as CSV (email, username, placeholder, annotations):
    the users the Label Studio admin creates, or checks, before importing; how many."""
    writer = csv.writer(stream)
    writer.writerow(["email", "username", "placeholder", "annotations"])
    for person in people:
        writer.writerow(
            [
                neutralise(person["email"]),
                neutralise(person["username"]),
                "yes" if person["placeholder"] else "no",
                person["annotations"],
            ]
        )
    return len(people)


def write_argilla(
    *,
    campaign: Campaign,
    criteria: Sequence[Criterion],
    stream: Writable,
    vocabulary: Vocabulary | None = None,
    judge: Judge | None = None,
) -> int:
    """The units at the criteria's levels as Argilla records, ``judge``'s labels as suggestions
    (see ``argilla``); how many. ExportError for a criterion with named categories."""
    binary_only(criteria=criteria, tool="Argilla")
    records = argilla.export_records(
        campaign=campaign, criteria=list(criteria), vocabulary=vocabulary or Vocabulary(), judge=judge
    )
    return write_json_list(records, stream)


@contextmanager
def whole_file(path: str | Path) -> Iterator[Path]:
    """A file beside ``path`` to write the export into, which becomes ``path`` only when the block
    ends without an error: a refused export (a criterion with categories, an unknown judge) leaves
    no file, and an existing file as it was. Its permissions are those a new file gets."""
    target = Path(path)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    os.close(handle)
    part = Path(name)
    mask = os.umask(0)
    os.umask(mask)
    part.chmod(0o666 & ~mask)
    try:
        yield part
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)


def write_parquet(*, campaign: Campaign, criteria: Sequence[Criterion], sink: str | BinaryIO) -> int:
    """The units with their labels as Parquet (see ``parquet``); how many rows."""
    return parquet.write_parquet(campaign=campaign, criteria=criteria, sink=sink)


def write_ares(*, report: Report, stream: Writable) -> int:
    """The report's estimates with ARES's result keys (see ``ares``), as a JSON list; how many."""
    results = ares_results(report=report_as_json(report=report))
    stream.write(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return len(results)


class ExportError(Exception):
    """An export cannot be made as asked; the message says why."""


def binary_only(*, criteria: Sequence[Criterion], tool: str) -> None:
    """ExportError naming the first criterion with named categories: the Label Studio and
    Argilla exchanges carry 0/1 choices only (the Parquet export and the report's files carry
    category values)."""
    for criterion in criteria:
        if is_categorical(criterion):
            raise ExportError(
                f"criterion {criterion.name!r} has named categories: the {tool} export carries 0/1 "
                "labels only; export it as Parquet, or name a binary criterion (--criterion)"
            )


def pick_criteria(*, campaign: Campaign, name: str | None) -> list[Criterion]:
    """The campaign's criterion called ``name``, or all its criteria when None; ExportError
    naming the criteria when ``name`` is not one."""
    criteria = list(Criterion.objects.filter(campaign=campaign).order_by("name"))
    if name is None:
        return criteria
    for criterion in criteria:
        if criterion.name == name:
            return [criterion]
    names = ", ".join(criterion.name for criterion in criteria) or "none"
    raise ExportError(f"criterion {name!r} does not exist in {campaign.name!r} (criteria: {names})")
