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
the conventions it shares with the app come from ``annotation.corpus.conventions``.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path

from demo.checks import check_campaign
from demo.material import (
    CHUNKS,
    CHUNKS_BY_KEY,
    CITATION,
    CORRUPTED_CITATION,
    DEFECT_KINDS,
    DEFECTS,
    DIFFICULTIES,
    HUMAN_SHARE,
    JUDGE_ERROR_RATE,
    MAX_BYTES,
    MAX_OPTIONAL,
    MAX_SOURCES,
    MIN_SOURCES,
    MISSED_ANSWER,
    OFF_TOPIC,
    OPTIONAL_RATE,
    OUTPUT,
    PLACEHOLDER,
    QUESTIONS,
    RELEVANCE,
    REPETITIONS,
    SEED,
    THEMES,
    TRAILING_PLACEHOLDERS,
    UNSUPPORTED_FIGURE,
    WHOLE_ANSWER_DEFECTS,
    Defect,
    Fact,
    QuestionSpec,
)

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


# Gold evidence: per answerable question, at most GOLD_CITED chunks its answers cite and one
# chunk of its theme the retriever does not rank first (what a reader of the data room would add)
# give a passage of GOLD_SENTENCES consecutive sentences each; the chunks' ids are the gold ids.
GOLD_CITED = 2
GOLD_SENTENCES = 2
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÀ-Ý])")
MARKUP = re.compile(r"\*\*")


def _gold_evidence(*, spec: QuestionSpec, seed: int) -> tuple[str, list[dict]]:
    """A question's reference answer (its first opening and first fact, without citations) and
    its gold evidence: passages excerpted from the chunks its answers cite, with their ids."""
    if not spec.intros and not spec.facts:
        return "", []
    rng = random.Random(f"{seed}:{spec.qid}:gold")
    pieces = [*spec.intros[:1], *(fact.prose[0] for fact in spec.facts[:1])]
    reference = MARKUP.sub("", " ".join(PLACEHOLDER.sub("", piece) for piece in pieces)).strip()
    keys = _cited_keys(" ".join([*spec.intros, *(p for fact in spec.facts for p in fact.prose)]))
    unranked = [c.key for c in CHUNKS if c.theme == spec.theme and c.key not in spec.relevant]
    gold: list[dict] = []
    for key in [*keys[:GOLD_CITED], rng.choice(unranked)]:
        chunk = CHUNKS_BY_KEY[key]
        sentences = SENTENCE_END.split(chunk.text)
        start = rng.randrange(max(1, len(sentences) - GOLD_SENTENCES + 1))
        gold.append({"text": " ".join(sentences[start : start + GOLD_SENTENCES]), "chunk_id": chunk.id})
    return reference, gold


def _add_gold_evidence(records: list[dict], *, seed: int) -> None:
    """Give every record its question's reference answer and gold evidence (empty for the
    inappropriate questions, whose answers should find nothing)."""
    found = {spec.qid: _gold_evidence(spec=spec, seed=seed) for spec in QUESTIONS}
    for record in records:
        reference, gold = found[record["question_id"]]
        record["reference_answer"] = reference
        record["gold_evidence"] = gold


def build_campaign(*, seed: int = SEED) -> list[dict]:
    """Every answer record of the demo campaign, in question then repetition order.

    Deterministic for a given ``seed``. Each record has the import fields (question_id, question,
    theme, difficulty, answer_id, repetition, answer, sources, labels, reference_answer,
    gold_evidence); the defects of ``DEFECTS``
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
    _add_gold_evidence(records, seed=seed)
    return records


def render(records: list[dict]) -> str:
    """The JSONL text of the records: one object a line, UTF-8 as it is (no ``\\u`` escapes)."""
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


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
