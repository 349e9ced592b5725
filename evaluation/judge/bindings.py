"""A judge means one prompt: binding a judge to the exact system prompt it sends for a criterion.

The first run of an LLM judge on a criterion binds it to the system prompt rendered from the
criterion's current version of guidelines and judge prompt (``JudgePrompt``: the version, the
text and its SHA-256). Every later run and resume of that judge on that criterion must render the
same text: after an edit of the guidelines or the judge prompt that changes it, the run is refused
with a message saying why (the labels of one judge would otherwise rest on two prompts), and a
judge under a new name takes the new text. Runs send the bound version's texts, so an edit made
while a run works changes nothing it sends.
"""

from __future__ import annotations

import hashlib

from django.db import IntegrityError, transaction
from django.utils.translation import gettext_lazy as _

from annotation.criteria.categories import categories_of
from annotation.criteria.guidelines import current_version
from annotation.errors import refusal
from annotation.models import Criterion, CriterionVersion
from evaluation.judge import prompts
from evaluation.models import Judge, JudgePrompt


class PromptChanged(ValueError):
    """The criterion's texts now render another prompt than the one the judge is bound to (its
    message a lazy translation: ``str(error)`` speaks the active language)."""

    def __str__(self) -> str:
        return str(self.args[0])


def prompt_text(*, judge: Judge, criterion: Criterion, version: CriterionVersion) -> str:
    """The system prompt ``judge`` sends for ``criterion`` with ``version``'s texts."""
    return prompts.system_prompt(
        name=criterion.name,
        level=criterion.level,
        title=criterion.title,
        guidelines=version.guidelines,
        instructions=version.judge_prompt,
        language=judge.language,
        version=judge.prompt_version or prompts.PROMPT_VERSION,
        categories=prompt_categories(criterion),
    )


def prompt_categories(criterion: Criterion) -> list[tuple[int, str]] | None:
    """The (value, title) of a categorical criterion's categories as its prompt lists them;
    None for a binary criterion."""
    listed = [(category.value, category.title) for category in categories_of(criterion)]
    return listed or None


def sha256(text: str) -> str:
    """The SHA-256 of a prompt's text, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def binding_of(*, judge: Judge, criterion: Criterion) -> JudgePrompt | None:
    """The prompt ``judge`` is bound to for ``criterion``, its version loaded; None if unbound."""
    return JudgePrompt.objects.select_related("version").filter(judge=judge, criterion=criterion).first()


def bind(*, judge: Judge, criterion: Criterion) -> JudgePrompt | None:
    """The prompt ``judge`` sends for ``criterion``, bound on first use; None for a judge that
    sends no prompt (lexical, imported).

    Raises ``PromptChanged`` when the criterion's current texts render another prompt than the
    bound one. Two first runs that arrive together bind once (a unique constraint settles it).
    """
    if judge.kind != Judge.Kind.OPENAI:
        return None
    version = current_version(criterion=criterion)
    text = prompt_text(judge=judge, criterion=criterion, version=version)
    digest = sha256(text)
    binding = binding_of(judge=judge, criterion=criterion)
    if binding is None:
        try:
            with transaction.atomic():
                binding = JudgePrompt.objects.create(
                    judge=judge, criterion=criterion, version=version, sha256=digest, system_prompt=text
                )
        except IntegrityError:
            binding = binding_of(judge=judge, criterion=criterion)
            assert binding is not None
    if binding.sha256 != digest:
        raise PromptChanged(
            refusal(
                _(
                    "judge %(judge)s is bound to the prompt of %(criterion)s guidelines version "
                    "%(bound)s (sha256 %(sha)s); the prompt it would send now differs (an edit of "
                    "the criterion's title, guidelines or judge prompt; guidelines now version "
                    "%(current)s), and one judge's labels must rest on one prompt: run a judge under "
                    "a new name to use the new text"
                ),
                judge=judge.name,
                criterion=criterion.name,
                bound=binding.version.number,
                sha=binding.sha256[:12],
                current=version.number,
            )
        )
    return binding
