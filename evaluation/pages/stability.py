"""What the stability page shows besides its figures: the table of every question, rendered once
per language and kept beside the figures (at a thousand repetitions of a thousand questions it
is 2.9 MB, and rendering it was most of a visit)."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string
from django.utils.translation import get_language

from evaluation import page_cache
from evaluation.measures.stability import Stability

QUESTIONS_TABLE = "evaluation/_stability_questions.html"


def questions_table(*, result: Stability, key: list[Any]) -> str:
    """The table of ``result``'s questions in the current language, kept in the page cache under
    ``key`` (the figures' own, ``stability.stability_key``) and the language."""
    return page_cache.cached(
        "stability-questions",
        [*key, get_language()],
        lambda: render_to_string(QUESTIONS_TABLE, {"result": result}),
    )
