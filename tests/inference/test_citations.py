"""ALCE's citation recall and precision (inference.citations) against ALCE's own evaluation logic:
``compute_autoais`` of their eval.py (princeton-nlp/ALCE), copied below with two substitutions
only: the sentences are given (their script splits with NLTK's sent_tokenize; the app splits
with its own splitter), and the NLI model is an oracle that answers from the same verdicts."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest

from inference.citations import AT_MOST_CITATIONS, CitedSentence, MissingVerdict, answer_score

# ALCE's script: the verdicts an oracle answers from, keyed by the claim (a sentence's text).
VERDICTS: dict[str, tuple[int, dict[str, int]]] = {}


def _run_nli_autoais(passage, claim):
    """The oracle in place of ALCE's NLI model: the passages (``Title: ...\\n<text>`` joined by
    line breaks, as their script formats them; here each text is ``chunk-<key>``) entail the
    claim when all its citations together support it and every citation that supports part of
    it is among them."""
    present = set(re.findall(r"chunk-(\w+)", passage))
    joint, supports = VERDICTS[claim]
    if not joint:
        return 0
    return int({key for key, value in supports.items() if value} <= present)


def remove_citations(sent):
    # ALCE's utils.remove_citations.
    return re.sub(r"\[\d+", "", re.sub(r" \[\d+", "", sent)).replace(" |", "").replace("]", "")


def compute_autoais(data, decontext=False, concat=False, qampari=False, at_most_citations=None):
    """ALCE's eval.py compute_autoais, as written there (logging and the model's loading left out;
    ``item['sentences']`` in place of ``sent_tokenize(item['output'])``)."""

    def _format_document(doc):
        """Format document for AutoAIS."""

        if "sent" in doc:
            # QA-extracted docs
            return "Title: %s\n%s" % (doc["title"], doc["sent"])  # noqa: UP031 (their code)
        else:
            return "Title: %s\n%s" % (doc["title"], doc["text"])  # noqa: UP031 (their code)

    ais_scores = []
    ais_scores_prec = []

    sent_total = 0
    sent_mcite = 0
    sent_mcite_support = 0
    sent_mcite_overcite = 0
    for item in data:
        sents = item["sentences"]
        if len(sents) == 0:
            continue

        target_sents = [remove_citations(sent).strip() for sent in sents]

        entail = 0
        entail_prec = 0
        total_citations = 0
        for sent_id, sent in enumerate(sents):
            target_sent = target_sents[sent_id]  # Citation removed and (if opted for) decontextualized
            joint_entail = -1  # Undecided

            # Find references
            ref = [int(r[1:]) - 1 for r in re.findall(r"\[\d+", sent)]  # In text citation id starts from 1
            if len(ref) == 0:
                # No citations
                joint_entail = 0
            elif any([ref_id >= len(item["docs"]) for ref_id in ref]):
                # Citations out of range
                joint_entail = 0
            else:
                if at_most_citations is not None:
                    ref = ref[:at_most_citations]
                total_citations += len(ref)
                joint_passage = "\n".join([_format_document(item["docs"][psgs_id]) for psgs_id in ref])

            # If not directly rejected by citation format error, calculate the recall score
            if joint_entail == -1:
                joint_entail = _run_nli_autoais(joint_passage, target_sent)

            entail += joint_entail
            if len(ref) > 1:
                sent_mcite += 1

            # calculate the precision score if applicable
            if joint_entail and len(ref) > 1:
                sent_mcite_support += 1
                # Precision check: did the model cite any unnecessary documents?
                for psgs_id in ref:
                    # condition A
                    passage = _format_document(item["docs"][psgs_id])
                    nli_result = _run_nli_autoais(passage, target_sent)

                    # condition B
                    if not nli_result:
                        subset_exclude = copy.deepcopy(ref)
                        subset_exclude.remove(psgs_id)
                        passage = "\n".join([_format_document(item["docs"][pid]) for pid in subset_exclude])
                        nli_result = _run_nli_autoais(passage, target_sent)
                        if nli_result:  # psgs_id is not necessary
                            sent_mcite_overcite += 1
                        else:
                            entail_prec += 1
                    else:
                        entail_prec += 1
            else:
                entail_prec += joint_entail

        sent_total += len(sents)
        ais_scores.append(entail / len(sents))
        ais_scores_prec.append(entail_prec / total_citations if total_citations > 0 else 0)  # len(sents))

    return {
        "citation_rec": 100 * np.mean(ais_scores),
        "citation_prec": 100 * np.mean(ais_scores_prec),
    }


def random_answers(rng: np.random.Generator, n: int) -> list[dict]:
    """Answers as ALCE's data (``docs``, sentences with ``[k]`` markers) and as the app's
    CitedSentence, with the same random verdicts: sentences citing nothing, several chunks,
    repeats, ids out of range, more than three citations."""
    answers = []
    counter = 0
    for _ in range(n):
        docs = [{"title": f"doc {d}", "text": f"chunk-k{d}"} for d in range(int(rng.integers(0, 6)))]
        sentences_alce, sentences_app = [], []
        for _ in range(int(rng.integers(0, 5))):
            counter += 1
            cites = [
                int(rng.integers(0, len(docs) + 2)) for _ in range(int(rng.choice([0, 1, 1, 2, 2, 3, 4, 5])))
            ]
            if cites and rng.random() < 0.2:
                cites.append(cites[0])  # a repeated citation
            claim = f"Sentence {counter} says something"
            keys = {f"k{c}" for c in cites if c < len(docs)}
            joint = int(rng.random() < 0.6)
            supports = {key: int(rng.random() < 0.7) for key in keys}
            VERDICTS[claim + "."] = (joint, supports)
            sentences_alce.append(claim + "".join(f"[{c + 1}]" for c in cites) + ".")
            sentences_app.append(
                CitedSentence(
                    cited=tuple(f"k{c}" if c < len(docs) else None for c in cites),
                    joint=joint,
                    supports=supports,
                )
            )
        answers.append({"alce": {"docs": docs, "sentences": sentences_alce}, "app": sentences_app})
    return answers


@pytest.mark.parametrize("at_most", [AT_MOST_CITATIONS, None, 1])
@pytest.mark.parametrize("seed", range(6))
def test_the_means_over_answers_are_alces_to_the_last_digit(seed, at_most):
    answers = random_answers(np.random.default_rng(seed), 60)
    theirs = compute_autoais([a["alce"] for a in answers], at_most_citations=at_most)
    scores = [answer_score(a["app"], at_most=at_most) for a in answers]
    kept = [s for s in scores if s is not None]
    assert len(kept) == sum(1 for a in answers if a["alce"]["sentences"])
    recall = 100 * float(np.mean([s.recall for s in kept]))
    precision = 100 * float(np.mean([s.precision for s in kept]))
    assert abs(recall - theirs["citation_rec"]) < 1e-12
    assert abs(precision - theirs["citation_prec"]) < 1e-12


def test_a_citation_is_precise_only_when_the_sentence_is_supported_and_it_is_needed():
    # Supported by a and b together; c supports nothing: a and b are needed, c is not.
    sentence = CitedSentence(cited=("a", "b", "c"), joint=1, supports={"a": 1, "b": 1, "c": 0})
    score = answer_score([sentence])
    assert (score.recall, score.precision, score.citations, score.precise) == (1.0, 2 / 3, 3, 2)
    # Not supported as a whole: no citation is precise, whatever each supports.
    sentence = CitedSentence(cited=("a", "b"), joint=0, supports={"a": 1, "b": 1})
    assert answer_score([sentence]).precision == 0.0
    # One citation that supports alone: precise.
    assert answer_score([CitedSentence(cited=("a",), joint=1)]).precision == 1.0


def test_repeats_count_twice_and_a_repeated_needed_citation_is_not_needed():
    # [a][a][b], a supports part, b part: removing one a leaves the other, so each a is not needed.
    sentence = CitedSentence(cited=("a", "a", "b"), joint=1, supports={"a": 1, "b": 1})
    score = answer_score([sentence])
    assert (score.citations, score.precise) == (3, 1)


def test_out_of_range_and_uncited_sentences_score_zero_and_count_no_citation():
    sentences = [
        CitedSentence(cited=()),
        CitedSentence(cited=("a", None), joint=1, supports={"a": 1}),
        CitedSentence(cited=("a",), joint=1),
    ]
    score = answer_score(sentences)
    assert (score.recall, score.precision, score.citations) == (pytest.approx(1 / 3), 1.0, 1)
    assert answer_score([CitedSentence(cited=())]).precision == 0.0
    assert answer_score([]) is None


def test_at_most_three_citations_per_sentence_by_default():
    sentence = CitedSentence(cited=("a", "b", "c", "d"), joint=1, supports=dict.fromkeys("abcd", 1))
    assert answer_score([sentence]).citations == 3
    assert answer_score([sentence], at_most=None).citations == 4


def test_a_missing_verdict_is_said():
    with pytest.raises(MissingVerdict) as raised:
        answer_score([CitedSentence(cited=("a",))])
    assert raised.value.what == "joint"
    with pytest.raises(MissingVerdict) as raised:
        answer_score([CitedSentence(cited=("a", "b"), joint=1, supports={"a": 1})])
    assert raised.value.what == "supports"
    # A sentence with one citation needs no verdict of that citation.
    assert answer_score([CitedSentence(cited=("a",), joint=0)]).recall == 0.0
