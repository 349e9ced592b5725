"""What the API reads and answers: request bodies refuse unknown fields and wrong types."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema
from pydantic import ConfigDict


class Strict(Schema):
    """A request body: no field the API does not know, no value of another type."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ErrorItem(Schema):
    field: str
    message: str
    row: int | None = None
    file: str | None = None


class ErrorOut(Schema):
    detail: str
    errors: list[ErrorItem] = []
    more: int = 0


class CampaignIn(Strict):
    name: str = Field(min_length=1, max_length=200)


class CampaignOut(Schema):
    slug: str
    name: str
    roles: list[str]


class CampaignDetailOut(CampaignOut):
    criteria: list[str]
    # Questions, answers, sentences, units; labels and judgments for managers and analysts.
    counts: dict[str, int]


class AnswersIn(Strict):
    records: list[dict[str, Any]] = Field(min_length=1)
    update: bool = False


class ImportOut(Schema):
    campaign: str
    answers_created: int
    answers_replaced: int
    questions_created: int
    chunks_created: int
    sentences: int
    units: int
    labels: int
    judgments: int
    warnings: list[str]


class BatchOut(Schema):
    id: int
    status: str
    records: int
    url: str
    created_at: datetime
    finished_at: datetime | None
    summary: ImportOut | None = None
    errors: list[ErrorItem] = []
    more_errors: int = 0


class SampleIn(Strict):
    criterion: str
    budget: int
    per_cluster: int | None = None
    seed: int | None = None
    per_theme_budget: dict[str, int] | None = None


class SampleOut(Schema):
    id: int
    criterion: str
    status: str
    progress: float
    budget: int
    per_cluster: int
    seed: int
    error: str
    drawn: int
    url: str
    created_at: datetime


class SampleItemOut(Schema):
    answer_id: str
    sentence: int | None
    # A citation unit's cited chunk id; None for answers and sentences.
    source: str | None
    theme: str
    cluster: int
    cluster_size: int
    inclusion_probability: float


class RunIn(Strict):
    criterion: str
    judge: str
    model: str | None = None
    scope: str | None = None
    concurrency: int | None = None
    token_budget: int | None = None


class RunOut(Schema):
    id: int
    criterion: str
    judge: str
    scope: str
    status: str
    active: bool
    total_units: int
    done_units: int
    failed_units: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    url: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class LabelOut(Schema):
    id: int
    unit: int = Field(alias="unit_id_")
    answer_id: str
    sentence: int | None
    source: str | None
    criterion: str = Field(alias="criterion_name")
    stage: str
    value: int | None
    # What the row did (the label history's words) and the value it replaces (a change).
    action: str
    replaces: int | None = Field(None, alias="previous")
    comment: str
    author: str | None
    created_at: datetime

    @staticmethod
    def resolve_action(row: dict) -> str:
        if row["value"] is None:
            return "withdrawal"
        return "change" if row["has_previous"] else "label"


class JudgmentOut(Schema):
    id: int
    unit: int = Field(alias="unit_id_")
    answer_id: str
    sentence: int | None
    source: str | None
    criterion: str = Field(alias="criterion_name")
    judge: str = Field(alias="judge_name")
    status: str
    value: int | None
    reasoning: str
    created_at: datetime
