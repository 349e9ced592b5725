"""What the demo builder checks before writing: the material agrees with itself and with the
documented defects, and the built campaign has the defects, labels and rates its README says.
"""

from __future__ import annotations

from collections import Counter

from annotation.corpus.conventions import BUILTIN_CRITERIA
from demo.material import (
    ABSTENTION_PATTERNS,
    ANSWERED_INAPPROPRIATE,
    CHUNKS,
    CHUNKS_BY_KEY,
    CITATION,
    CORRUPTED_CITATION,
    DEFECT_KINDS,
    DEFECTS,
    DIFFICULTIES,
    MAX_SOURCES,
    MIN_SOURCES,
    MISSED_ANSWER,
    OFF_TOPIC,
    QUESTIONS,
    QUESTIONS_BY_ID,
    RELEVANCE,
    REPETITIONS,
    THEMES,
    UNSUPPORTED_FIGURE,
    WHOLE_ANSWER_DEFECTS,
    Defect,
)

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
    "reference_answer",
    "gold_evidence",
)


def _is_abstention(text: str) -> bool:
    return any(pattern.search(text) for pattern in ABSTENTION_PATTERNS)


def check_material() -> None:
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
    check_material()
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
