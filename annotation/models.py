"""The corpus and the human work: campaigns, questions, answers, sentences, units, labels.

Its length is the lower layer's tables, each with its constraints; the logic lives in the rooms
beside it.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy, pgettext_lazy

from annotation.corpus.citations import CitationPatternError, compile_citation_pattern
from annotation.corpus.conventions import DEFAULT_ABSTENTION_PATTERNS, DEFAULT_CITATION_PATTERN
from annotation.corpus.sources import chunk_text_hash
from annotation.criteria.titles import title_key


class Role(models.TextChoices):
    MANAGER = "manager", gettext_lazy("Manager")
    ANNOTATOR = "annotator", gettext_lazy("Annotator")
    REVIEWER = "reviewer", gettext_lazy("Reviewer")
    ADJUDICATOR = "adjudicator", gettext_lazy("Adjudicator")
    ANALYST = "analyst", gettext_lazy("Analyst")


class AnnotationMode(models.TextChoices):
    REVIEW = "review", gettext_lazy("Review (label, review, adjudication)")
    BLIND_DOUBLE = "blind_double", gettext_lazy("Blind double (two labels, adjudication when they differ)")


class Level(models.TextChoices):
    ANSWER = "answer", pgettext_lazy("choice", "Answer")
    SENTENCE = "sentence", pgettext_lazy("choice", "Sentence")
    CITATION = "citation", pgettext_lazy("choice", "Citation")


class Stage(models.TextChoices):
    LABEL = "label", pgettext_lazy("choice", "Label")
    REVIEW = "review", pgettext_lazy("choice", "Review")
    ADJUDICATION = "adjudication", gettext_lazy("Adjudication")
    IMPORTED = "imported", pgettext_lazy("choice", "Imported")


def validate_citation_pattern(value: str) -> None:
    """A campaign's citation pattern must find cited ids (``compile_citation_pattern``): refused
    when saved, naming the field, so that every reader of a stored pattern can compile it."""
    try:
        compile_citation_pattern(value)
    except CitationPatternError as exc:
        raise ValidationError(exc.reason, code="invalid_pattern") from None


def validate_abstention_patterns(value: Any) -> None:
    """None (the built-in patterns) or a list of regular expressions."""
    if value is None:
        return
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError(gettext_lazy("a list of regular expressions, or null"), code="invalid_patterns")
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValidationError(
                gettext_lazy("invalid regular expression %(pattern)s (%(error)s)"),
                code="invalid_pattern",
                params={"pattern": repr(pattern), "error": str(exc)},
            ) from None


class Campaign(models.Model):
    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    expected_language = models.CharField(
        max_length=8, blank=True, help_text="ISO 639-1 code; blank: the question's language."
    )
    citation_pattern = models.CharField(
        max_length=300,
        default=DEFAULT_CITATION_PATTERN,
        validators=[validate_citation_pattern],
        help_text="A regular expression whose first group (...) is the cited chunk's id.",
    )
    # None: the built-in DEFAULT_ABSTENTION_PATTERNS; a list (even empty) replaces them, so []
    # means no abstention detection at all (the response rate is then "cites a source" alone).
    abstention_patterns = models.JSONField(
        null=True,
        blank=True,
        default=None,
        validators=[validate_abstention_patterns],
        help_text="Regular expressions. null: the built-in patterns; []: none.",
    )
    annotation_mode = models.CharField(
        max_length=20, choices=AnnotationMode.choices, default=AnnotationMode.REVIEW
    )
    lease_minutes = models.PositiveIntegerField(default=15)
    # What an hour of a person's labelling costs, in the unit the judges' prices are given in
    # (JUDGE_PRICE_PER_1K_*): the planner of several judges prices a human label with it. None:
    # not set, and nothing is planned until a manager sets it.
    label_hourly_rate = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.0)],
        help_text="Cost of an hour of labelling, in the unit of the judges' prices; blank: not set.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Moves by one with every change of the campaign's questions, chunks or answers: each import
    # (annotation.ingest), each one saved or deleted by hand (the admin, a shell). Figures computed
    # from them are kept under keys that hold it (evaluation.page_cache), in every process alike.
    content_version = models.PositiveBigIntegerField(default=0, editable=False)

    class Meta:
        ordering = ["-created_at", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def effective_abstention_patterns(self) -> list[str]:
        """The patterns in force: the built-in ones when none are set (None), else the campaign's
        own, which may be none at all ([])."""
        if self.abstention_patterns is None:
            return list(DEFAULT_ABSTENTION_PATTERNS)
        return list(self.abstention_patterns)


class Membership(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "user", "role"], name="membership_unique_role"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.role} in {self.campaign}"


class Question(models.Model):
    # Indexed by the constraint and the index below, which both start with it.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="questions", db_index=False)
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    theme = models.CharField(max_length=200)
    difficulty = models.CharField(max_length=50, blank=True)
    language = models.CharField(max_length=8, blank=True)
    # Optional, from the import: what a good answer says, and the passages (``{"text": ...}``)
    # or retrieved chunks (``{"chunk_id": ...}``) it must rest on (annotation.gold_evidence).
    reference_answer = models.TextField(blank=True)
    gold_evidence = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["theme", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "external_id"], name="question_unique_external_id"),
        ]
        indexes = [models.Index(fields=["campaign", "theme", "difficulty"])]

    def __str__(self) -> str:
        return self.external_id


class SourceChunk(models.Model):
    """A retrieved chunk's text under its id, shared by every answer that was given this text.

    Real exports give one id several texts (numbers anonymised per answer, re-chunking, OCR):
    each distinct text is a row of its own, and an answer links the row with the text it was
    given, so what the assistant saw is what annotators and the judge read. ``text_hash`` is
    ``chunk_text_hash(text)``, kept by save(); bulk inserts must fill it the same way.
    """

    # Indexed by chunk_unique_text, which starts with it.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="chunks", db_index=False)
    external_id = models.CharField(max_length=200)
    title = models.TextField(blank=True)
    page = models.IntegerField(null=True, blank=True)
    text = models.TextField(blank=True)
    # A digest rather than the text in the unique key: chunk texts outgrow what a btree index takes.
    text_hash = models.CharField(max_length=64, editable=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "external_id", "text_hash"], name="chunk_unique_text"
            ),
        ]

    def __str__(self) -> str:
        return self.external_id

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.text_hash = chunk_text_hash(self.text)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "text" in update_fields:
            kwargs["update_fields"] = {*update_fields, "text_hash"}
        super().save(*args, **kwargs)


class Answer(models.Model):
    # Indexed by answer_unique_external_id, which starts with it.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="answers", db_index=False)
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="answers")
    external_id = models.CharField(max_length=200)
    repetition = models.PositiveIntegerField(default=1)
    text = models.TextField()
    language = models.CharField(max_length=8, blank=True)
    chunks: models.ManyToManyField[SourceChunk, AnswerSource] = models.ManyToManyField(
        SourceChunk, through="AnswerSource", related_name="answers"
    )

    class Meta:
        ordering = ["question_id", "repetition", "id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "external_id"], name="answer_unique_external_id"),
        ]

    def __str__(self) -> str:
        return self.external_id


class AnswerSource(models.Model):
    """A chunk the retriever returned for an answer, with its rank (1 = first)."""

    # Indexed by both constraints below, which start with it.
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="sources", db_index=False)
    chunk = models.ForeignKey(SourceChunk, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()

    class Meta:
        ordering = ["answer_id", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "rank"], name="answersource_unique_rank"),
            models.UniqueConstraint(fields=["answer", "chunk"], name="answersource_unique_chunk"),
        ]


class Sentence(models.Model):
    # Indexed by sentence_unique_position, which starts with it.
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="sentences", db_index=False)
    position = models.PositiveIntegerField()
    text = models.TextField()
    paragraph = models.TextField(blank=True)
    paragraph_index = models.PositiveIntegerField(default=0)
    cited_ids = models.JSONField(default=list, blank=True)
    # None when the sentence cites nothing; else whether every cited id was retrieved.
    citations_ok = models.BooleanField(null=True)

    class Meta:
        ordering = ["answer_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "position"], name="sentence_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.answer_id}#{self.position}"


# Keys the annotation pages already give a meaning to (skip, undo, comment, help); the JavaScript
# compares keys without case, so neither case of these may label.
RESERVED_KEYS = ("s", "u", "c", "?", "S", "U", "C")


class Criterion(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="criteria")
    # The slug: what URLs, files, commands and the API name the criterion by.
    name = models.SlugField(max_length=100)
    # What people read wherever the criterion is named (shown through
    # annotation.workbench.shown_title); unique in its campaign through ``title_key``.
    title = models.CharField(max_length=200)
    # The title folded (annotation.criteria.titles.title_key: no accents, no case), kept by save():
    # what makes "Complétude" and "completude" one title for the unique constraint below.
    title_key = models.CharField(max_length=200, editable=False)
    level = models.CharField(max_length=10, choices=Level.choices)
    guidelines = models.TextField(blank=True)
    judge_prompt = models.TextField(blank=True, help_text="Blank: the built-in prompt.")
    prompt_version = models.CharField(max_length=50, default="v1")
    positive_key = models.CharField(max_length=1, default="1")
    negative_key = models.CharField(max_length=1, default="0")
    # "binary" (labels 0/1 with the two keys above) or "categorical": labels are the values of
    # ``categories`` ([{"value": 1.., "key", "name", "title"}]), optionally grouped by
    # ``category_groups`` ({"group": [values]}); see annotation.criteria.categories.
    kind = models.CharField(
        max_length=12,
        choices=[("binary", gettext_lazy("Binary")), ("categorical", gettext_lazy("Categories"))],
        default="binary",
    )
    categories = models.JSONField(default=list, blank=True)
    category_groups = models.JSONField(default=dict, blank=True)
    builtin = models.BooleanField(default=False)
    # The version of ``guidelines`` and ``judge_prompt`` above as last recorded; the texts above
    # are the editable draft, the versions are what labels and judges rest on (see
    # annotation.criteria.guidelines.current_version, which records a new version after an edit).
    current_version = models.ForeignKey(
        "CriterionVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["campaign_id", "name"]
        verbose_name_plural = "criteria"
        constraints = [
            models.UniqueConstraint(fields=["campaign", "name"], name="criterion_unique_name"),
            models.UniqueConstraint(
                fields=["campaign", "title_key"],
                name="criterion_unique_title",
                violation_error_message="The campaign has a criterion with this title already.",
            ),
            models.CheckConstraint(
                condition=~Q(title_key=""),
                name="criterion_has_title",
                violation_error_message="A criterion needs a title.",
            ),
            models.CheckConstraint(
                condition=~Q(positive_key="")
                & ~Q(negative_key="")
                & ~Q(positive_key__in=RESERVED_KEYS)
                & ~Q(negative_key__in=RESERVED_KEYS)
                & ~Q(positive_key__iexact=models.F("negative_key")),
                name="criterion_keys_usable",
                violation_error_message=(
                    "The label keys must be two different single characters, none of s, u, c or ?."
                ),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.title_key = title_key(self.title)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "title" in update_fields:
            kwargs["update_fields"] = {*update_fields, "title_key"}
        super().save(*args, **kwargs)

    def clean(self) -> None:
        """Name the key at fault (the check constraint only says that one is); fold the title
        before the constraints on it are checked."""
        self.title_key = title_key(self.title)
        errors = {}
        for field in ("positive_key", "negative_key"):
            key = getattr(self, field) or ""
            if len(key) != 1 or key.isspace():
                errors[field] = "A label key is one visible character."
            elif key in RESERVED_KEYS:
                errors[field] = f"{key!r} is taken: s skips, u undoes, c comments and ? shows the keys."
        if not errors and self.positive_key.lower() == self.negative_key.lower():
            errors["negative_key"] = "The two label keys must differ."
        if self.kind == "categorical":
            from annotation.criteria.categories import CategoryError, check_definition

            try:
                check_definition(categories=self.categories, groups=self.category_groups)
            except CategoryError as error:
                errors[error.field or "categories"] = str(error)
        if errors:
            raise ValidationError(errors)


class CriterionVersion(models.Model):
    """One version of a criterion's guidelines and judge prompt. Immutable: an edit of the
    criterion makes a new version (numbered from 1), so what a label's author saw and what a
    judge sent stay known."""

    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    guidelines = models.TextField(blank=True)
    judge_prompt = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["criterion_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["criterion", "number"], name="criterionversion_unique_number"),
        ]

    def __str__(self) -> str:
        return f"{self.criterion} v{self.number}"


class Unit(models.Model):
    """What receives one label per criterion: an answer, one of its sentences, or one citation of
    a sentence (the sentence and one retrieved chunk it cites)."""

    # Indexed by the (campaign, level, theme) index below.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="units", db_index=False)
    level = models.CharField(max_length=10, choices=Level.choices)
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="units")
    sentence = models.ForeignKey(
        Sentence, on_delete=models.CASCADE, null=True, blank=True, related_name="units"
    )
    # A citation unit's cited chunk: one the retriever returned for the answer (a cited id that was
    # not retrieved makes no unit, see annotation.corpus.citations).
    chunk = models.ForeignKey(SourceChunk, on_delete=models.CASCADE, null=True, blank=True, related_name="+")
    # Copied from the question so that sampling and estimates group without joins.
    theme = models.CharField(max_length=200)
    difficulty = models.CharField(max_length=50, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["answer"], condition=Q(sentence__isnull=True), name="unit_unique_answer_level"
            ),
            models.UniqueConstraint(
                fields=["sentence"],
                condition=Q(sentence__isnull=False, chunk__isnull=True),
                name="unit_unique_sentence_level",
            ),
            models.UniqueConstraint(
                fields=["sentence", "chunk"], condition=Q(chunk__isnull=False), name="unit_unique_citation"
            ),
            models.CheckConstraint(
                condition=(
                    Q(level="answer", sentence__isnull=True, chunk__isnull=True)
                    | Q(level="sentence", sentence__isnull=False, chunk__isnull=True)
                    | Q(level="citation", sentence__isnull=False, chunk__isnull=False)
                ),
                name="unit_level_matches_sentence",
            ),
        ]
        indexes = [models.Index(fields=["campaign", "level", "theme"])]

    def __str__(self) -> str:
        return f"unit {self.pk} ({self.level})"


class Label(models.Model):
    """A human label. Append-only: a correction is a new row; the final label is derived."""

    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="labels")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="labels")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="labels"
    )
    stage = models.CharField(max_length=20, choices=Stage.choices)
    # None withdraws the same person's earlier label at this stage (undo).
    value = models.PositiveSmallIntegerField(null=True, blank=True)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The guidelines its author was shown (None: an imported label, written outside Attest).
    guidelines_version = models.ForeignKey(
        CriterionVersion, on_delete=models.RESTRICT, null=True, blank=True, related_name="+"
    )
    # A client-generated key: a retried or double-clicked submit is stored once.
    request_key = models.CharField(max_length=64, null=True, blank=True, unique=True)
    # Imported labels only (Label Studio, Argilla): the seconds their author spent on the unit
    # and when the source tool last saw the label edited (None: unknown, or made in Attest).
    seconds_spent = models.FloatField(null=True, blank=True)
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # 0/1 for a binary criterion, a category's value (1..20) for a categorical one; which
            # values a criterion takes is checked where labels are made (annotation.criteria.categories).
            models.CheckConstraint(
                condition=Q(value__gte=0, value__lte=20) | Q(value__isnull=True), name="label_value_range"
            ),
        ]
        indexes = [
            models.Index(fields=["criterion", "unit", "stage"]),
            models.Index(fields=["user", "created_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.stage} {self.value} on unit {self.unit_id}"


class Sample(models.Model):
    """A sample of one criterion's units drawn for human annotation; reproducible from its seed.

    Three designs: stratified K-means (the study's, the default); confidence-driven (a Poisson
    draw whose probabilities rise with the judge's uncertainty, computed in ``evaluation``, which
    hands the probabilities over; ``design_parameters`` then keeps what recomputes any unit's
    probability: per theme, the floor and the scale of the spread); or anytime (batches of draws
    with replacement, ``evaluation.designs.anytime``: each batch is a new sample holding every unit the
    sequence drew so far, and its ``design_parameters`` the ordered draws of each theme).
    """

    class Design(models.TextChoices):
        KMEANS = "kmeans", pgettext_lazy("sample design", "K-means (study)")
        CONFIDENCE = "confidence", pgettext_lazy("sample design", "Judge confidence")
        SEQUENTIAL = "anytime", pgettext_lazy("sample design", "Anytime (batches)")

    class Status(models.TextChoices):
        PENDING = "pending", pgettext_lazy("choice", "Pending")
        RUNNING = "running", pgettext_lazy("choice", "Running")
        DONE = "done", pgettext_lazy("choice", "Done")
        FAILED = "failed", pgettext_lazy("choice", "Failed")

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="samples")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="samples")
    seed = models.IntegerField(default=0)
    budget = models.PositiveIntegerField(default=0)
    per_cluster = models.PositiveIntegerField(default=3)
    k_per_theme = models.JSONField(default=dict, blank=True)
    embedding_backend = models.CharField(max_length=50, default="tfidf")
    design = models.CharField(max_length=20, choices=Design.choices, default=Design.KMEANS)
    design_parameters = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    progress = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    # When the sample entered its status: the request (pending) or the worker's claim (running).
    # A running sample's value is its claim: only the run that set it may finish the sample.
    status_since = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"sample {self.pk} of {self.criterion}"


class SampleItem(models.Model):
    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="items")
    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="sample_items")
    theme = models.CharField(max_length=200)
    cluster = models.IntegerField()
    cluster_size = models.PositiveIntegerField()
    inclusion_probability = models.FloatField()
    rank = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["sample_id", "theme", "cluster", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "unit"], name="sampleitem_unique_unit"),
            models.CheckConstraint(
                condition=Q(inclusion_probability__gt=0) & Q(inclusion_probability__lte=1),
                name="sampleitem_probability_range",
            ),
        ]


class Assignment(models.Model):
    """One label slot of a unit at a stage for a criterion: held under a lease, or filled by a label.

    A stage has one slot (two for the first stage in blind double mode). The unique slot is what
    keeps two people from being handed the same unit at the same stage: a lease is taken by
    inserting the row or by a conditional update of an expired one. Filling the slot links the
    label; withdrawing that label turns the row back into a lease held by the same person.
    """

    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="assignments")
    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="assignments")
    stage = models.CharField(max_length=20, choices=Stage.choices)
    slot = models.PositiveSmallIntegerField(default=1)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    # Deleting a label (never done by the workflow) frees its slot.
    label = models.OneToOneField(
        Label, on_delete=models.CASCADE, null=True, blank=True, related_name="assignment"
    )
    # The lease ends at this time; None once the slot is filled.
    expires_at = models.DateTimeField(null=True, blank=True)
    # Set when the holder skipped the unit: it comes back to them after the others.
    skipped_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["unit_id", "criterion_id", "stage", "slot"]
        constraints = [
            models.UniqueConstraint(
                fields=["unit", "criterion", "stage", "slot"], name="assignment_unique_slot"
            ),
            # One slot of a unit at a stage per person: the two blind slots never go to one person,
            # whatever two of their requests race (a submit and a prefetch, a double press); the
            # loser's claim fails on this index and looks further (annotation.workflow.queue).
            models.UniqueConstraint(
                fields=["unit", "criterion", "stage", "user"], name="assignment_one_slot_per_person"
            ),
            models.CheckConstraint(condition=Q(slot__gte=1) & Q(slot__lte=2), name="assignment_slot_range"),
            models.CheckConstraint(
                condition=Q(label__isnull=True, expires_at__isnull=False)
                | Q(label__isnull=False, expires_at__isnull=True),
                name="assignment_leased_or_filled",
            ),
        ]
        indexes = [
            models.Index(fields=["criterion", "stage", "user"]),
            # Leases (live, expired or skipped), never the filled slots: a person's own lease and
            # the slots others hold are read from it on every label, whatever the labels done.
            models.Index(
                fields=["criterion", "stage", "user"],
                condition=Q(label__isnull=True),
                name="assignment_open_lease",
            ),
        ]

    def __str__(self) -> str:
        state = "filled" if self.label_id else "leased"
        return f"{self.stage} slot {self.slot} of unit {self.unit_id} {state} by {self.user_id}"


class OpenSlot(models.Model):
    """A slot of the criterion's current sample that no label fills yet: the work queue, stored.

    Rows are derived from the sample, the slots and the labels (``annotation.workflow.open_slots``
    keeps them in step with every write), so that handing out the next unit reads the front of
    one index instead of testing every unit of the sample. A slot opens at a stage once its
    prerequisite holds (a first label to review, a disagreement to adjudicate) and closes when a
    label fills it; ``held_until`` mirrors the live lease on it, if any.
    """

    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+", db_index=False)
    stage = models.CharField(max_length=20, choices=Stage.choices)
    slot = models.PositiveSmallIntegerField(default=1)
    unit = models.ForeignKey(Unit, on_delete=models.CASCADE, related_name="+")
    theme = models.CharField(max_length=200)
    cluster = models.IntegerField()
    rank = models.PositiveIntegerField()
    held_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["criterion", "unit", "stage", "slot"], name="openslot_unique_slot"
            ),
        ]
        indexes = [
            # The queue's order: the front of a stage's queue is the first free row of this index.
            models.Index(
                fields=["criterion", "stage", "theme", "cluster", "rank", "unit", "slot"],
                name="openslot_queue_order",
            )
        ]

    def __str__(self) -> str:
        return f"open {self.stage} slot {self.slot} of unit {self.unit_id}"


class QueueTally(models.Model):
    """Counts of a criterion's current sample, set when the sample changes and then moved by each
    label, so that progress is read from a few rows instead of counted over the sample.

    ``kind`` is a stage (one row per person: the slots they filled there, and the units their
    labels settled, net of undos), ``sample`` (no person: the sample's size, and the units
    settled when the counts were last set) or ``imported`` (no person: units with an imported
    label, final from the start).
    """

    SAMPLE, IMPORTED = "sample", "imported"

    criterion = models.ForeignKey(Criterion, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=20)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    filled = models.IntegerField(default=0)
    settled = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["criterion", "kind", "user"], name="queuetally_unique_row"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.user_id}: {self.filled} filled, {self.settled} settled"
