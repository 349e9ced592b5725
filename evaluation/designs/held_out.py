"""The held-out split of a criterion's human labels (``evaluation.models.HeldOutSplit``).

Choosing a judge's prompt on the labels that then score it flatters the chosen prompt: of
several prompts compared on the same units, the one that looks best is partly the one that was
lucky on them. The human-labelled units are therefore split once into a **selection** part
(compare prompts, choose one) and a **held-out** part (report the chosen judge's figures, on
units that played no part in the choice).

The side of a unit is that of its question: the first 8 bytes of SHA-256 of ``"<seed>:<question
id>"``, read as a number in [0, 1), held out when under the split's share. A question's answers
and their sentences therefore never straddle the two parts, and nothing is stored per unit: a
unit labelled after the split gets its side from the same rule, and no unit ever changes side.
The seed is drawn at random when the split is made and recorded with its date and maker.
"""

from __future__ import annotations

import hashlib
import secrets

from annotation.models import Criterion
from evaluation.models import HeldOutSplit

# The parts of a split.
SELECTION = "selection"
HELD_OUT = "held_out"
# Every labelled unit, both parts together (also what a criterion without a split reads).
ALL = "all"
# The share of the questions a new split holds out: the reported figures get as many units as
# the comparisons of prompts.
HELD_OUT_SHARE = 0.5


def position(*, seed: int, question_id: int) -> float:
    """Where a question falls in [0, 1) under ``seed``: a hash, the same on every call."""
    digest = hashlib.sha256(f"{seed}:{question_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def part_of(*, split: HeldOutSplit, question_id: int) -> str:
    """The part (``held_out`` or ``selection``) of every unit of the question ``question_id``."""
    held = position(seed=split.seed, question_id=question_id) < split.held_out_share
    return HELD_OUT if held else SELECTION


def split_of(*, criterion: Criterion) -> HeldOutSplit | None:
    """The criterion's split, None when none has been made (one query)."""
    return HeldOutSplit.objects.filter(criterion=criterion).first()


def make_split(*, criterion: Criterion, user=None, seed: int | None = None) -> tuple[HeldOutSplit, bool]:
    """The criterion's split, made now with a random seed (or ``seed``) when it has none; an
    existing split is returned as it is, never changed. Also says whether it was made now."""
    return HeldOutSplit.objects.get_or_create(
        criterion=criterion,
        defaults={
            "seed": secrets.randbits(62) if seed is None else seed,
            "held_out_share": HELD_OUT_SHARE,
            "created_by": user,
        },
    )
