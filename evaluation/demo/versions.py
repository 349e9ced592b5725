"""The demo's second version of the assistant: the same twenty questions, asked again.

Version 2 fixes what version 1 got wrong on relevance: each off-topic answer and the missed
answer of version 1 is replaced by the first sound repetition of its question (its text and its
sources). It brings a weakness of its own: in Informatique, about two answerable answers in five
close on a paragraph about something the question did not ask. Its human labels are the truth
on the same answers as version 1's (40 %); its imported judge is wrong on about 15 % of answers,
drawn with its own seed. The question ids are those of version 1, so the comparison page and
``manage.py compare`` compare the two versions question by question.

``load_demo`` calls :func:`load_second_version` once the first version is in place; a second
call changes nothing.
"""

from __future__ import annotations

import copy
import json
import random
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotation.corpus.campaigns import get_or_create_campaign
from annotation.models import Answer, Campaign
from demo.material import DEFECTS, JUDGE_ERROR_RATE, MISSED_ANSWER, OFF_TOPIC, RELEVANCE
from evaluation.imports.campaign_file import import_file
from evaluation.measures.automatic import is_inappropriate

SECOND_CAMPAIGN = "Castelroc - due diligence v2 (démo)"
SEED = 20_250
DEGRADED_THEME = "Informatique"
DEGRADED_SHARE = 0.4
# Closing paragraphs that answer nothing an IT question asks (and cite nothing).
OFF_TOPIC_PARAGRAPHS = (
    "Par ailleurs, l'assemblée générale du 27 juin 2023 a approuvé la distribution d'un dividende "
    "aux actionnaires.",
    "Indépendamment de cette question, le groupe a renouvelé en 2023 le contrat de restauration "
    "collective de son site de Dole.",
    "À noter également : la direction envisage de regrouper le siège et les fonctions support sur "
    "un seul site d'ici 2026.",
)


def _wrong_on_relevance(answer_id: str) -> bool:
    defect = DEFECTS.get(answer_id)
    return defect is not None and defect.kind in (OFF_TOPIC, MISSED_ANSWER)


def second_version_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Version 2's records from version 1's (the demo file's), in the same order and with the
    same question and answer ids; deterministic (seeded)."""
    rng = random.Random(SEED)
    sound: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: r["repetition"]):
        if record["answer_id"] not in DEFECTS:
            sound.setdefault(record["question_id"], record)
    second = []
    for record in records:
        new = copy.deepcopy(record)
        truth = 1
        if _wrong_on_relevance(record["answer_id"]):
            base = sound[record["question_id"]]
            new["answer"], new["sources"] = base["answer"], copy.deepcopy(base["sources"])
        elif (
            record["theme"] == DEGRADED_THEME
            and not is_inappropriate(record["difficulty"])
            and rng.random() < DEGRADED_SHARE
        ):
            new["answer"] = record["answer"].rstrip() + "\n\n" + rng.choice(OFF_TOPIC_PARAGRAPHS)
            truth = 0
        labels = new["labels"][RELEVANCE]
        labels["human"] = truth if record["labels"][RELEVANCE]["human"] is not None else None
        labels["llm"] = truth if rng.random() >= JUDGE_ERROR_RATE else 1 - truth
        second.append(new)
    return second


def load_second_version(
    *,
    path: Path,
    people: Callable[[Campaign], int],
    steps: list[Callable[[Campaign], str | None]],
) -> tuple[Campaign, list[str]]:
    """Import version 2 (built from the demo file at ``path``) once, then give it the demo's
    ``people`` (memberships added) and run the demo's ``steps`` on it, as ``load_demo`` does for
    version 1. The campaign and the lines to print (none when everything was already there)."""
    campaign, _ = get_or_create_campaign(name=SECOND_CAMPAIGN, expected_language="fr")
    lines: list[str] = []
    if not Answer.objects.filter(campaign=campaign).exists():
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        with tempfile.TemporaryDirectory() as folder:
            second = Path(folder) / "campaign-v2.jsonl"
            second.write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in second_version_records(records)),
                encoding="utf-8",
            )
            summary = import_file(path=second, campaign_name=SECOND_CAMPAIGN, name=second.name)
        lines.append(f"imported {summary.answers} answers of the assistant's version 2 ({SECOND_CAMPAIGN!r})")
    memberships = people(campaign)
    if memberships:
        lines.append(f"version 2: memberships added: {memberships}")
    lines.extend(f"version 2: {line}" for step in steps if (line := step(campaign)))
    return campaign, lines
