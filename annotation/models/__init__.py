"""The corpus and the human work, a module per room: campaigns and their people
(``campaigns``), what is evaluated (``corpus``: questions, chunks, answers, sentences, units),
what is labelled (``criteria``), samples (``sampling``), and the work itself (``workflow``:
labels, leases, the stored queue). Their length is the lower layer's tables, each with its
constraints; the logic lives in the rooms beside them. Every model is imported from here.
"""

from annotation.models.campaigns import (
    AnnotationMode,
    Campaign,
    Level,
    Membership,
    Role,
    Stage,
    validate_abstention_patterns,
    validate_citation_pattern,
)
from annotation.models.corpus import Answer, AnswerSource, Question, Sentence, SourceChunk, Unit
from annotation.models.criteria import RESERVED_KEYS, Criterion, CriterionVersion
from annotation.models.sampling import Sample, SampleItem
from annotation.models.workflow import Assignment, Label, OpenSlot, QueueTally

__all__ = [
    "Role",
    "AnnotationMode",
    "Level",
    "Stage",
    "validate_citation_pattern",
    "validate_abstention_patterns",
    "Campaign",
    "Membership",
    "Question",
    "SourceChunk",
    "Answer",
    "AnswerSource",
    "Sentence",
    "Unit",
    "RESERVED_KEYS",
    "Criterion",
    "CriterionVersion",
    "Sample",
    "SampleItem",
    "Label",
    "Assignment",
    "OpenSlot",
    "QueueTally",
]
