"""Every page in French, as each role reads it: no English the catalogue knows, no decimal point.

The demo campaign (``load_demo``: two versions of the assistant, samples, imported and lexical
judges, a criterion with categories, snapshots) is walked with the test client in French: every
address of ``evaluation/urls.py``, ``annotation/urls.py`` and the API's pages, with every value
its parameters take there (criteria, stages, units of each level, judge runs, samples), a few
queries that change what a page shows, as each role; then the login page and the error pages. A
page offends when its visible text (text, ``title``, ``aria-label``, ``placeholder``, ``alt``)
holds

- an English msgid of the French catalogue whose French differs: a string the catalogue knows
  that the page did not translate;
- an English sentence (two words French never writes, "the", "of", "with"...): a string the
  catalogue does not know yet;
- a number written with a decimal point, or a percentage glued to its number (French puts a
  no-break space before ``%``);

or when it lacks the header's language switch. What the campaign's people wrote or imported
(questions, answers, sources, names, an LLM's words) and code (``<code>``, ``<pre>``) are
left out. Every offence is listed at once, page by page.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import translation
from django.views.defaults import bad_request, server_error

from annotation.broker import QueueDown
from annotation.models import Answer, Campaign, Criterion, Question, Sample, Sentence, SourceChunk, Unit
from config.lockout import locked_out
from config.unavailable import QueueDownMiddleware
from evaluation.demo.campaign import DEMO_SUPERUSER, load_demo
from evaluation.models import Judge, JudgeRun, Judgment
from tests.test_i18n import CATALOGUE, _entries

FRENCH = {"HTTP_ACCEPT_LANGUAGE": "fr"}
# The text of these elements is not read: scripts, styles, what a person types, and code (field
# names, file examples: machine text, the same in every language).
UNREAD = {"script", "style", "textarea", "code", "pre", "kbd"}
READ_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt")
# A number with a decimal point (not a dotted version or address: 1.2.3, 127.0.0.1), a percentage
# glued to its number.
DECIMAL_POINT = re.compile(r"(?<![\w.])\d+\.\d+(?![\w.]*\d)")
GLUED_PERCENT = re.compile(r"\d%")
# Words French never writes: two of them in one text of ours make it an English sentence, in the
# catalogue or not.
ENGLISH_WORDS = frozenset(
    [
        "the",
        "and",
        "with",
        "which",
        "is",
        "are",
        "of",
        "to",
        "from",
        "for",
        "this",
        "that",
        "when",
        "by",
        "was",
        "were",
    ]
)
WORD = re.compile(r"[A-Za-z]+")
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%[sd]")
TAG = re.compile(r"<[^>]+>")
SWITCH = 'action="/i18n/setlang/"'
# The API's docs page is Swagger UI's own, for developers, in its own English: no header of ours.
SWAGGER = 'id="swagger-ui"'
# Between two texts of a page when they are joined: no msgid spans it.
JOIN = "\u2063"


class _Visible(HTMLParser):
    """The text a person reads on a page, one string per text node or read attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.nodes: list[str] = []
        self.skipping = 0
        # The page's language (its first ``lang``), and the elements that say they are in another
        # one (the language switch's "English"): their tags, to find where they end.
        self.language: str | None = None
        self.foreign: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in UNREAD:
            self.skipping += 1
        lang = dict(attrs).get("lang")
        if lang and self.language is None:
            self.language = lang
        elif lang and lang != self.language:
            self.foreign.append(tag)
            self.skipping += 1
            return
        for name, value in attrs:
            if name in READ_ATTRIBUTES and value and value.strip():
                self.nodes.append(" ".join(value.split()))

    def handle_endtag(self, tag: str) -> None:
        if tag in UNREAD and self.skipping:
            self.skipping -= 1
        if self.foreign and tag == self.foreign[-1]:
            self.foreign.pop()
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if text and not self.skipping:
            self.nodes.append(text)


def visible_texts(html: str) -> list[str]:
    """What a person reads on ``html``: its text nodes and read attributes, spaces collapsed."""
    parser = _Visible()
    parser.feed(html)
    parser.close()
    return parser.nodes


@dataclass(frozen=True)
class Msgid:
    text: str  # as a person reads it: tags out, spaces single
    pattern: re.Pattern[str]
    single_word: bool
    # Its longest literal stretch: a page whose text lacks it cannot hold the msgid (a quick
    # test before the pattern's).
    anchor: str


@cache
def untranslated_candidates() -> tuple[Msgid, ...]:
    """The catalogue's English strings whose French differs, each as a pattern whose
    placeholders match a few words of one text."""
    found = []
    entries = _entries(CATALOGUE.read_text(encoding="utf-8"))
    # A word the catalogue itself writes as French ("Source", "Import") is not English.
    french_texts = {text for entry in entries for text in entry["msgstr"]}
    for entry in entries:
        french = entry["msgstr"][0] if entry["msgstr"] else ""
        for english in filter(None, (entry["msgid"], entry.get("msgid_plural"))):
            if english == french or english in french_texts:
                continue
            text = " ".join(TAG.sub(" ", english).split()).replace("%%", "%")
            parts = PLACEHOLDER.sub("\x00", text).split("\x00")
            if not any(re.search(r"[A-Za-z]{2}", part) for part in parts):
                continue  # "%(a)s / %(b)s": nothing English to find
            # Words may sit in two texts of the page (a tag between them); a placeholder may not.
            space = rf"[\s{JOIN}]*"
            body = rf"[^{JOIN}]{{1,80}}?".join(space.join(map(re.escape, part.split(" "))) for part in parts)
            words = re.findall(r"[A-Za-z]+", PLACEHOLDER.sub(" ", text))
            found.append(
                Msgid(
                    text=text,
                    pattern=re.compile(rf"(?<![\w%(-]){body}(?![\w-])"),
                    single_word=len(words) <= 1,
                    anchor=max((part.strip() for part in parts), key=len),
                )
            )
    return tuple(found)


@dataclass
class Data:
    """What the campaign's people wrote or imported: never a string of ours."""

    exact: set[str] = field(default_factory=set)
    corpus: str = ""

    def holds(self, node: str) -> bool:
        bare = node.rstrip("…").strip()
        if bare in self.exact or node in self.exact:
            return True
        return len(bare) >= 16 and bare in self.corpus


def campaign_data() -> Data:
    """Every text the campaigns' people gave: corpus, names, an LLM judge's reasoning."""
    texts: list[str] = []
    for model, fields in (
        (Question, ("text", "theme", "difficulty", "external_id", "reference_answer")),
        (Answer, ("text", "external_id")),
        (Sentence, ("text", "paragraph")),
        (SourceChunk, ("text", "title", "external_id")),
    ):
        for values in model.objects.values_list(*fields):
            texts.extend(" ".join(str(v).split()) for v in values if v)
    reasons = Judgment.objects.exclude(judge__kind=Judge.Kind.LEXICAL).exclude(reasoning="")
    texts.extend(" ".join(text.split()) for text in reasons.values_list("reasoning", flat=True))
    exact = {text for text in texts if len(text) < 60}
    exact |= set(get_user_model().objects.values_list("username", flat=True))
    exact |= set(Judge.objects.values_list("name", flat=True))
    exact |= set(Campaign.objects.values_list("name", flat=True))
    exact |= set(Criterion.objects.values_list("name", flat=True))
    return Data(exact=exact, corpus="\n".join(texts))


def offences(html: str, *, data: Data) -> list[str]:
    """What a French page shows that it should not (see the module docstring)."""
    nodes = [node for node in visible_texts(html) if not data.holds(node)]
    text, plain = f" {JOIN} ".join(nodes), " ".join(nodes)
    words = {node.rstrip(" :.") for node in nodes}
    found: list[str] = []
    for msgid in untranslated_candidates():
        if msgid.single_word:
            if msgid.text in words:
                found.append(f"English: {msgid.text!r}")
        elif msgid.anchor in plain and (match := msgid.pattern.search(text)):
            found.append(f"English: {msgid.text!r} in {_around(text, match)!r}")
    for node in nodes:
        english = [word for word in WORD.findall(node) if word.lower() in ENGLISH_WORDS]
        if len(english) >= 2 and not any(node[:40] in offence for offence in found):
            found.append(f"English sentence: {node[:120]!r}")
        for match in DECIMAL_POINT.finditer(node):
            found.append(f"decimal point: {match.group(0)!r} in {_around(node, match)!r}")
        for match in GLUED_PERCENT.finditer(node):
            found.append(f"percentage without its space: {_around(node, match)!r}")
    if "<body" in html and SWITCH not in html and SWAGGER not in html:
        found.append("no language switch in the header")
    return found


def _around(text: str, match: re.Match[str], width: int = 50) -> str:
    start, end = max(0, match.start() - width), min(len(text), match.end() + width)
    return text[start:end].replace(JOIN, "|")


# The walk


def _patterns(resolver: URLResolver, namespace: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from _patterns(entry, inner)
        elif entry.name:
            yield f"{namespace}{entry.name}", entry


WALKED = ("evaluation:", "annotation:", "api:", "api-v1:openapi-view")
# Files, not pages: exports, JSON, the example file.
FILE = re.compile(r"\.[a-z]+$|json/?$")
# A page asked with other parameters shows other sections (the report's, for one criterion).
QUERIES = {
    ("evaluation:report", "relevance"): (
        "",
        "?method=study",
        "?clusters=question",
        "?shrinkage=on",
        "?alpha=2",
    ),
    ("evaluation:compare", "relevance"): ("", "?other={other}"),
    ("evaluation:stability", None): ("", "?measure=metric:response"),
    ("evaluation:annotators", None): ("", "?criterion=veracity"),
    ("evaluation:confidence_sample", None): ("", "?criterion={relevance}&judge={lexical}&budget=40&seed=7"),
    ("evaluation:evidence", None): ("", "?criterion=correctness", "?other={other}"),
    ("annotation:history", None): ("", "?criterion=veracity"),
}


def walked_urls(*, campaign: Campaign, other: Campaign) -> list[str]:
    """Every page of the walk with every value its parameters take in ``campaign``."""
    units = [
        Unit.objects.filter(campaign=campaign, level=level)
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
        for level in ("answer", "sentence", "citation")
    ]
    values: dict[str, list] = {
        "slug": [campaign.slug],
        "criterion": list(campaign.criteria.order_by("name").values_list("name", flat=True)),
        "stage": ["label", "review"],
        "run_id": list(
            JudgeRun.objects.filter(criterion__campaign=campaign).values_list("pk", flat=True)[:2]
        ),
        "unit_id": [pk for pk in units if pk is not None],
        "sample_id": list(Sample.objects.filter(campaign=campaign).values_list("pk", flat=True)[:2]),
        "token_id": [1],
    }
    fill = {
        "other": other.slug,
        "relevance": Criterion.objects.get(campaign=campaign, name="relevance").pk,
        "lexical": Judge.objects.get(campaign=campaign, kind=Judge.Kind.LEXICAL).pk,
    }
    urls = []
    for name, pattern in _patterns(get_resolver()):
        if not name.startswith(WALKED) or FILE.search(str(pattern.pattern)):
            continue
        combinations: list[dict] = [{}]
        for key in pattern.pattern.converters:
            combinations = [{**done, key: value} for done in combinations for value in values[key]]
        for kwargs in combinations:
            url = reverse(name, kwargs=kwargs)
            urls.extend(
                url + query.format(**fill) for query in QUERIES.get((name, kwargs.get("criterion")), ("",))
            )
    return urls


def _error_pages(client: Client) -> dict[str, str]:
    """The pages the app shows when it refuses or fails, as their code makes them, in French."""
    request = RequestFactory().get("/", **FRENCH)
    request.user = AnonymousUser()
    too_big = client.post(
        reverse("login"), b"", content_type="application/octet-stream", CONTENT_LENGTH=str(10**12), **FRENCH
    )
    with translation.override("fr"):
        pages = {
            "500": server_error(request),
            "400": bad_request(request, exception=None),
            "locked out": locked_out(request),
            "queue down": QueueDownMiddleware(lambda r: HttpResponse()).process_exception(
                request, QueueDown()
            ),
            "request too big": too_big,
        }
        return {name: response.content.decode() for name, response in pages.items() if response is not None}


def _walks(urls: list[str]) -> dict[str, list[str]]:
    """Who reads which pages: the manager every page with every query; each other role every
    page once (what it may not see, as its refusal); the superuser the staff's own pages. The
    demo's annotator3 holds annotator2's roles, and is left out."""
    plain = [url for url in urls if "?" not in url]
    return {
        "manager": [*urls, "/no/such/page/"],
        "analyst": plain,
        "annotator1": plain,
        "annotator2": plain,
        "adjudicator": plain,
        DEMO_SUPERUSER: [url for url in plain if "/campaigns/" not in url or "/import/" in url],
    }


@pytest.fixture
def demo(db):
    result = load_demo()
    # The demo's second version of the assistant, for the comparisons.
    return result.campaign, Campaign.objects.exclude(pk=result.campaign.pk).get()


def test_every_page_speaks_french_to_every_role(demo):
    campaign, other = demo
    data = campaign_data()
    urls = walked_urls(campaign=campaign, other=other)
    found: dict[str, list[str]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()

    def read(where: str, html: str) -> None:
        for offence in offences(html, data=data):
            if (where.split(" ")[0], offence) not in seen:
                seen.add((where.split(" ")[0], offence))
                found[where].append(offence)

    walked = 0
    for username, pages in _walks(urls).items():
        client = Client()
        client.force_login(get_user_model().objects.get(username=username))
        for url in pages:
            response = client.get(url, **FRENCH)
            if response.get("Content-Type", "").startswith("text/html"):
                walked += response.status_code == 200
                read(f"{url} ({username}, {response.status_code})", response.content.decode())
    anonymous = Client()
    response = anonymous.get(reverse("login"), **FRENCH)
    read(f"{reverse('login')} (anonymous, {response.status_code})", response.content.decode())
    for name, html in _error_pages(anonymous).items():
        read(f"the {name} page", html)

    assert walked > 80
    report = "\n".join(
        f"{where}\n" + "\n".join(f"    {o}" for o in offences) for where, offences in found.items()
    )
    assert not found, f"{sum(map(len, found.values()))} offences on French pages:\n{report}"


def test_the_walk_finds_an_english_string_a_decimal_point_and_a_missing_switch():
    data = Data()
    page = (
        '<html><body><header><form action="/i18n/setlang/"></form></header>'
        "<h1>Estimates and agreement per theme</h1><p>Taux : 82.4%</p>"
        "<p title='Couverture'>The judge is right <code>ppi_py 0.2.3</code></p></body></html>"
    )
    found = offences(page, data=data)
    assert any("Estimates and agreement per theme" in offence for offence in found)
    assert any(offence.startswith("decimal point: '82.4'") for offence in found)
    assert any(offence.startswith("percentage without its space") for offence in found)
    assert not any("0.2.3" in offence for offence in found)
    assert (
        offences(page.replace('action="/i18n/setlang/"', ""), data=data)[-1]
        == "no language switch in the header"
    )
    french = (
        '<html><body><form action="/i18n/setlang/"></form><h1>Estimations et accord par thème</h1>'
        "<p>Taux : 82,4\u00a0%</p></body></html>"
    )
    assert offences(french, data=data) == []
