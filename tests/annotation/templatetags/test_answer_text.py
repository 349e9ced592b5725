"""The answer renderer (``annotation/templatetags/answer_text.py``): untrusted text escaped first,
then light formatting, citation chips and the highlighted sentence."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.core.exceptions import ValidationError
from django.template import Context, Template

from annotation.corpus.citations import CitationPatternError, compile_citation_pattern
from annotation.corpus.conventions import DEFAULT_CITATION_PATTERN
from annotation.models import Campaign
from annotation.templatetags.annotation_format import as_sentence
from annotation.templatetags.answer_text import (
    MARK_CLOSE,
    MARK_OPEN,
    highlight,
    render_text,
)

CITATIONS = re.compile(DEFAULT_CITATION_PATTERN)
HOSTILE = '<script>alert("x")</script> {{ secret }} {% now \'Y\' %} l\'"offre" & <b>gras</b>'


@dataclass
class Shown:
    """What the filters read of a unit on screen (as annotation.workbench.UnitView holds it)."""

    answer_text: str
    paragraph_text: str | None = None
    sentence_text: str = ""
    retrieved: frozenset[str] = frozenset({"c1"})
    citation_pattern: str = DEFAULT_CITATION_PATTERN


def rendered(source: str, view: Shown) -> str:
    return Template("{% load answer_text %}" + source).render(Context({"view": view, "secret": "LEAKED"}))


def test_hostile_text_comes_out_escaped_and_is_never_run_as_a_template():
    html = rendered("{{ view|answer_html }}", Shown(answer_text=HOSTILE))
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "{{ secret }}" in html and "LEAKED" not in html
    assert "{% now &#x27;Y&#x27; %}" in html
    assert "l&#x27;&quot;offre&quot; &amp; &lt;b&gt;gras&lt;/b&gt;" in html


def test_hostile_sentence_and_paragraph_come_out_escaped_with_the_sentence_marked():
    sentence = 'Le <img src=x onerror="alert(1)"> [^c1^].'
    view = Shown(
        answer_text=f"Intro.\n\n{sentence} Suite.",
        paragraph_text=f"{sentence} Suite.",
        sentence_text=sentence,
    )
    paragraph = rendered("{{ view|paragraph_html }}", view)
    assert "<img" not in paragraph
    assert paragraph == (
        '<p><mark class="target">Le &lt;img src=x onerror=&quot;alert(1)&quot;&gt; '
        '<a class="cite-link" href="#source-c1"><span class="cite">c1</span></a>.</mark> Suite.</p>'
    )
    whole = rendered("{{ view|answer_html }}", view)
    assert whole.startswith('<p>Intro.</p><p><mark class="target">Le &lt;img')


def test_an_answer_cannot_smuggle_highlight_marks_in():
    html = rendered("{{ view|answer_html }}", Shown(answer_text=f"a {MARK_OPEN}b{MARK_CLOSE} c"))
    assert "<mark" not in html and html == "<p>a b c</p>"


def test_light_markdown_bold_lists_titles_and_line_breaks():
    text = "## Synthèse\n**Oui** : ligne un\nligne deux\n\n- premier\n- second\n1. un\n2) deux\n\nfin"
    html = render_text(text, citations=CITATIONS, retrieved=set())
    assert html == (
        '<p class="heading"><strong>Synthèse</strong></p>'
        "<p><strong>Oui</strong> : ligne un<br>ligne deux</p>"
        "<ul><li>premier</li><li>second</li></ul><ol><li>un</li><li>deux</li></ol><p>fin</p>"
    )


def test_citations_become_chips_and_ids_never_retrieved_are_flagged():
    html = render_text("Vrai [^c1^], inventé [^zz9^].", citations=CITATIONS, retrieved={"c1"})
    assert '<span class="cite">c1</span>' in html
    assert '<span class="cite broken" title="Cited but not retrieved">zz9 ' in html
    assert "[^" not in html


def test_a_campaign_citation_pattern_capturing_markup_still_escapes_it():
    html = render_text("Voir [<i>x</i>].", citations=re.compile(r"\[(.+?)\]"), retrieved=set())
    assert "<i>" not in html and "&lt;i&gt;x&lt;/i&gt;" in html


def test_a_campaign_citation_pattern_that_cannot_find_ids_is_refused_when_saved(db):
    """The one compiled pattern (``compile_citation_pattern``) refuses it; the campaign's field
    refuses it when saved (the admin's form names the field), so no page ever reads one."""
    for pattern, reason in (("[unclosed", "invalid regular expression"), (r"\[\d+\]", "has no group")):
        with pytest.raises(CitationPatternError, match=reason):
            compile_citation_pattern(pattern)
        campaign = Campaign(name="Patterns", slug="patterns", citation_pattern=pattern)
        with pytest.raises(ValidationError) as refused:
            campaign.full_clean()
        assert list(refused.value.message_dict) == ["citation_pattern"]
    Campaign(name="Own", slug="own", citation_pattern=r"\[(\d+)\]").full_clean()
    view = Shown(answer_text="Vrai [1].", citation_pattern=r"\[(\d+)\]")
    assert '<span class="cite broken" title="Cited but not retrieved">1 ' in rendered(
        "{{ view|answer_html }}", view
    )


def test_highlight_marks_the_sentence_in_its_paragraph_and_in_the_answer_line_by_line():
    paragraph, answer = highlight(sentence="b\nc", paragraph="a b\nc d", answer="x\n\na b\nc d")
    assert paragraph == f"a {MARK_OPEN}b{MARK_CLOSE}\n{MARK_OPEN}c{MARK_CLOSE} d"
    assert answer == f"x\n\na {MARK_OPEN}b{MARK_CLOSE}\n{MARK_OPEN}c{MARK_CLOSE} d"


def test_a_sentence_missing_from_its_paragraph_is_marked_where_the_answer_has_it_or_nowhere():
    assert highlight(sentence="b", paragraph="zzz", answer="a b") == ("zzz", f"a {MARK_OPEN}b{MARK_CLOSE}")
    assert highlight(sentence="q", paragraph="zzz", answer="a b") == ("zzz", "a b")


@pytest.mark.parametrize(
    ("message", "sentence"),
    [
        ("nothing to undo at this stage", "Nothing to undo at this stage."),
        ("Guidelines version 3 is not a version of Tone", "Guidelines version 3 is not a version of Tone."),
        (
            "Your last label was withdrawn: here is the unit again.",
            "Your last label was withdrawn: here is the unit again.",
        ),
        ("", ""),
    ],
)
def test_a_domain_message_becomes_a_sentence(message, sentence):
    assert as_sentence(message) == sentence


def test_a_citation_chip_links_to_its_source_card_whatever_the_id():
    from annotation.templatetags.answer_text import source_anchor

    assert source_anchor("4ca822") == "source-4ca822"
    hostile = source_anchor('x" onmouseover="alert(1) é')
    assert hostile.startswith("source-x.22.") and all(c.isalnum() or c in "-_." for c in hostile)
    assert source_anchor("a b") != source_anchor("a_b")
