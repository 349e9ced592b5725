"""ALCE's citation recall and precision on a campaign's verdicts (evaluation.measures.citations),
against ALCE's compute_autoais (copied in tests/inference/test_citations.py) fed the same
sentences, chunks and verdicts; and where the report puts them beside the app's own rates."""

from __future__ import annotations

import json
import re
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Criterion, Level, Unit
from evaluation.measures.citations import alce_measures
from evaluation.models import Judge, Judgment
from tests.factories import make_answer
from tests.inference import test_citations as alce

pytestmark = pytest.mark.django_db

# Per answer: (theme, sentences as (text, cited ids)); the answers retrieve c1, c2, c3, c4.
ANSWERS = [
    ("Finance", [("Le CA est de 12 M€ [^c1^][^c2^].", ["c1", "c2"]), ("Il progresse [^c3^].", ["c3"])]),
    ("Finance", [("La marge baisse [^c1^][^c1^][^c2^].", ["c1", "c2"]), ("En détail :", [])]),
    ("Finance", [("Quatre sources [^c1^][^c2^][^c3^][^c4^].", ["c1", "c2", "c3", "c4"])]),
    ("RH", [("Une source absente [^zz^][^c1^].", ["zz", "c1"]), ("Rien de cité.", [])]),
    ("RH", [("Deux sources [^c2^][^c3^].", ["c2", "c3"]), ("Une seule [^c4^].", ["c4"])]),
    ("RH", [("Trois sources [^c1^][^c3^][^c4^].", ["c1", "c3", "c4"])]),
]
CHUNKS = ("c1", "c2", "c3", "c4")


def build(campaign, rng):
    support = Criterion.objects.get(campaign=campaign, name="citation_support")
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    for theme, sentences in ANSWERS:
        make_answer(
            campaign=campaign,
            theme=theme,
            text=" ".join(text for text, _ in sentences),
            sentences=sentences,
            chunk_ids=CHUNKS,
            citations=True,
        )
    for unit in Unit.objects.filter(campaign=campaign, level=Level.SENTENCE):
        Judgment.objects.create(unit=unit, criterion=veracity, judge=judge, value=int(rng.random() < 0.7))
    for unit in Unit.objects.filter(campaign=campaign, level=Level.CITATION):
        Judgment.objects.create(unit=unit, criterion=support, judge=judge, value=int(rng.random() < 0.7))
    return support, veracity, judge


def alce_data(campaign, *, theme=None):
    """The campaign as ALCE's data: each answer's retrieved chunks as docs (text ``chunk-<pk>``),
    its sentences with ``[rank]`` markers (an id not retrieved: a rank out of range), and the
    oracle's verdicts from the same judgments."""
    data = []
    judged = dict(Judgment.objects.values_list("unit_id", "value"))
    for unit in Unit.objects.filter(campaign=campaign, level=Level.ANSWER).select_related("answer"):
        if theme is not None and unit.theme != theme:
            continue
        answer = unit.answer
        sources = list(answer.sources.order_by("rank").select_related("chunk"))
        rank = {source.chunk.external_id: source.rank for source in sources}
        docs = [{"title": s.chunk.title, "text": f"chunk-k{s.chunk_id}"} for s in sources]
        sentences = []
        for sentence in answer.sentences.order_by("position"):
            out = len(docs) + 1
            marked = re.sub(
                r"\[\^(\w+)\^\]",
                lambda m, rank=rank, out=out: f"[{rank.get(m.group(1), out)}]",
                sentence.text,
            )
            units = {u.chunk_id: u.pk for u in sentence.units.filter(level=Level.CITATION)}
            veracity_unit = sentence.units.get(level=Level.SENTENCE).pk
            alce.VERDICTS[alce.remove_citations(marked).strip()] = (
                judged[veracity_unit],
                {f"k{chunk}": judged[pk] for chunk, pk in units.items()},
            )
            sentences.append(marked)
        data.append({"docs": docs, "sentences": sentences})
    return data


@pytest.mark.parametrize("seed", range(4))
def test_the_campaigns_alce_measures_are_alces_own(campaign, seed):
    support, veracity, judge = build(campaign, np.random.default_rng(seed))
    (measures,) = alce_measures(support=support, veracity=veracity, judge=judge)
    rows = {row.theme: row for row in measures.rows}
    assert list(rows) == ["Finance", "RH", "overall"]
    for theme in ("Finance", "RH", None):
        theirs = alce.compute_autoais(alce_data(campaign, theme=theme), at_most_citations=3)
        row = rows[theme or "overall"]
        assert abs(100 * row.recall.mean - theirs["citation_rec"]) < 1e-12
        assert abs(100 * row.precision.mean - theirs["citation_prec"]) < 1e-12
    assert measures.answers == len(ANSWERS) and measures.left_out == 0
    # Repeats count: c1 twice in the second answer; four citations capped at three.
    assert measures.citations == 2 + 1 + 3 + 3 + 0 + 2 + 1 + 3


def test_an_answer_without_every_verdict_it_needs_is_left_out_and_counted(campaign):
    support, veracity, judge = build(campaign, np.random.default_rng(0))
    Judgment.objects.filter(criterion=veracity, unit__sentence__text__startswith="Il progresse").delete()
    (measures,) = alce_measures(support=support, veracity=veracity, judge=judge)
    assert (measures.answers, measures.left_out) == (len(ANSWERS) - 1, 1)


def test_the_report_json_and_page_name_each_measure(campaign, client_for, manager):
    support, veracity, judge = build(campaign, np.random.default_rng(1))
    out = StringIO()
    call_command(
        "report",
        campaign=campaign.name,
        criterion="citation_support",
        judge=judge.name,
        format="json",
        stdout=out,
    )
    data = json.loads(out.getvalue())
    rows = {row["theme"]: row for row in data["citation_measures"]}
    assert set(rows["overall"]) == {"theme", "citation_support", "sentence_support"}
    assert rows["overall"]["citation_support"] == data["overall"]
    measures = data["alce_citation_measures"]
    assert (measures["source"], measures["judge"], measures["at_most_citations"]) == ("judge", "imported", 3)
    (expected,) = alce_measures(support=support, veracity=veracity, judge=judge)
    overall = measures["rows"][-1]
    assert overall["theme"] == "overall"
    assert overall["citation_recall"]["mean"] == pytest.approx(expected.overall.recall.mean, abs=1e-15)
    assert overall["citation_precision"]["lo"] <= overall["citation_precision"]["mean"]
    page = client_for(manager).get(
        reverse("evaluation:report", args=[campaign.slug, "citation_support"]), {"judge": judge.name}
    )
    text = page.content.decode()
    assert "Citation support rate" in text and "ALCE citation recall" in text
    row = re.search(r'<tr class="alce-row total" data-theme="overall">(.*?)</tr>', text, re.S).group(1)
    assert f"{100 * expected.overall.recall.mean:.1f}" in row
