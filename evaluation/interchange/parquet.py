"""A campaign's units with their labels as Parquet, for pandas (``pd.read_parquet``) and the
``datasets`` library (``Dataset.from_parquet``).

One row per unit and criterion at the criterion's level: the unit's ids, texts and theme, the
final human label (null without one), every label in force (author, stage, value, times, seconds
spent, comment) and every judge's label. Written one row group per chunk of units, so a large
campaign is never held whole in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from annotation.models import Campaign, Criterion
from annotation.workflow import final_labels
from evaluation.interchange.contents import UNIT_CHUNK, UnitContent, campaign_units

TIME = pa.timestamp("us", tz="UTC")
LABEL = pa.struct(
    [
        ("author", pa.string()),
        ("stage", pa.string()),
        ("value", pa.int8()),
        ("created_at", TIME),
        ("edited_at", TIME),
        ("seconds_spent", pa.float64()),
        ("comment", pa.string()),
    ]
)
JUDGMENT = pa.struct([("judge", pa.string()), ("value", pa.int8())])
SCHEMA = pa.schema(
    [
        ("unit_id", pa.int64()),
        ("level", pa.string()),
        ("answer_id", pa.string()),
        ("sentence", pa.int64()),
        ("source", pa.string()),
        ("question_id", pa.string()),
        ("question", pa.string()),
        ("theme", pa.string()),
        ("difficulty", pa.string()),
        ("text", pa.string()),
        ("criterion", pa.string()),
        ("human_label", pa.int8()),
        ("labels", pa.list_(LABEL)),
        ("judgments", pa.list_(JUDGMENT)),
    ]
)


def _row(unit: UnitContent, criterion: Criterion, final: int | None) -> dict[str, Any]:
    return {
        "unit_id": unit.unit_id,
        "level": unit.level,
        "answer_id": unit.answer_id,
        "sentence": unit.sentence,
        "source": unit.source,
        "question_id": unit.question_id,
        "question": unit.question,
        "theme": unit.theme,
        "difficulty": unit.difficulty,
        "text": unit.text,
        "criterion": criterion.name,
        "human_label": final,
        "labels": [
            {
                "author": label.username,
                "stage": label.stage,
                "value": label.value,
                "created_at": label.created_at,
                "edited_at": label.edited_at,
                "seconds_spent": label.seconds_spent,
                "comment": label.comment,
            }
            for label in unit.labels
            if label.criterion == criterion.name
        ],
        "judgments": [
            {"judge": j.judge, "value": j.value} for j in unit.judgments if j.criterion == criterion.name
        ],
    }


def write_parquet(*, campaign: Campaign, criteria: Sequence[Criterion], sink: str | BinaryIO) -> int:
    """Write the rows described in the module docstring to ``sink`` (a path or a binary file
    object); the number of rows written."""
    finals = {criterion.pk: final_labels(criterion=criterion) for criterion in criteria}
    rows: list[dict[str, Any]] = []
    written = 0
    with pq.ParquetWriter(sink, SCHEMA) as writer:
        for unit in campaign_units(campaign=campaign, criteria=criteria):
            for criterion in criteria:
                if criterion.level == unit.level:
                    rows.append(_row(unit, criterion, finals[criterion.pk].get(unit.unit_id)))
            if len(rows) >= UNIT_CHUNK:
                writer.write_table(pa.Table.from_pylist(rows, schema=SCHEMA))
                written, rows = written + len(rows), []
        if rows or not written:
            writer.write_table(pa.Table.from_pylist(rows, schema=SCHEMA))
            written += len(rows)
    return written
