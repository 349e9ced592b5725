"""The checks of an import that need the database, run from pass 1's bookkeeping.

They read the campaign in batches of ids and write nothing; every problem goes to one error log
(file, row, field), so that the import is refused before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from heapq import merge

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from annotation.corpus.conventions import BUILTIN_CRITERIA
from annotation.criteria.categories import categories_of, groups_of
from annotation.errors import refusal
from annotation.ingest.errors import ErrorLog
from annotation.ingest.formats import DeclaredCriterion
from annotation.ingest.noting import CITATION_LEVEL, SENTENCE_LEVEL, text_digest
from annotation.ingest.validate import CheckedFile
from annotation.models import Answer, Campaign, Criterion, Label, Question, SampleItem, SourceChunk, Stage

# What may differ between a criterion a file declares and the campaign's, as a refusal says it.
_DIFFERENCES = {
    "level": _("level"),
    "kind": _("kind (binary or categories)"),
    "categories": _("categories"),
    "groups": _("groups of categories"),
}
# Ids per "IN (...)" lookup: SQLite limits the number of parameters of one statement.
LOOKUP_BATCH = 500


def batches(items: list, size: int) -> Iterator[list]:
    """``items`` in consecutive lists of ``size`` (the last one shorter)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass
class Existing:
    """What the campaign already holds of the file: pks by external id (questions), by (id, text
    hash) (chunks) and of the answers --update replaces."""

    questions: dict[str, int] = field(default_factory=dict)
    chunks: dict[tuple[str, str], int] = field(default_factory=dict)
    replaced: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def check_against_campaign(*, checked: CheckedFile, campaign: Campaign | None, update: bool) -> Existing:
    """Every check of ``checked`` that needs the database (``campaign`` None: a new one).

    Raises ImportFailed listing the problems (file, row, field); writes nothing. Returns the
    pks the writer links to and the warnings about chunks.
    """
    check = _Check(checked=checked, campaign=campaign, update=update)
    check.declarations()
    check.criteria()
    existing = Existing(questions=check.questions(), chunks=check.chunks(), replaced=check.answers())
    existing.warnings = check.warnings
    check.errors.raise_if_any()
    return existing


class _Check:
    def __init__(self, *, checked: CheckedFile, campaign: Campaign | None, update: bool) -> None:
        self.checked = checked
        self.campaign = campaign
        self.update = update
        self.errors = ErrorLog(file=checked.name)
        self.warnings: list[str] = []

    def error(self, *, row: int, path: str, message: str | Promise) -> None:
        self.errors.add(row=row, field=self.checked.field_name(path), message=message)

    def declarations(self) -> None:
        """The file's declared criteria against the campaign's of the same names (level, kind,
        categories and groups must be the same), and its citation pattern against the answers
        the campaign holds (they were split with the campaign's)."""
        declared = self.checked.declarations
        self.mismatched: set[str] = set()
        if self.campaign is None:
            existing: dict[str, Criterion] = {}
        else:
            names = [criterion.name for criterion in declared.criteria]
            existing = {c.name: c for c in Criterion.objects.filter(campaign=self.campaign, name__in=names)}
        for criterion in declared.criteria:
            other = existing.get(criterion.name)
            differs: str | None
            if other is None:
                spec = BUILTIN_CRITERIA.get(criterion.name)
                if spec is None or (spec["level"] == criterion.level and not criterion.categories):
                    continue
                differs = "level" if spec["level"] != criterion.level else "kind"
            else:
                differs = _difference(declared=criterion, criterion=other)
                if differs is None:
                    continue
            self.mismatched.add(criterion.name)
            self.errors.add(
                row=None,
                field=f"criteria.{criterion.name}",
                message=refusal(
                    _(
                        "the campaign's criterion %(criterion)s has another %(what)s than the file "
                        "declares; import into another campaign, or rename the file's criterion"
                    ),
                    criterion=repr(criterion.name),
                    what=_DIFFERENCES[differs],
                ),
            )
        pattern = declared.citation_pattern
        if (
            pattern is not None
            and self.campaign is not None
            and self.campaign.citation_pattern != pattern
            and Answer.objects.filter(campaign=self.campaign).exists()
        ):
            self.errors.add(
                row=None,
                field="citation_pattern",
                message=refusal(
                    _(
                        "the file's citations are written %(pattern)s but the campaign's answers were "
                        "split with %(campaign)s; import into a new campaign"
                    ),
                    pattern=repr(pattern),
                    campaign=repr(self.campaign.citation_pattern),
                ),
            )

    def criteria(self) -> None:
        if self.campaign is None:
            levels = {name: spec["level"] for name, spec in BUILTIN_CRITERIA.items()}
        else:
            levels = dict(Criterion.objects.filter(campaign=self.campaign).values_list("name", "level"))
        for declared in self.checked.declarations.criteria:
            levels.setdefault(declared.name, declared.level)
        known = ", ".join(sorted(levels))
        bad: list[list[tuple[int, int, str, Promise]]] = []
        beyond = 0
        for (criterion, level), uses in self.checked.labels.items():
            if criterion in self.mismatched:
                continue  # refused once, for the whole file (``declarations``)
            actual = levels.get(criterion)
            if actual is None:
                message = refusal(
                    _(
                        "the campaign has no criterion %(criterion)s (it has %(known)s); "
                        "create the criterion before importing its labels"
                    ),
                    criterion=repr(criterion),
                    known=known,
                )
            elif actual == CITATION_LEVEL:
                message = refusal(
                    _(
                        "%(criterion)s is a citation-level criterion: its labels are given in Attest, "
                        "not in an import file"
                    ),
                    criterion=repr(criterion),
                )
            elif actual != level:
                message = refusal(
                    _("%(criterion)s is a %(level)s-level criterion: give its labels in sentences[].labels")
                    if actual == SENTENCE_LEVEL
                    else _(
                        "%(criterion)s is a %(level)s-level criterion: give its labels in the answer's labels"
                    ),
                    criterion=repr(criterion),
                    level=actual,
                )
            else:
                continue
            bad.append([(order, row, path, message) for order, row, path in uses.first])
            beyond += uses.count - len(uses.first)
        # In file order, as they appear: each criterion kept its first MAX_ERRORS places, which
        # hold every one that can be listed; the others are only counted.
        for _order, row, path, message in merge(*bad):
            self.error(row=row, path=path, message=message)
        self.errors.more += beyond

    def questions(self) -> dict[str, int]:
        """Pks of the file's questions already in the campaign; differing ones are errors."""
        if self.campaign is None:
            return {}
        first = self.checked.questions
        found: dict[str, int] = {}
        differing: list[tuple[int, str, str, str]] = []
        for ids in batches(list(first), LOOKUP_BATCH):
            rows = Question.objects.filter(campaign=self.campaign, external_id__in=ids).values_list(
                "external_id", "pk", "text", "theme", "difficulty"
            )
            for external_id, pk, text, theme, difficulty in rows:
                found[external_id] = pk
                seen = first[external_id]
                if text_digest(text) != seen.text:
                    differing.append((seen.row, "question", external_id, text))
                for attribute, value in (("theme", theme), ("difficulty", difficulty)):
                    if getattr(seen, attribute) != value:
                        differing.append((seen.row, attribute, external_id, value))
        # The file's question texts are read again only for these messages.
        texts = self.checked.question_texts(
            rows={row for row, attribute, *_ in differing if attribute == "question"}
        )
        for row, attribute, external_id, value in differing:
            seen = first[external_id]
            given = texts.get(row, "") if attribute == "question" else getattr(seen, attribute)
            self.error(
                row=row,
                path=attribute,
                message=refusal(
                    _("question %(question)s is already in the campaign with %(value)s, not %(given)s"),
                    question=repr(external_id),
                    value=repr(value),
                    given=repr(given),
                ),
            )
        return found

    def chunks(self) -> dict[tuple[str, str], int]:
        """Pks of the file's chunks already in the campaign, by (id, text hash).

        A text already stored under the id is shared; another text is a new row, not an error.
        Warns once about the ids that come with several texts, in the file and the campaign.
        """
        variants: dict[str, int] = {}
        for chunk_id, _text in self.checked.chunks:
            variants[chunk_id] = variants.get(chunk_id, 0) + 1
        stored_only: set[str] = set()
        found: dict[tuple[str, str], int] = {}
        name = self.checked.name
        if self.campaign is not None:
            for ids in batches(list(variants), LOOKUP_BATCH):
                rows = SourceChunk.objects.filter(campaign=self.campaign, external_id__in=ids).values_list(
                    "external_id", "text_hash", "pk", "title", "page"
                )
                for external_id, text_hash, pk, title, page in rows:
                    seen = self.checked.chunks.get((external_id, text_hash))
                    if seen is None:
                        variants[external_id] += 1
                        stored_only.add(external_id)
                        continue
                    found[(external_id, text_hash)] = pk
                    if seen.title_page != hash((title, page)):
                        self.warnings.append(
                            f"{name}:{seen.row}: {self.checked.field_name(seen.field)}: chunk "
                            f"{external_id!r} is already in the campaign with this text and another "
                            "title or page; the stored one is kept"
                        )
        several = [chunk_id for chunk_id, count in variants.items() if count > 1]
        if several:
            example = several[0]
            example_rows = sorted(
                seen.row for (chunk_id, _), seen in self.checked.chunks.items() if chunk_id == example
            )
            where = (
                f"rows {', '.join(map(str, example_rows[:-1]))} and {example_rows[-1]}"
                if len(example_rows) > 1
                else f"row {example_rows[0]}"
            )
            if example in stored_only:
                where += " and in the campaign"
            self.warnings.append(
                f"{name}: {len(several)} chunk id{'s' if len(several) > 1 else ''} "
                f"came with several texts (such as {example!r}: {where}); "
                "each answer keeps the text it was given"
            )
        return found

    def answers(self) -> dict[str, int]:
        """Pks of the answers to replace (update); existing answers are errors otherwise."""
        if self.campaign is None:
            return {}
        rows_by_id = self.checked.answers
        found: dict[str, int] = {}
        for ids in batches(list(rows_by_id), LOOKUP_BATCH):
            found.update(
                Answer.objects.filter(campaign=self.campaign, external_id__in=ids).values_list(
                    "external_id", "pk"
                )
            )
        if not self.update:
            for external_id in found:
                self.error(
                    row=rows_by_id[external_id],
                    path="answer_id",
                    message=refusal(
                        _("%(answer)s is already in the campaign; import with update to replace it"),
                        answer=repr(external_id),
                    ),
                )
            return found
        by_pk = {pk: external_id for external_id, pk in found.items()}
        for pks in batches(list(by_pk), LOOKUP_BATCH):
            labelled = (
                Label.objects.filter(unit__answer_id__in=pks)
                .exclude(stage=Stage.IMPORTED)
                .values_list("unit__answer_id", flat=True)
                .distinct()
            )
            for pk in labelled:
                self.error(
                    row=rows_by_id[by_pk[pk]],
                    path="answer_id",
                    message=refusal(
                        _(
                            "%(answer)s has labels made in the app; replacing it would delete them, "
                            "so the update is refused"
                        ),
                        answer=repr(by_pk[pk]),
                    ),
                )
            sampled = SampleItem.objects.filter(unit__answer_id__in=pks).values_list(
                "unit__answer_id", flat=True
            )
            for pk in set(sampled):
                self.error(
                    row=rows_by_id[by_pk[pk]],
                    path="answer_id",
                    message=refusal(
                        _("%(answer)s is in a drawn sample; replacing it would change the sample"),
                        answer=repr(by_pk[pk]),
                    ),
                )
        return found


def _difference(*, declared: DeclaredCriterion, criterion: Criterion) -> str | None:
    """What differs between a declared criterion and the campaign's of its name ("level",
    "kind", "categories", "groups"), or None."""
    if criterion.level != declared.level:
        return "level"
    if criterion.kind != declared.kind:
        return "kind"
    if declared.categories:
        ours = [(c.value, c.key.lower(), c.name) for c in categories_of(criterion)]
        if ours != [(value, key.lower(), name) for value, key, name, _title in declared.categories]:
            return "categories"
        if declared.groups and groups_of(criterion) != declared.group_dict():
            return "groups"
    return None
