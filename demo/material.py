"""The demo's material, read from ``data/``: the data room's chunks, the questions and the pieces
their answers are made of, the planted defects, and the constants the builder draws with.

Needs no Django: the conventions it shares with the app come from ``annotation.corpus.conventions``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from annotation.corpus.conventions import DEFAULT_ABSTENTION_PATTERNS, DEFAULT_CITATION_PATTERN

HERE = Path(__file__).resolve().parent

DATA = HERE / "data"

OUTPUT = HERE / "campaign.jsonl"

SEED = 20240315

REPETITIONS = 6

MAX_BYTES = 1_500_000

MIN_SOURCES, MAX_SOURCES = 10, 15

OPTIONAL_RATE = 0.55

MAX_OPTIONAL = 2

HUMAN_SHARE = 0.40

JUDGE_ERROR_RATE = 0.15

THEMES = ("Finance", "Ressources humaines", "Juridique", "Informatique")

DIFFICULTIES = ("simple", "intermediaire", "difficile", "inappropriee")

# The one criterion the demo file labels: a built-in, answer-level one.
RELEVANCE = "relevance"

# An ordinary answer that the app reads as an abstention would blur the planted abstentions.
ABSTENTION_PATTERNS = tuple(re.compile(pattern, re.IGNORECASE) for pattern in DEFAULT_ABSTENTION_PATTERNS)

CITATION = re.compile(DEFAULT_CITATION_PATTERN)

# In the material, ``{key}`` cites the chunk ``key``; it becomes ``[^id^]`` in the answer.
PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")

TRAILING_PLACEHOLDERS = re.compile(r"((?:\{[a-z0-9_]+\})+)\.$")

# Defect kinds (README's defect tables); the first three replace the whole answer.
ENGLISH = "english"

MISSED_ANSWER = "missed_answer"

ANSWERED_INAPPROPRIATE = "answered_inappropriate"

CORRUPTED_CITATION = "corrupted_citation"

UNSUPPORTED_FIGURE = "unsupported_figure"

OFF_TOPIC = "off_topic"

WHOLE_ANSWER_DEFECTS = (ENGLISH, MISSED_ANSWER, ANSWERED_INAPPROPRIATE)

DEFECT_KINDS = (
    ENGLISH,
    CORRUPTED_CITATION,
    MISSED_ANSWER,
    ANSWERED_INAPPROPRIATE,
    UNSUPPORTED_FIGURE,
    OFF_TOPIC,
)


@dataclass(frozen=True)
class Chunk:
    key: str
    theme: str
    title: str
    page: int
    text: str

    @property
    def id(self) -> str:
        return chunk_id(key=self.key)


@dataclass(frozen=True)
class Fact:
    """One piece of an answer: alternative prose sentences and the form it takes in a list."""

    prose: tuple[str, ...]
    bullet: str | None = None
    core: bool = True
    # A remark that closes a list instead of being one of its items.
    aside: bool = False


@dataclass(frozen=True)
class QuestionSpec:
    qid: str
    theme: str
    difficulty: str
    text: str
    relevant: tuple[str, ...]
    intros: tuple[str, ...] = ()
    facts: tuple[Fact, ...] = ()
    closings: tuple[str, ...] = ("",)
    styles: tuple[str, ...] = ("prose", "bullets")
    titles: tuple[str, ...] = ()
    leads: tuple[str, ...] = ("En détail :", "Les points clés sont les suivants :", "Dans le détail :")
    shuffle: bool = False
    # Inappropriate questions: whole answers, the n-th used for the n-th repetition (None where a
    # defect replaces it).
    abstentions: tuple[str | None, ...] = ()


@dataclass(frozen=True)
class Defect:
    """A planted defect: ``kind`` is one of DEFECT_KINDS, the other fields what that kind needs."""

    kind: str
    text: str = ""
    old: str = ""
    new: str = ""
    mode: str = ""
    index: int = 0


def chunk_id(*, key: str) -> str:
    """The short hex id of a chunk: stable for a given key, whatever the order of the material."""
    return hashlib.sha1(f"castelroc:{key}".encode()).hexdigest()[:5]


TITLE_AND_PAGE = re.compile(r"^(?P<title>.+), page (?P<page>\d+)$")


def load_chunks(path: Path) -> tuple[Chunk, ...]:
    """The chunks of ``chunks.md``, in file order.

    ``# Theme`` sets the theme of the chunks below it; ``## key`` opens a chunk, whose first line
    is ``title, page n`` and whose other lines, up to the next heading, are its text, joined with
    one space. Other text outside the chunks is commentary.
    """
    chunks: list[Chunk] = []
    theme = ""
    key: str | None = None
    body: list[str] = []

    def close() -> None:
        if key is None:
            return
        match = TITLE_AND_PAGE.match(body[0]) if body else None
        if match is None or len(body) < 2:
            raise ValueError(f"{path.name}: chunk {key} needs a 'title, page n' line and a text")
        chunks.append(Chunk(key, theme, match["title"], int(match["page"]), " ".join(body[1:])))

    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            close()
            key, body = None, []
            if line.startswith("## "):
                key = line[3:].strip()
            elif line.startswith("# "):
                theme = line[2:].strip()
        elif key is not None and line.strip():
            body.append(line.strip())
    close()
    return tuple(chunks)


def load_questions(path: Path) -> tuple[QuestionSpec, ...]:
    """The questions of ``questions.json``, in file order; a field left out takes its default."""
    specs = []
    for item in json.loads(path.read_text(encoding="utf-8")):
        facts = tuple(
            Fact(
                prose=tuple(fact["prose"]),
                bullet=fact.get("bullet"),
                core=not fact.get("optional", False),
                aside=fact.get("aside", False),
            )
            for fact in item.get("facts", ())
        )
        optional = {
            field: tuple(item[field])
            for field in ("intros", "closings", "styles", "titles", "leads", "abstentions")
            if field in item
        }
        specs.append(
            QuestionSpec(
                qid=item["id"],
                theme=item["theme"],
                difficulty=item["difficulty"],
                text=item["question"],
                relevant=tuple(item["relevant"]),
                facts=facts,
                shuffle=item.get("shuffle", False),
                **optional,
            )
        )
    return tuple(specs)


def load_defects(path: Path) -> dict[str, Defect]:
    """The defects of ``defects.json`` by answer id: a whole ``answer`` (a list of lines), an
    off-topic ``paragraph``, a figure changed from ``old`` to ``new``, or the ``citation``-th
    citation (from 0) corrupted by ``mode``."""
    defects = {}
    for answer_id, item in json.loads(path.read_text(encoding="utf-8")).items():
        defects[answer_id] = Defect(
            kind=item["kind"],
            text="\n".join(item["answer"]) if "answer" in item else item.get("paragraph", ""),
            old=item.get("old", ""),
            new=item.get("new", ""),
            mode=item.get("mode", ""),
            index=item.get("citation", 0),
        )
    return defects


CHUNKS = load_chunks(DATA / "chunks.md")

CHUNKS_BY_KEY = {chunk.key: chunk for chunk in CHUNKS}

QUESTIONS = load_questions(DATA / "questions.json")

QUESTIONS_BY_ID = {spec.qid: spec for spec in QUESTIONS}

DEFECTS = load_defects(DATA / "defects.json")
