"""Answers as HTML for the annotation pages: untrusted text escaped first, then our own markup.

An answer is LLM output or imported text: every piece of it goes through ``escape`` before any
tag of ours is added (paragraphs and line breaks, **bold**, lists, titles, citation chips with
broken ids flagged, the sentence to judge highlighted). In a template::

    {% load answer_text %}
    {{ view|paragraph_html }}   the sentence's paragraph, the sentence highlighted
    {{ view|answer_html }}      the whole answer (the sentence highlighted, if any)

where ``view`` is an :class:`annotation.workbench.UnitView`.
"""

from __future__ import annotations

import re
from typing import Protocol

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from annotation.corpus.citations import compile_citation_pattern

register = template.Library()

_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_BULLET = re.compile(r"^\s*[-*•]\s+")
_NUMBERED = re.compile(r"^\s*\d{1,3}[.)]\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
# Sentinels around the sentence to highlight: control characters never found in answers.
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"


class ShownUnit(Protocol):
    """What the filters read of a unit on screen (:class:`annotation.workbench.UnitView`)."""

    answer_text: str
    paragraph_text: str | None
    sentence_text: str
    retrieved: frozenset[str]
    citation_pattern: str


def source_anchor(chunk_id: str) -> str:
    """The id of a source's card on the annotation pages, escaped for an attribute: ``source-<id>``
    with every character outside [A-Za-z0-9_-] written as its code point (ids are untrusted)."""
    return "source-" + "".join(
        c if c.isascii() and (c.isalnum() or c in "_-") else f".{ord(c):x}." for c in chunk_id
    )


def _cited_id(match: re.Match[str]) -> str:
    return match.group(1) if match.re.groups else match.group(0)


def _inline(text: str, *, citations: re.Pattern[str], retrieved: frozenset[str] | set[str]) -> str:
    """Escaped ``text`` with **bold**, citation chips (broken ones flagged) and highlight marks."""
    out, position = [], 0
    for match in citations.finditer(text):
        out.append(_BOLD.sub(r"<strong>\1</strong>", str(escape(text[position : match.start()]))))
        cited = escape(_cited_id(match))
        if _cited_id(match) in retrieved:
            # A link to the source's card on the page (see source_anchor).
            anchor = source_anchor(_cited_id(match))
            out.append(f'<a class="cite-link" href="#{anchor}"><span class="cite">{cited}</span></a>')
        else:
            out.append(
                f'<span class="cite broken" title="{escape(_("Cited but not retrieved"))}">{cited} '
                f'<span class="visually-hidden">({escape(_("cited but not retrieved"))})</span></span>'
            )
        position = match.end()
    out.append(_BOLD.sub(r"<strong>\1</strong>", str(escape(text[position:]))))
    return "".join(out).replace(MARK_OPEN, '<mark class="target">').replace(MARK_CLOSE, "</mark>")


def _line_kind(line: str) -> tuple[str, str]:
    """("ul" | "ol" | "h" | "", the line without its list or title marker)."""
    for pattern, tag in ((_BULLET, "ul"), (_NUMBERED, "ol"), (_HEADING, "h")):
        if match := pattern.match(line):
            return tag, line[match.end() :]
    return "", line


def render_text(text: str, *, citations: re.Pattern[str], retrieved: frozenset[str] | set[str]) -> SafeString:
    """Untrusted answer text as HTML: escaped, line breaks kept, light markdown (bold, lists, titles).

    Highlight sentinels (MARK_OPEN/MARK_CLOSE) never span a line, so marks stay well nested.
    """
    blocks: list[str] = []
    paragraph: list[str] = []
    items: list[str] = []
    kind = ""

    def flush() -> None:
        nonlocal paragraph, items, kind
        if paragraph:
            blocks.append("<p>" + "<br>".join(paragraph) + "</p>")
        if items:
            blocks.append(f"<{kind}>" + "".join(f"<li>{item}</li>" for item in items) + f"</{kind}>")
        paragraph, items, kind = [], [], ""

    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw
        opened = raw.lstrip().startswith(MARK_OPEN)
        if opened:
            line = raw.replace(MARK_OPEN, "", 1)
        tag, body = _line_kind(line)
        body = (MARK_OPEN if opened else "") + body
        rendered = _inline(body, citations=citations, retrieved=retrieved)
        if not line.strip():
            flush()
        elif tag == "h":
            flush()
            blocks.append(f'<p class="heading"><strong>{rendered}</strong></p>')
        elif tag:
            if paragraph or (items and kind != tag):
                flush()
            kind = tag
            items.append(rendered)
        else:
            if items:
                flush()
            paragraph.append(rendered)
    flush()
    # Safe: every piece of text went through escape() in _inline.
    return mark_safe("".join(blocks))


def clean(text: str) -> str:
    """``text`` without highlight sentinels (an answer cannot smuggle its own marks in)."""
    return text.replace(MARK_OPEN, "").replace(MARK_CLOSE, "")


def _marked(text: str, start: int, end: int) -> str:
    """``text`` with sentinels around [start, end), closed and reopened at each line break."""
    inner = text[start:end].replace("\n", f"{MARK_CLOSE}\n{MARK_OPEN}")
    return f"{text[:start]}{MARK_OPEN}{inner}{MARK_CLOSE}{text[end:]}"


def highlight(*, sentence: str, paragraph: str, answer: str) -> tuple[str, str]:
    """The paragraph and the answer with the sentence marked (sentinels removed from all three first).

    The answer is marked at the sentence's place in its paragraph when both are found, else at the
    sentence's first occurrence, else left unmarked.
    """
    sentence, paragraph, answer = clean(sentence), clean(paragraph), clean(answer)
    at = paragraph.find(sentence) if sentence else -1
    found = at >= 0
    marked_paragraph = _marked(paragraph, at, at + len(sentence)) if found else paragraph
    start = answer.find(paragraph) if paragraph else -1
    if found and start >= 0:
        marked_answer = _marked(answer, start + at, start + at + len(sentence))
    else:
        anywhere = answer.find(sentence) if sentence else -1
        marked_answer = _marked(answer, anywhere, anywhere + len(sentence)) if anywhere >= 0 else answer
    return marked_paragraph, marked_answer


def _render(view: ShownUnit, text: str) -> SafeString:
    return render_text(
        text, citations=compile_citation_pattern(view.citation_pattern), retrieved=view.retrieved
    )


@register.filter
def answer_html(view: ShownUnit) -> SafeString:
    """The unit's whole answer as HTML; for a sentence unit, the sentence highlighted in it."""
    if view.paragraph_text is None:
        return _render(view, clean(view.answer_text))
    _paragraph, answer = highlight(
        sentence=view.sentence_text, paragraph=view.paragraph_text, answer=view.answer_text
    )
    return _render(view, answer)


@register.filter
def paragraph_html(view: ShownUnit) -> SafeString:
    """The sentence unit's paragraph as HTML, the sentence highlighted in it."""
    paragraph, _answer = highlight(
        sentence=view.sentence_text, paragraph=view.paragraph_text or "", answer=view.answer_text
    )
    return _render(view, paragraph)


@register.filter
def unit_snippet(view: ShownUnit, length: int = 80) -> str:
    """A short plain reminder of the unit (its sentence, or the start of its answer), without
    citations, bold or marks, cut at ``length`` characters: what the trail of last labels shows."""
    text = view.sentence_text if view.paragraph_text is not None else view.answer_text
    text = " ".join(compile_citation_pattern(view.citation_pattern).sub("", clean(text)).split())
    text = re.sub(r" ([.,])", r"\1", text)  # the space a removed citation left (French keeps " ?")
    text = text.replace("**", "")
    return text if len(text) <= length else text[: length - 1].rstrip() + "…"


@register.filter
def source_id(chunk_id: str) -> str:
    """The anchor of a source's card: the target of the citation chips (see :func:`source_anchor`)."""
    return source_anchor(str(chunk_id))
