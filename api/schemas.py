"""What the API reads and answers: request bodies refuse unknown fields and wrong types."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from ninja import Field, Schema
from pydantic import BeforeValidator, ConfigDict, ValidationInfo, field_validator

from annotation.sampling.draws import MAX_SEED
from annotation.text import clean_value
from evaluation.judge.runs import MAX_CONCURRENCY, MAX_TOKENS

# The largest count a request may give (a budget, units per cluster): the database's integer.
MAX_COUNT = 2**31 - 1


# A text with at least one character that is neither a space nor a control character.
VISIBLE = r"[^\s\x00-\x1f\x7f]"


def _whole(value: Any) -> Any:
    # JSON Schema's integer is any number without a fractional part: 3.0 is one.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Whole numbers within their bounds, as JSON Schema's integer (3.0 included; never a string or
# true): a count (budget, units per cluster), a seed, a run's threads and its token budget.
Count = Annotated[int, Field(ge=1, le=MAX_COUNT), BeforeValidator(_whole)]
Seed = Annotated[int, Field(ge=0, le=MAX_SEED), BeforeValidator(_whole)]
Threads = Annotated[int, Field(ge=1, le=MAX_CONCURRENCY), BeforeValidator(_whole)]
Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS), BeforeValidator(_whole)]


class Cleaned(Schema):
    """What a request gives: every text in it under the rule on control characters
    (``annotation.text``: NUL and the like removed), but the fields in ``CLEANED_LATER``, which
    go through a road that applies the rule itself."""

    CLEANED_LATER: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="before")
    @classmethod
    def _clean_texts(cls, value: Any, info: ValidationInfo) -> Any:
        # Before the field's own checks: a name of control characters only is then empty.
        return value if info.field_name in cls.CLEANED_LATER else clean_value(value)


class Strict(Cleaned):
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
    # At least one character that is neither a space nor a control character (removed).
    name: str = Field(min_length=1, max_length=200, pattern=VISIBLE)


class CampaignOut(Schema):
    slug: str
    name: str
    roles: list[str]


class CampaignDetailOut(CampaignOut):
    # The criteria's names (what the other endpoints take), in order of name.
    criteria: list[str]
    # Each criterion's title, what people read (the pages show the built-in ones translated).
    criterion_titles: dict[str, str]
    # Questions, answers, sentences, units; labels and judgments for managers and analysts.
    counts: dict[str, int]


class AnswerRecord(Cleaned):
    """One record of the import format (docs/import-format.md): its required fields, and the
    optional ones (answer_id, difficulty, labels, sentences, gold evidence...) as the format says.
    The import checks the rest, across records and against the campaign (an id reused with
    another text, a citation to no source), and refuses a batch with its errors by record and
    field: the API documents the record with this schema and validates it with the import."""

    model_config = ConfigDict(extra="allow")

    question_id: str | int
    question: str = Field(min_length=1, pattern=VISIBLE)
    theme: str = Field(min_length=1, pattern=VISIBLE)
    answer: str = Field(min_length=1, pattern=VISIBLE)
    # A list of {id, title, page, text}, or one string in the assistant's source format.
    sources: list[dict[str, Any]] | str


class AnswersIn(Strict):
    # Imported as a file is (api.batches): its reader applies the rule to every record.
    CLEANED_LATER = frozenset({"records"})

    records: list[dict[str, Any]] = Field(
        min_length=1, json_schema_extra={"items": AnswerRecord.model_json_schema()}
    )
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
    criterion: str = Field(min_length=1, pattern=VISIBLE)
    budget: Count
    per_cluster: Count | None = None
    seed: Seed | None = None
    per_theme_budget: dict[str, Count] | None = None


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
    criterion: str = Field(min_length=1, pattern=VISIBLE)
    # At least one character that is neither a space nor a control character (removed).
    judge: str = Field(min_length=1, max_length=200, pattern=VISIBLE)
    model: str | None = Field(None, max_length=200)
    scope: Literal["all", "missing", "failed", "share"] | None = None
    concurrency: Threads | None = None
    token_budget: Tokens | None = None


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
