"""Evidence coverage: how much of each gold passage an answer's retrieved chunks hold, within a
budget of tokens, and what the score says about a criterion's categories.

Pure functions over texts and arrays; ``evaluation.measures.evidence`` reads the campaign.

The **evidence-coverage score** of an answer at a budget of N tokens is the mean, over the gold
passages p of its question, of ``len(LCS(p, C_N)) / len(p)``, lengths in characters, where LCS
is the longest common substring and C_N the first N tokens of the answer's retrieved chunks
concatenated in rank order. Tokens are those of ``tokenize`` (see its docstring); C_N is the
concatenation cut just after its N-th token, spacing kept. The longest common substring is
found with a suffix automaton of the passage (Blumer et al. 1985) scanning the concatenation
once, which gives the score at every budget in one pass, in time linear in the two lengths.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# Words (runs of Unicode letters, digits and underscores) and every other visible character on
# its own: a deterministic stand-in for a model's tokenizer that needs no file (none is installed,
# and one fetched at run time would break offline use). It never cuts a word, as BPE does, so its
# counts are not a model's: see docs/evidence.md.
TOKEN = re.compile(r"\w+|[^\w\s]")
DEFAULT_BUDGETS = tuple(range(100, 1001, 100))
# Between two chunks in the concatenation (by default): never part of a passage's match across chunks.
CHUNK_SEPARATOR = "\n\n"


# What the budget counts (``Conventions.unit``): the tokens above, characters, whitespace-separated
# words, or the tokens of a tokenizer file read with the ``tokenizers`` package when it is installed.
TOKENS, CHARACTERS, WORDS, TOKENIZER = "tokens", "characters", "words", "tokenizer"
UNITS = (TOKENS, CHARACTERS, WORDS, TOKENIZER)
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Conventions:
    """How the score is computed, each choice an option (docs/evidence.md, "Conventions"):

    - ``join``: between two chunks in the concatenation (a blank line, so that no match runs
      across two chunks; the authors of the measure join with one space);
    - ``nfc``: both the passages and the chunks put in Unicode NFC before matching, so that an
      accent typed as one code point or as a letter and a combining mark matches;
    - ``unit``: what a budget counts (``UNITS``), ``tokenizer`` the loaded tokenizer for
      ``TOKENIZER``;
    - ``keep_one_less``: C_N holds N - 1 units, as the authors' code keeps;
    - ``short_left_out``: an answer whose chunks hold fewer than N units is left out of budget
      N's mean (by default it is scored on all its text)."""

    join: str = CHUNK_SEPARATOR
    nfc: bool = True
    unit: str = TOKENS
    tokenizer: Any = None
    keep_one_less: bool = False
    short_left_out: bool = False

    def as_data(self) -> dict[str, object]:
        return {
            "join": self.join,
            "nfc": self.nfc,
            "unit": self.unit,
            "keep_one_less": self.keep_one_less,
            "short_left_out": self.short_left_out,
        }


ATTEST = Conventions()


def authors(*, unit: str = TOKENS, tokenizer: Any = None, nfc: bool = True) -> Conventions:
    """The authors' conventions: chunks joined by one space, N - 1 units kept, answers shorter
    than the budget left out of its mean."""
    return Conventions(
        join=" ", nfc=nfc, unit=unit, tokenizer=tokenizer, keep_one_less=True, short_left_out=True
    )


class TokenizerUnavailable(ValueError):
    """A tokenizer that cannot be read here: the package is not installed, or the file is not one."""


def load_tokenizer(path: str) -> Any:
    """A tokenizer read from a local ``tokenizer.json`` file by the ``tokenizers`` package, if it
    is installed: nothing is downloaded. TokenizerUnavailable saying why otherwise."""
    try:
        from tokenizers import Tokenizer  # type: ignore[import-not-found]  # optional, not a requirement
    except ImportError:
        raise TokenizerUnavailable(
            "the tokenizers package is not installed: install it (pip install tokenizers) to count "
            "budgets in a model's tokens, or count tokens, characters or words"
        ) from None
    try:
        return Tokenizer.from_file(path)
    except Exception as exc:  # the package's own errors, a missing file included
        raise TokenizerUnavailable(f"{path!r} is not a tokenizer file this package reads ({exc})") from None


def unit_ends(text: str, *, conventions: Conventions, limit: int | None = None) -> list[int]:
    """The character offset just after each of the first ``limit`` units of ``text``."""
    if conventions.unit == TOKENS:
        return token_ends(text, limit=limit)
    if conventions.unit == CHARACTERS:
        count = len(text) if limit is None else min(limit, len(text))
        return list(range(1, count + 1))
    if conventions.unit == WORDS:
        ends = [m.end() for m in _WORD.finditer(text)]
    elif conventions.unit == TOKENIZER and conventions.tokenizer is not None:
        encoded = conventions.tokenizer.encode(text, add_special_tokens=False)
        ends = [end for _start, end in encoded.offsets]
    else:
        raise ValueError(f"unit must be one of {', '.join(UNITS)} (a tokenizer loaded for {TOKENIZER!r})")
    return ends if limit is None else ends[:limit]


def tokenize(text: str) -> list[str]:
    """The tokens of ``text``: each maximal run of Unicode word characters (``\\w+``: letters,
    digits, underscore, any script) and each other non-space character alone."""
    return TOKEN.findall(text)


def token_ends(text: str, *, limit: int | None = None) -> list[int]:
    """The character offset just after each of the first ``limit`` tokens of ``text`` (all
    tokens when ``limit`` is None)."""
    ends: list[int] = []
    for match in TOKEN.finditer(text):
        ends.append(match.end())
        if limit is not None and len(ends) >= limit:
            break
    return ends


def concatenate(chunks: Iterable[str]) -> str:
    """The retrieved chunks' texts in rank order, as one text."""
    return CHUNK_SEPARATOR.join(chunks)


def prefix_lengths(text: str, budgets: Sequence[int]) -> list[int]:
    """For each budget N, the length in characters of C_N: ``text`` cut just after its N-th
    token (the whole text when it has fewer tokens)."""
    ends = token_ends(text, limit=max(budgets, default=0))
    return [ends[n - 1] if n <= len(ends) else len(text) for n in budgets]


class SuffixAutomaton:
    """The suffix automaton of one text: every substring of it is a path from the root.

    Built in O(len(text)) (Blumer et al. 1985; the classic online construction). ``matches``
    then scans another text in linear time.
    """

    __slots__ = ("length", "link", "next", "size")

    def __init__(self, text: str) -> None:
        self.size = len(text)
        self.next: list[dict[str, int]] = [{}]
        self.link: list[int] = [-1]
        self.length: list[int] = [0]
        last = 0
        nxt, link, length = self.next, self.link, self.length
        for ch in text:
            cur = len(nxt)
            nxt.append({})
            length.append(length[last] + 1)
            link.append(0)
            p = last
            while p != -1 and ch not in nxt[p]:
                nxt[p][ch] = cur
                p = link[p]
            if p != -1:
                q = nxt[p][ch]
                if length[p] + 1 == length[q]:
                    link[cur] = q
                else:
                    clone = len(nxt)
                    nxt.append(dict(nxt[q]))
                    length.append(length[p] + 1)
                    link.append(link[q])
                    while p != -1 and nxt[p].get(ch) == q:
                        nxt[p][ch] = clone
                        p = link[p]
                    link[q] = link[cur] = clone
            last = cur

    def longest_in_prefixes(self, other: str, ends: Sequence[int]) -> list[int]:
        """For each offset e of ``ends`` (ascending), the length of the longest common substring
        of this automaton's text and ``other[:e]``. One scan of ``other`` up to the last offset."""
        result: list[int] = []
        if not ends:
            return result
        nxt, link, length = self.next, self.link, self.length
        full = self.size
        state = matched = best = 0
        scanned = 0
        for end in ends:
            if best < full:  # once the whole text is found, no prefix can do better
                for ch in other[scanned:end]:
                    step = nxt[state].get(ch)
                    if step is None:
                        # Down the suffix links to the longest suffix of the match that ch extends.
                        while state:
                            state = link[state]
                            step = nxt[state].get(ch)
                            if step is not None:
                                break
                        if step is None:
                            state = matched = 0
                            continue
                        matched = length[state]
                    state = step
                    matched += 1
                    if matched > best:
                        best = matched
                        if best == full:
                            break
                scanned = end
            result.append(best)
        return result


def longest_common_substring(a: str, b: str) -> int:
    """The length of the longest common substring of ``a`` and ``b`` (linear time)."""
    return SuffixAutomaton(a).longest_in_prefixes(b, [len(b)])[0]


def prepared(text: str, *, conventions: Conventions = ATTEST) -> str:
    """A passage's or a chunk's text as matched: in NFC unless the conventions say not."""
    return unicodedata.normalize("NFC", text) if conventions.nfc else text


def coverage_at_budgets(
    *,
    passages: Sequence[SuffixAutomaton],
    chunks: Sequence[str],
    budgets: Sequence[int],
    conventions: Conventions = ATTEST,
) -> list[float | None] | None:
    """The evidence-coverage score of one answer at each budget of ``budgets``: the mean over
    ``passages`` (automata of the gold passages, built on their ``prepared`` texts) of the
    longest common substring with C_N over the passage's length. None when there is no passage
    (or only empty ones); None at a budget the answer is left out of (``short_left_out``)."""
    usable = [p for p in passages if p.size]
    if not usable:
        return None
    text = conventions.join.join(prepared(chunk, conventions=conventions) for chunk in chunks)
    ends = unit_ends(text, conventions=conventions, limit=max(budgets, default=0))
    kept = [n - 1 if conventions.keep_one_less else n for n in budgets]
    # C_N ends just after its last unit kept (the whole text when it has fewer units).
    cuts = [(ends[k - 1] if k >= 1 else 0) if k <= len(ends) else len(text) for k in kept]
    order = sorted(range(len(budgets)), key=cuts.__getitem__)
    sorted_cuts = [cuts[i] for i in order]
    totals = [0.0] * len(budgets)
    for passage in usable:
        found = passage.longest_in_prefixes(text, sorted_cuts)
        for position, index in enumerate(order):
            totals[index] += found[position] / passage.size
    scores: list[float | None] = [total / len(usable) for total in totals]
    if conventions.short_left_out:
        units = (
            len(ends)
            if len(ends) < max(budgets, default=0)
            else len(unit_ends(text, conventions=conventions))
        )
        scores = [None if units < n else score for n, score in zip(budgets, scores, strict=True)]
    return scores


# Thresholds and category shares, over (score, category value) pairs.


@dataclass(frozen=True)
class Threshold:
    """A threshold on the score and how often its verdict agrees with the labels: ``agreement``
    of the ``n`` labelled answers (verdict "category" below it, for the lower one; above it,
    for the upper one)."""

    value: float | None
    agreement: float | None
    n: int
    # Labelled answers in the category the threshold points at.
    positives: int


def fit_threshold(*, scores: Sequence[float], positive: Sequence[bool], below: bool) -> Threshold:
    """The threshold t that maximises the share of answers whose verdict agrees with their label.

    With ``below``, the verdict is "in the category" when score < t (the "not enough
    information" threshold h); otherwise when score > t (the "fully correct" threshold k).
    Candidates are the midpoints between consecutive distinct scores and one beyond each end
    (all answers on one side); of equal candidates the lowest wins for ``below``, the highest
    otherwise, so that the verdict is given as sparingly as the data allow. The share of agreeing
    answers is the likelihood, under the labels, that the verdict is right, maximised by
    counting in O(n log n). Empty input: value None.
    """
    if len(scores) != len(positive):
        raise ValueError("scores and positive must have the same length")
    n = len(scores)
    positives = sum(bool(p) for p in positive)
    if n == 0:
        return Threshold(value=None, agreement=None, n=0, positives=0)
    pairs = sorted(zip(scores, positive, strict=True))
    distinct = sorted({s for s, _ in pairs})
    # Candidate cut j puts distinct[:j] below it: strictly between distinct[j-1] and distinct[j]
    # (their midpoint), or just outside the range at either end.
    cuts = [math.nextafter(distinct[0], -math.inf)]
    cuts += [(a + b) / 2 for a, b in zip(distinct, distinct[1:], strict=False)]
    cuts.append(math.nextafter(distinct[-1], math.inf))
    # pos_below[j], neg_below[j]: answers with a score below cut j.
    pos_below = [0] * (len(distinct) + 1)
    neg_below = [0] * (len(distinct) + 1)
    index = {s: j for j, s in enumerate(distinct)}
    for s, p in pairs:
        j = index[s] + 1
        if p:
            pos_below[j] += 1
        else:
            neg_below[j] += 1
    for j in range(1, len(pos_below)):
        pos_below[j] += pos_below[j - 1]
        neg_below[j] += neg_below[j - 1]
    negatives = n - positives
    best_j, best = 0, -1
    candidates = range(len(cuts)) if below else range(len(cuts) - 1, -1, -1)
    for j in candidates:
        if below:  # in the category below the cut
            agree = pos_below[j] + (negatives - neg_below[j])
        else:  # in the category above the cut
            agree = (positives - pos_below[j]) + neg_below[j]
        if agree > best:
            best_j, best = j, agree
    value = cuts[best_j]
    return Threshold(value=value, agreement=best / n, n=n, positives=positives)


@dataclass(frozen=True)
class ShareBin:
    """One bin of answers along the sorted scores: its score range, size, and the share of each
    category value among its answers."""

    low: float
    high: float
    n: int
    shares: dict[int, float]


def category_shares(
    *, pairs: Sequence[tuple[float, int]], categories: Sequence[int], bins: int = 10
) -> list[ShareBin]:
    """The share of each category along the sorted scores: ``pairs`` (score, category value)
    sorted by score and cut into ``bins`` groups of equal size (the first ones one larger when
    they do not divide evenly; fewer groups than ``bins`` when there are fewer answers), each
    with the share of every value of ``categories`` among its answers. Answers of equal score
    keep their order in ``pairs`` (never sorted by category, which would paint a trend)."""
    if bins < 1:
        raise ValueError("bins must be at least 1")
    ordered = sorted(pairs, key=lambda pair: pair[0])
    count = min(bins, len(ordered))
    result: list[ShareBin] = []
    start = 0
    for b in range(count):
        size = len(ordered) // count + (1 if b < len(ordered) % count else 0)
        chunk = ordered[start : start + size]
        start += size
        values = [v for _, v in chunk]
        result.append(
            ShareBin(
                low=chunk[0][0],
                high=chunk[-1][0],
                n=len(chunk),
                shares={c: values.count(c) / len(chunk) for c in categories},
            )
        )
    return result


def parse_budgets(text: str) -> list[int]:
    """Budgets from "100,200,..." : positive whole numbers, ascending and distinct; ValueError
    naming the bad item otherwise."""
    budgets: list[int] = []
    for item in text.split(","):
        item = item.strip()
        if not re.fullmatch(r"\d+", item) or int(item) <= 0:
            raise ValueError(f"{item!r} is not a positive whole number")
        bisect.insort(budgets, int(item))
    if len(set(budgets)) != len(budgets):
        raise ValueError("a budget is given twice")
    return budgets
