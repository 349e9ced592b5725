"""Build the demo campaign from its material: a fictional French data room and what a RAG
assistant answered about it.

Groupe Castelroc SAS is an invented mid-size industrial company (industrial valves, three French
sites and a Polish subsidiary) under acquisition. Analysts asked a due-diligence assistant 20
questions, each six times; every answer comes with the 10 to 15 chunks its retriever returned.
The material is in ``data/``: the chunks (``chunks.md``), the questions and the pieces their
answers are made of (``questions.json``) and the planted defects (``defects.json``).

Run ``python -m demo.build`` from the repository root (``make demo-file``) to rewrite
``demo/campaign.jsonl``. The output is deterministic: the same material and seed give the same
bytes. The planted defects and the labels are described in ``README.md``; the check before
writing fails loudly when the material and the documented defects drift apart. Needs no Django:
the conventions it shares with the app come from ``annotation.conventions``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from annotation.conventions import BUILTIN_CRITERIA, DEFAULT_ABSTENTION_PATTERNS, DEFAULT_CITATION_PATTERN

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


# --------------------------------------------------------------------------------------------------
# The material.
# --------------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------------
# Assembly.
# --------------------------------------------------------------------------------------------------


def _spread(rng: random.Random, items: tuple | range, count: int) -> list:
    """``count`` picks from ``items``, each used as evenly as possible, in shuffled order."""
    picks: list = []
    while len(picks) < count:
        batch = list(items)
        rng.shuffle(batch)
        picks.extend(batch)
    return picks[:count]


def _period_first(sentence: str, *, after: bool) -> str:
    # Assistants differ in where the final citation goes: "... 12,4 M€[^a^]." or "... 12,4 M€.[^a^]".
    return TRAILING_PLACEHOLDERS.sub(r".\1", sentence) if after else sentence


def _list_item(fact: Fact, *, prose: str, period: bool, after: bool) -> str:
    if fact.bullet is None:
        return prose
    if not period:
        return fact.bullet
    trailing = re.search(r"((?:\{[a-z0-9_]+\})+)$", fact.bullet)
    if trailing and after:
        return f"{fact.bullet[: trailing.start()]}.{trailing.group(1)}"
    return fact.bullet + "."


def _compose(*, spec: QuestionSpec, intro: str, style: str, rng: random.Random) -> tuple[list[str], str]:
    optional = [fact for fact in spec.facts if not fact.core and rng.random() < OPTIONAL_RATE]
    kept = set(map(id, rng.sample(optional, min(len(optional), MAX_OPTIONAL))))
    chosen = [fact for fact in spec.facts if fact.core or id(fact) in kept]
    items = [fact for fact in chosen if not fact.aside]
    asides = [fact for fact in chosen if fact.aside]
    if spec.shuffle:
        rng.shuffle(items)
    else:
        movable = [fact for fact in items if not fact.core]
        if movable and rng.random() < 0.35:
            moved = rng.choice(movable)
            items.remove(moved)
            items.append(moved)
    after = rng.random() < 0.25
    prose = {id(fact): _period_first(rng.choice(fact.prose), after=after) for fact in chosen}
    intro = _period_first(intro, after=after)
    closing = _period_first(rng.choice(spec.closings), after=after)
    blocks: list[str] = []
    if style == "prose":
        sentences = [intro, *(prose[id(fact)] for fact in items + asides)]
        cut = len(sentences) if len(sentences) <= 3 else rng.choice((2, 3, len(sentences)))
        blocks.append(" ".join(sentences[:cut]))
        if sentences[cut:]:
            blocks.append(" ".join(sentences[cut:]))
        return blocks, closing
    if style == "heading":
        blocks.append("### " + rng.choice(spec.titles))
    blocks.append(intro)
    if spec.leads and rng.random() < 0.5:
        blocks.append(rng.choice(spec.leads))
    period = rng.random() < 0.4
    blocks.append(
        "\n".join(
            "- " + _list_item(fact, prose=prose[id(fact)], period=period, after=after) for fact in items
        )
    )
    if asides:
        blocks.append(" ".join(prose[id(fact)] for fact in asides))
    return blocks, closing


def _answer_template(
    *, spec: QuestionSpec, repetition: int, intro: str, style: str, rng: random.Random, defect: Defect | None
) -> str:
    if defect is not None and defect.kind in WHOLE_ANSWER_DEFECTS:
        return defect.text
    if spec.abstentions:
        return spec.abstentions[repetition - 1] or ""
    blocks, closing = _compose(spec=spec, intro=intro, style=style, rng=rng)
    if defect is not None and defect.kind == OFF_TOPIC:
        blocks.append(defect.text)
    if closing:
        blocks.append(closing)
    text = "\n\n".join(blocks)
    if defect is not None and defect.kind == UNSUPPORTED_FIGURE:
        if defect.old not in text:
            raise ValueError(f"{spec.qid}-r{repetition}: {defect.old!r} is not in the answer to alter")
        text = text.replace(defect.old, defect.new, 1)
    return text


def _cited_keys(template: str) -> list[str]:
    return list(dict.fromkeys(PLACEHOLDER.findall(template)))


def _with_ids(template: str) -> str:
    return PLACEHOLDER.sub(lambda match: f"[^{CHUNKS_BY_KEY[match.group(1)].id}^]", template)


def _mangle(chunk: str, *, mode: str) -> str:
    if mode == "truncate":
        return chunk[:-1]
    if mode == "transpose" and chunk[1] != chunk[2]:
        return chunk[0] + chunk[2] + chunk[1] + chunk[3:]
    digit = "0123456789abcdef"[(int(chunk[2], 16) + 7) % 16]
    return chunk[:2] + digit + chunk[3:]


def _corrupt(text: str, *, defect: Defect, answer_id: str) -> str:
    citations = list(CITATION.finditer(text))
    if defect.index >= len(citations):
        raise ValueError(f"{answer_id}: no citation number {defect.index} to corrupt")
    target = citations[defect.index]
    bad = _mangle(target.group(1), mode=defect.mode)
    if bad in {chunk.id for chunk in CHUNKS}:
        raise ValueError(f"{answer_id}: the corrupted id {bad} is a real chunk id")
    return text[: target.start(1)] + bad + text[target.end(1) :]


def _base_ranking(*, spec: QuestionSpec, rng: random.Random) -> list[str]:
    same = [chunk.key for chunk in CHUNKS if chunk.theme == spec.theme and chunk.key not in spec.relevant]
    others = [chunk.key for chunk in CHUNKS if chunk.theme != spec.theme and chunk.key not in spec.relevant]
    rng.shuffle(same)
    cross = rng.sample(others, 3)
    return [*spec.relevant, *same[:5], cross[0], *same[5:9], cross[1], *same[9:], cross[2]]


def _retrieve(*, base: list[str], cited: list[str], rng: random.Random) -> list[str]:
    ranking = list(base)
    for _ in range(5):
        i = rng.randrange(len(ranking) - 1)
        ranking[i], ranking[i + 1] = ranking[i + 1], ranking[i]
    top = ranking[: rng.randint(MIN_SOURCES, MAX_SOURCES)]
    for key in cited:
        if key not in top:
            top.remove(next(other for other in reversed(top) if other not in cited))
            top.insert(rng.randrange(len(top) + 1), key)
    return top


def _true_relevance(answer_id: str) -> int:
    defect = DEFECTS.get(answer_id)
    return 0 if defect is not None and defect.kind in (OFF_TOPIC, MISSED_ANSWER) else 1


def _add_labels(records: list[dict], *, seed: int) -> None:
    rng = random.Random(f"{seed}:labels")
    human: set[str] = set()
    for theme in THEMES:
        ids = [record["answer_id"] for record in records if record["theme"] == theme]
        human.update(rng.sample(ids, round(HUMAN_SHARE * len(ids))))
    every_id = [record["answer_id"] for record in records]
    judge_errors = set(rng.sample(every_id, round(JUDGE_ERROR_RATE * len(every_id))))
    for record in records:
        truth = _true_relevance(record["answer_id"])
        record["labels"] = {
            RELEVANCE: {
                "human": truth if record["answer_id"] in human else None,
                "llm": 1 - truth if record["answer_id"] in judge_errors else truth,
            }
        }


def build_campaign(*, seed: int = SEED) -> list[dict]:
    """Every answer record of the demo campaign, in question then repetition order.

    Deterministic for a given ``seed``. Each record has the import fields (question_id, question,
    theme, difficulty, answer_id, repetition, answer, sources, labels); the defects of ``DEFECTS``
    are applied to their answers. Raises ValueError when a defect cannot be planted where declared.
    """
    records: list[dict] = []
    for spec in QUESTIONS:
        question_rng = random.Random(f"{seed}:{spec.qid}")
        intros = _spread(question_rng, spec.intros, REPETITIONS) if spec.intros else [""] * REPETITIONS
        styles = _spread(question_rng, spec.styles, REPETITIONS)
        base = _base_ranking(spec=spec, rng=question_rng)
        for repetition in range(1, REPETITIONS + 1):
            answer_id = f"{spec.qid}-r{repetition}"
            rng = random.Random(f"{seed}:{answer_id}")
            defect = DEFECTS.get(answer_id)
            template = _answer_template(
                spec=spec,
                repetition=repetition,
                intro=intros[repetition - 1],
                style=styles[repetition - 1],
                rng=rng,
                defect=defect,
            )
            keys = _retrieve(base=base, cited=_cited_keys(template), rng=rng)
            answer = _with_ids(template)
            if defect is not None and defect.kind == CORRUPTED_CITATION:
                answer = _corrupt(answer, defect=defect, answer_id=answer_id)
            records.append(
                {
                    "question_id": spec.qid,
                    "question": spec.text,
                    "theme": spec.theme,
                    "difficulty": spec.difficulty,
                    "answer_id": answer_id,
                    "repetition": repetition,
                    "answer": answer,
                    "sources": [
                        {
                            "id": CHUNKS_BY_KEY[key].id,
                            "title": CHUNKS_BY_KEY[key].title,
                            "page": CHUNKS_BY_KEY[key].page,
                            "text": CHUNKS_BY_KEY[key].text,
                        }
                        for key in keys
                    ],
                }
            )
    _add_labels(records, seed=seed)
    return records


def render(records: list[dict]) -> str:
    """The JSONL text of the records: one object a line, UTF-8 as it is (no ``\\u`` escapes)."""
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


# --------------------------------------------------------------------------------------------------
# Checks.
# --------------------------------------------------------------------------------------------------

RECORD_FIELDS = (
    "question_id",
    "question",
    "theme",
    "difficulty",
    "answer_id",
    "repetition",
    "answer",
    "sources",
    "labels",
)


def _is_abstention(text: str) -> bool:
    return any(pattern.search(text) for pattern in ABSTENTION_PATTERNS)


def _check_material() -> None:
    if BUILTIN_CRITERIA.get(RELEVANCE, {}).get("level") != "answer":
        raise ValueError(f"{RELEVANCE} is no longer a built-in answer-level criterion")
    ids = [chunk.id for chunk in CHUNKS]
    if len(set(ids)) != len(ids) or len(CHUNKS_BY_KEY) != len(CHUNKS):
        raise ValueError("two chunks share a key or an id")
    for chunk in CHUNKS:
        if chunk.theme not in THEMES:
            raise ValueError(f"chunk {chunk.key}: theme {chunk.theme!r}")
        if not 300 <= len(chunk.text) <= 900:
            raise ValueError(f"chunk {chunk.key}: {len(chunk.text)} characters, expected 300 to 900")
    for spec in QUESTIONS:
        if unknown := [key for key in spec.relevant if key not in CHUNKS_BY_KEY]:
            raise ValueError(f"{spec.qid}: unknown chunks {unknown}")
        if spec.abstentions and len(spec.abstentions) != REPETITIONS:
            raise ValueError(f"{spec.qid}: one abstention per repetition expected")
        if "heading" in spec.styles and not spec.titles:
            raise ValueError(f"{spec.qid}: the heading style needs titles")
        for fact in spec.facts:
            if not fact.aside and fact.bullet is None and set(spec.styles) - {"prose"}:
                raise ValueError(f"{spec.qid}: a list item without its list form: {fact.prose[0][:60]}")
    for answer_id, defect in DEFECTS.items():
        owner = QUESTIONS_BY_ID.get(answer_id.rsplit("-r", 1)[0])
        if owner is None or not 1 <= int(answer_id.rsplit("-r", 1)[1]) <= REPETITIONS:
            raise ValueError(f"defect on an unknown answer {answer_id}")
        if defect.kind not in DEFECT_KINDS:
            raise ValueError(f"{answer_id}: unknown defect kind {defect.kind!r}")
        inappropriate = owner.difficulty == "inappropriee"
        if defect.kind == ANSWERED_INAPPROPRIATE and not inappropriate:
            raise ValueError(f"{answer_id}: only an inappropriate question can be answered wrongly")
        if (
            defect.kind in (MISSED_ANSWER, UNSUPPORTED_FIGURE, OFF_TOPIC, CORRUPTED_CITATION)
            and inappropriate
        ):
            raise ValueError(f"{answer_id}: {defect.kind} needs an answerable question")
        if (defect.kind in WHOLE_ANSWER_DEFECTS) != bool(defect.text) and defect.kind != OFF_TOPIC:
            raise ValueError(f"{answer_id}: {defect.kind} and its text do not match")
    for spec in QUESTIONS:
        for repetition, text in enumerate(spec.abstentions, start=1):
            replacing = DEFECTS.get(f"{spec.qid}-r{repetition}")
            if not text and (replacing is None or replacing.kind not in WHOLE_ANSWER_DEFECTS):
                raise ValueError(f"{spec.qid}-r{repetition}: no abstention and no replacing defect")


def check_campaign(*, records: list[dict]) -> Counter:
    """Validate the built records against the material and the declared defects.

    Checks the fields, ids, source counts, that a chunk id always carries the same title, page
    and text, that exactly the declared answers cite an id outside their sources or read as an
    abstention (the app's default patterns), and that every theme has every difficulty. Raises
    ValueError on the first problem; returns the number of answers per (theme, difficulty).
    """
    _check_material()
    values = BUILTIN_CRITERIA[RELEVANCE]["values"]
    seen_chunks: dict[str, tuple] = {}
    repetitions: dict[str, set[int]] = {}
    texts: dict[str, set[str]] = {}
    bad_citations: dict[str, list[str]] = {}
    abstaining: set[str] = set()
    counts: Counter = Counter()
    for record in records:
        answer_id = record.get("answer_id", "?")
        if tuple(record) != RECORD_FIELDS:
            raise ValueError(f"{answer_id}: fields {tuple(record)}")
        if record["theme"] not in THEMES or record["difficulty"] not in DIFFICULTIES:
            raise ValueError(f"{answer_id}: theme or difficulty out of range")
        if answer_id != f"{record['question_id']}-r{record['repetition']}":
            raise ValueError(f"{answer_id}: id does not match question and repetition")
        repetitions.setdefault(record["question_id"], set()).add(record["repetition"])
        texts.setdefault(record["question_id"], set()).add(record["answer"])
        sources = record["sources"]
        source_ids = [source["id"] for source in sources]
        if not MIN_SOURCES <= len(sources) <= MAX_SOURCES or len(set(source_ids)) != len(source_ids):
            raise ValueError(f"{answer_id}: {len(sources)} sources, or a duplicate")
        for source in sources:
            if set(source) != {"id", "title", "page", "text"}:
                raise ValueError(f"{answer_id}: source fields {sorted(source)}")
            known = seen_chunks.setdefault(source["id"], (source["title"], source["page"], source["text"]))
            if known != (source["title"], source["page"], source["text"]):
                raise ValueError(f"chunk {source['id']} differs between answers")
        if "{" in record["answer"]:
            raise ValueError(f"{answer_id}: an unresolved placeholder")
        cited = CITATION.findall(record["answer"])
        outside = [chunk for chunk in cited if chunk not in source_ids]
        if outside:
            bad_citations[answer_id] = outside
        if _is_abstention(record["answer"]):
            abstaining.add(answer_id)
        relevance = record["labels"][RELEVANCE]
        if relevance["human"] not in (*values, None) or relevance["llm"] not in values:
            raise ValueError(f"{answer_id}: labels {relevance}")
        counts[(record["theme"], record["difficulty"])] += 1
    for question_id, reps in repetitions.items():
        if reps != set(range(1, REPETITIONS + 1)) or len(texts[question_id]) != REPETITIONS:
            raise ValueError(f"{question_id}: repetitions {sorted(reps)} or repeated answer texts")
    planted = {answer_id for answer_id, d in DEFECTS.items() if d.kind == CORRUPTED_CITATION}
    if set(bad_citations) != planted or any(len(ids) != 1 for ids in bad_citations.values()):
        raise ValueError(f"ids outside the sources: {bad_citations}, declared {sorted(planted)}")
    expected = {
        record["answer_id"]
        for record in records
        if record["difficulty"] == "inappropriee"
        and DEFECTS.get(record["answer_id"], Defect("")).kind != ANSWERED_INAPPROPRIATE
    } | {answer_id for answer_id, d in DEFECTS.items() if d.kind == MISSED_ANSWER}
    if abstaining != expected:
        raise ValueError(
            f"abstentions: unexpected {sorted(abstaining - expected)}, "
            f"missing {sorted(expected - abstaining)}"
        )
    for theme in THEMES:
        for difficulty in DIFFICULTIES:
            if not counts[(theme, difficulty)]:
                raise ValueError(f"no {difficulty} question in {theme}")
    return counts


def _summary(records: list[dict], counts: Counter, *, name: str, size: int) -> str:
    lines = [
        f"{name}: {len(records)} answers to {len({r['question_id'] for r in records})} questions, "
        f"{len({s['id'] for r in records for s in r['sources']})} distinct chunks, {size / 1e6:.2f} MB",
        "",
        f"{'answers':<22}" + "".join(f"{difficulty:>15}" for difficulty in DIFFICULTIES),
    ]
    for theme in THEMES:
        lines.append(f"{theme:<22}" + "".join(f"{counts[(theme, d)]:>15}" for d in DIFFICULTIES))
    lines.append("")
    for kind in DEFECT_KINDS:
        lines.append(f"{kind}: " + ", ".join(a for a, d in DEFECTS.items() if d.kind == kind))
    by_id = {record["answer_id"]: record for record in records}
    for answer_id, defect in DEFECTS.items():
        if defect.kind == CORRUPTED_CITATION:
            source_ids = {source["id"] for source in by_id[answer_id]["sources"]}
            bad = [c for c in CITATION.findall(by_id[answer_id]["answer"]) if c not in source_ids]
            lines.append(f"  {answer_id} cites [^{bad[0]}^] ({defect.mode})")
    human = [r for r in records if r["labels"][RELEVANCE]["human"] is not None]
    zeros = [r["answer_id"] for r in human if r["labels"][RELEVANCE]["human"] == 0]
    agree = sum(r["labels"][RELEVANCE]["llm"] == _true_relevance(r["answer_id"]) for r in records)
    lines += [
        "",
        f"{RELEVANCE}: {len(human)} human labels ({len(zeros)} zeros), per theme "
        + ", ".join(f"{t} {sum(r['theme'] == t for r in human)}" for t in THEMES),
        f"judge agrees with the truth on {agree}/{len(records)} answers ({agree / len(records):.1%}); "
        "human label 0 on: " + ", ".join(zeros),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Rebuild the demo file, check it and print a summary; exit status 1 on a failed check.

    With ``--check``, write nothing and fail when the file on disk differs from what the
    material gives (a stale file, or a hand edit).
    """
    parser = argparse.ArgumentParser(prog="python -m demo.build", description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=OUTPUT, help="default: demo/campaign.jsonl")
    parser.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = parser.parse_args(argv)
    records = build_campaign(seed=SEED)
    try:
        counts = check_campaign(records=records)
    except ValueError as error:
        print(f"check failed: {error}", file=sys.stderr)
        return 1
    payload = render(records).encode("utf-8")
    if len(payload) > MAX_BYTES:
        print(f"check failed: {len(payload)} bytes, more than {MAX_BYTES}", file=sys.stderr)
        return 1
    if args.check:
        if not args.output.is_file() or args.output.read_bytes() != payload:
            print(f"{args.output} is not what the material gives: run python -m demo.build", file=sys.stderr)
            return 1
        print(f"{args.output}: up to date")
        return 0
    args.output.write_bytes(payload)
    print(_summary(records, counts, name=args.output.name, size=len(payload)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
