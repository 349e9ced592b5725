"""Citation units: made at import, labelled on their own page, judged per answer, estimated as
citation precision per theme beside veracity (citation recall)."""

from __future__ import annotations

import json
import re
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from annotation.corpus.citations import cited_chunks
from annotation.models import AnnotationMode, Criterion, Label, Level, Role, SourceChunk, Stage, Unit
from annotation.sampling.draws import draw_sample
from annotation.sampling.reading import cluster_summary, sample_as_json
from annotation.workflow import final_labels
from evaluation.estimates import snapshots
from evaluation.estimates.report import compute_report
from evaluation.imports.campaign_file import import_file
from evaluation.interchange import exporting
from evaluation.interchange.loading import import_labels
from evaluation.judge import runs
from evaluation.models import Judge, JudgeRun, Judgment, ReportSnapshot
from evaluation.reports import read
from tests.factories import label, make_answer, member, sample_units
from tests.ingest_files import JSONL, RECORDS, write_jsonl
from tests.llm_server import ScriptedLLMServer, expected_indices

pytestmark = pytest.mark.django_db
ALPHA = 0.05


def citations_of(campaign) -> set[tuple[str, int, str]]:
    return set(
        Unit.objects.filter(campaign=campaign, level=Level.CITATION).values_list(
            "answer__external_id", "sentence__position", "chunk__external_id"
        )
    )


# Units


def test_cited_chunks_keeps_retrieved_ids_once_in_citation_order():
    retrieved = {"a": 1, "b": 2, "c": 3}
    assert cited_chunks(cited_ids=["b", "zz", "a", "b"], retrieved=retrieved) == [2, 1]
    assert cited_chunks(cited_ids=[], retrieved=retrieved) == []
    assert cited_chunks(cited_ids=["zz"], retrieved={}) == []


# In answers.jsonl: Q1-1 cites c1 then c2 (both retrieved), Q1-2 cites c1 (retrieved) and c9 (not
# retrieved: a broken citation, no unit), Q2-1 cites h1, Q2-2 abstains and cites nothing.
EXPECTED = {("Q1-1", 0, "c1"), ("Q1-1", 1, "c2"), ("Q1-2", 0, "c1"), ("Q2-1", 0, "h1")}


def test_import_makes_one_citation_unit_per_sentence_and_retrieved_cited_chunk():
    summary = import_file(path=JSONL, campaign_name="Citations")
    campaign = summary.campaign
    assert citations_of(campaign) == EXPECTED
    units = Unit.objects.filter(campaign=campaign, level=Level.CITATION).select_related("answer__question")
    for unit in units:
        assert (unit.theme, unit.difficulty) == (unit.answer.question.theme, unit.answer.question.difficulty)
    criterion = Criterion.objects.get(campaign=campaign, name="citation_support")
    assert (criterion.level, criterion.builtin) == (Level.CITATION, True)
    assert criterion.guidelines.startswith("Appui de la citation")


def test_reimporting_with_update_gives_the_same_citation_units_once(tmp_path):
    campaign = import_file(path=JSONL, campaign_name="Citations").campaign
    import_file(path=JSONL, campaign_name="Citations", update=True)
    assert citations_of(campaign) == EXPECTED
    assert Unit.objects.filter(campaign=campaign, level=Level.CITATION).count() == len(EXPECTED)
    changed = [dict(r) for r in RECORDS]
    changed[0] = dict(
        changed[0], answer="Le chiffre d'affaires est de 48,2 M€ [^c3^] [^c1^] [^c3^].", labels={}
    )
    import_file(path=write_jsonl(tmp_path / "changed.jsonl", changed), campaign_name="Citations", update=True)
    assert citations_of(campaign) == (EXPECTED - {("Q1-1", 0, "c1"), ("Q1-1", 1, "c2")}) | {
        ("Q1-1", 0, "c3"),
        ("Q1-1", 0, "c1"),
    }


def test_the_database_refuses_a_second_unit_of_one_citation_and_a_citation_without_chunk(campaign):
    answer = make_answer(campaign=campaign, citations=True)
    unit = Unit.objects.filter(answer=answer, level=Level.CITATION).first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Unit.objects.create(
            campaign=campaign, level=Level.CITATION, answer=answer, sentence=unit.sentence, chunk=unit.chunk
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        Unit.objects.create(campaign=campaign, level=Level.CITATION, answer=answer, sentence=unit.sentence)
    with pytest.raises(IntegrityError), transaction.atomic():
        Unit.objects.create(
            campaign=campaign, level=Level.SENTENCE, answer=answer, sentence=unit.sentence, chunk=unit.chunk
        )


def test_a_sample_of_citation_units_names_each_unit_s_sentence_and_source(campaign):
    for n in range(12):
        make_answer(
            campaign=campaign,
            theme=["Finance", "RH"][n % 2],
            text=f"Le loyer {n} est de {100 + n} k€ [^c1^] [^c2^]. Il est indexé {n} fois [^c2^].",
            sentences=[
                (f"Le loyer {n} est de {100 + n} k€ [^c1^] [^c2^].", ["c1", "c2"]),
                (f"Il est indexé {n} fois [^c2^].", ["c2"]),
            ],
            citations=True,
        )
    criterion = Criterion.objects.get(campaign=campaign, name="citation_support")
    sample = draw_sample(criterion=criterion, budget=12, seed=3)
    items = sample_as_json(sample=sample)["items"]
    assert len(items) == 12
    assert {item["theme"] for item in items} == {"Finance", "RH"}
    assert all(item["source"] in ("c1", "c2") and item["sentence"] in (0, 1) for item in items)
    assert not sample.items.exclude(unit__level=Level.CITATION).exists()
    summary = cluster_summary(sample=sample)
    assert any(
        "Le loyer" in text for theme in summary for row in theme["cluster_rows"] for text in row["examples"]
    )


# The annotation page


def test_the_label_page_shows_the_sentence_in_its_paragraph_and_that_one_chunk_only(
    client_for, annotator, campaign
):
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="citation_support")
    answer = make_answer(
        campaign=campaign,
        text="Le loyer est de 120 k€ [^c1^] [^c2^]. Il est indexé [^c3^].",
        sentences=[
            ("Le loyer est de 120 k€ [^c1^] [^c2^].", ["c1", "c2"]),
            ("Il est indexé [^c3^].", ["c3"]),
        ],
        chunk_ids=("c1", "c2", "c3", "c4"),
        citations=True,
    )
    units = list(Unit.objects.filter(answer=answer, level=Level.CITATION).order_by("id"))
    assert [u.chunk.external_id for u in units] == ["c1", "c2", "c3"]
    sample_units(criterion=criterion, units=units[1:2])
    url = reverse("annotation:annotate", args=[campaign.slug, criterion.name, Stage.LABEL])
    page = client_for(annotator).get(url).content.decode()
    assert re.search(rf'id="work"[^>]*data-unit="{units[1].pk}"', page)
    assert "Texte c2." in page and "doc-c2.pdf" in page
    for other in ("c1", "c3", "c4"):
        assert f"Texte {other}." not in page and f"doc-{other}.pdf" not in page
    assert '<mark class="target">' in page and "Le loyer est de 120" in page
    assert "Does this source support the sentence, at least in part?" in page
    assert "Supports" in page and "Does not support" in page


def test_a_citation_unit_goes_through_label_and_review(campaign, annotator, reviewer):
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="citation_support")
    make_answer(campaign=campaign, citations=True)
    units = list(Unit.objects.filter(campaign=campaign, level=Level.CITATION).order_by("id"))
    sample_units(criterion=criterion, units=units)
    label(annotator, criterion, Stage.LABEL, 1)
    label(reviewer, criterion, Stage.REVIEW, 0, comment="c1 says nothing of it")
    assert list(Label.objects.filter(criterion=criterion).values_list("unit_id", "stage", "value")) == [
        (units[0].pk, Stage.LABEL, 1),
        (units[0].pk, Stage.REVIEW, 0),
    ]


def test_blind_double_labels_of_a_citation_that_differ_go_to_adjudication_and_its_page(
    client_for, campaign, adjudicator
):
    campaign.annotation_mode = AnnotationMode.BLIND_DOUBLE
    campaign.save(update_fields=["annotation_mode"])
    criterion = Criterion.objects.select_related("campaign").get(campaign=campaign, name="citation_support")
    make_answer(campaign=campaign, citations=True, chunk_ids=("c1", "c2", "c9"))
    units = list(Unit.objects.filter(campaign=campaign, level=Level.CITATION).order_by("id"))
    sample_units(criterion=criterion, units=units[:1])
    first, second = member(campaign, Role.ANNOTATOR), member(campaign, Role.ANNOTATOR)
    label(first, criterion, Stage.LABEL, 1)
    label(second, criterion, Stage.LABEL, 0)
    assert final_labels(criterion=criterion) == {}
    page = client_for(adjudicator).get(reverse("annotation:adjudicate", args=[campaign.slug, criterion.name]))
    content = page.content.decode()
    assert re.search(rf'id="work"[^>]*data-unit="{units[0].pk}"', content)
    assert "Texte c1." in content and "Texte c2." not in content and "Texte c9." not in content
    label(adjudicator, criterion, Stage.ADJUDICATION, 0, comment="c1 gives the figure, not the trend")
    assert final_labels(criterion=criterion) == {units[0].pk: 0}


# The judge


@pytest.mark.django_db(transaction=True)
def test_the_llm_judge_gets_one_prompt_per_answer_with_each_citation_and_its_source(campaign):
    for i in range(3):
        make_answer(
            campaign=campaign,
            theme=["Finance", "RH"][i % 2],
            text=f"Le chiffre d'affaires est de {10 + i} M€ [^c1^] [^c2^]. Il progresse [^c2^]. Merci.",
            sentences=[
                (f"Le chiffre d'affaires est de {10 + i} M€ [^c1^] [^c2^].", ["c1", "c2"]),
                ("Il progresse [^c2^].", ["c2"]),
                ("Merci.", []),
            ],
            citations=True,
        )
    criterion = Criterion.objects.get(campaign=campaign, name="citation_support")
    with ScriptedLLMServer(labeler=lambda index, request: 0 if index == 1 else 1) as server:
        judge = runs.get_or_create_judge(
            campaign=campaign, name="gpt", model="scripted", base_url=server.base_url
        )
        judge.settings.update({"timeout_s": 2.0, "max_attempts": 3, "backoff_base_s": 0.01})
        judge.save()
        run = runs.run_inline(run_id=runs.create_run(criterion=criterion, judge=judge, concurrency=2).pk)
        requests = server.requests
    assert run.status == JudgeRun.Status.DONE
    assert (run.total_units, run.done_units, run.batches.count()) == (9, 9, 3)
    assert len(requests) == 3
    for request in requests:
        system, user = request["messages"][0]["content"], request["messages"][-1]["content"]
        assert "at least part of the sentence" in system or "au moins une partie de la phrase" in system
        assert expected_indices(request) == [0, 1, 2]
        assert user.count("<source>") == 2  # c1 and c2 in full, once each
        assert user.count("<citation index=") == 3
    values = {
        (position, source): value
        for position, source, value in Judgment.objects.filter(judge=judge, criterion=criterion).values_list(
            "unit__sentence__position", "unit__chunk__external_id", "value"
        )
    }
    assert values == {(0, "c1"): 1, (0, "c2"): 0, (1, "c2"): 1}


def test_a_v1_judge_is_refused_on_the_citation_level(campaign):
    make_answer(campaign=campaign, citations=True)
    criterion = Criterion.objects.get(campaign=campaign, name="citation_support")
    judge = runs.get_or_create_judge(
        campaign=campaign, name="old", model="m", base_url="http://127.0.0.1:9", prompt_version="v1"
    )
    with pytest.raises(runs.RunError, match="'v1' has no prompt for 'citation_support'"):
        runs.create_run(criterion=criterion, judge=judge)
    assert not JudgeRun.objects.exists()


def test_the_lexical_judge_compares_each_citation_with_its_one_source(campaign):
    answer = make_answer(campaign=campaign, citations=True)
    SourceChunk.objects.filter(campaign=campaign, external_id="c1").update(
        text="Le chiffre d'affaires est de 12 M€ selon le rapport."
    )
    criterion = Criterion.objects.get(campaign=campaign, name="citation_support")
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    run = runs.run_inline(run_id=runs.create_run(criterion=criterion, judge=judge).pk)
    assert run.done_units == 2
    values = dict(
        Judgment.objects.filter(unit__answer=answer).values_list("unit__chunk__external_id", "value")
    )
    assert values == {"c1": 1, "c2": 0}


# Estimates: citation precision per theme


# Per theme: answers, each with two citations (c1 of its first sentence, c2 of its second); the
# human labels of the first citations in order, and the judge's labels on every citation.
DESIGN = {
    "Finance": {"answers": 3, "human": [1, 1, 0, 1], "judge": [1, 1, 0, 0, 1, 1]},
    "RH": {"answers": 2, "human": [1, 0, 0], "judge": [1, 0, 1, 1]},
}


def precision_campaign(campaign):
    criterion = Criterion.objects.get(campaign=campaign, name="citation_support")
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = Judge.objects.create(campaign=campaign, name="imported", kind=Judge.Kind.IMPORTED)
    for theme, spec in DESIGN.items():
        for _ in range(spec["answers"]):
            make_answer(campaign=campaign, theme=theme, citations=True)
        # A broken citation: no unit, so it weighs on no precision.
        make_answer(
            campaign=campaign,
            theme=theme,
            text="La marge reste stable [^zz^].",
            sentences=[("La marge reste stable [^zz^].", ["zz"])],
        )
        units = list(Unit.objects.filter(campaign=campaign, theme=theme, level=Level.CITATION).order_by("id"))
        assert len(units) == len(spec["judge"])
        for unit, value in zip(units, spec["human"], strict=False):
            Label.objects.create(unit=unit, criterion=criterion, stage=Stage.IMPORTED, value=value)
        for unit, value in zip(units, spec["judge"], strict=True):
            Judgment.objects.create(unit=unit, criterion=criterion, judge=judge, value=value)
        sentences = Unit.objects.filter(campaign=campaign, theme=theme, level=Level.SENTENCE).order_by("id")
        for index, unit in enumerate(sentences):
            if index < 2:
                Label.objects.create(unit=unit, criterion=veracity, stage=Stage.IMPORTED, value=1)
            Judgment.objects.create(unit=unit, criterion=veracity, judge=judge, value=int(index % 3 != 2))
    return criterion, judge


def test_citation_precision_per_theme_is_the_share_of_citations_that_support(campaign):
    criterion, judge = precision_campaign(campaign)
    report = compute_report(criterion=criterion, judge=judge, method="study", alpha=ALPHA)
    groups = {group.theme: group for group in report.themes}
    # By hand: Finance 3 of 4 human labels say "supports", the judge 4 of 6; RH 1 of 3 and 3 of 4.
    assert (groups["Finance"].size, groups["Finance"].n_human, groups["Finance"].n_judge) == (6, 4, 6)
    assert groups["Finance"].human.mean == pytest.approx(3 / 4)
    assert groups["Finance"].judge.mean == pytest.approx(4 / 6)
    assert (groups["RH"].size, groups["RH"].n_human, groups["RH"].n_judge) == (4, 3, 4)
    assert groups["RH"].human.mean == pytest.approx(1 / 3)
    assert groups["RH"].judge.mean == pytest.approx(3 / 4)
    for theme, spec in DESIGN.items():
        n = len(spec["human"])
        y, yhat = np.array(spec["human"], float), np.array(spec["judge"][:n], float)
        unlabeled = np.array(spec["judge"][n:], float)
        point = ppi_mean_pointestimate(y, yhat, unlabeled, lam=None)
        lo, hi = ppi_mean_ci(y, yhat, unlabeled, alpha=ALPHA, lam=None)
        assert groups[theme].ppi.mean == pytest.approx(float(point[0]), rel=1e-12)
        assert (groups[theme].ppi.lo, groups[theme].ppi.hi) == pytest.approx(
            [float(lo[0]), float(hi[0])], rel=1e-12
        )


def test_the_report_command_json_puts_citation_precision_beside_recall(campaign):
    criterion, judge = precision_campaign(campaign)
    out = StringIO()
    call_command(
        "report",
        campaign=campaign.name,
        criterion="citation_support",
        format="json",
        method="study",
        stdout=out,
    )
    data = json.loads(out.getvalue())
    assert data["level"] == "citation"
    rows = {row["theme"]: row for row in data["citation_measures"]}
    assert list(rows) == ["Finance", "RH", "overall"]
    assert rows["Finance"]["citation_support"]["human_mean"] == pytest.approx(3 / 4)
    assert rows["RH"]["citation_support"]["judge_mean"] == pytest.approx(3 / 4)
    # Veracity on the sentences: each theme has 2 x its answers + 1 sentences, the judge says 0
    # to every third; humans labelled two sentences 1.
    assert rows["Finance"]["sentence_support"]["size"] == 7
    assert rows["Finance"]["sentence_support"]["judge_mean"] == pytest.approx(5 / 7)
    assert rows["RH"]["sentence_support"]["human_mean"] == 1.0
    assert rows["overall"]["citation_support"] == data["overall"]
    assert data["alce_citation_measures"]["rows"][-1]["theme"] == "overall"
    relevance = StringIO()
    call_command("report", campaign=campaign.name, criterion="veracity", format="json", stdout=relevance)
    assert "citation_measures" not in json.loads(relevance.getvalue())


def test_the_report_page_of_citation_support_shows_precision_and_recall(client_for, manager, campaign):
    precision_campaign(campaign)
    url = reverse("evaluation:report", args=[campaign.slug, "citation_support"])
    page = client_for(manager).get(url, {"method": "study"}).content.decode()
    assert "Citation measures per theme" in page
    row = re.search(r'<tr class="citation-row" data-theme="Finance">(.*?)</tr>', page, re.S).group(1)
    assert "75.0" in row  # human precision, 3 of 4
    assert "71.4" in row  # judge recall, 5 of 7
    other = client_for(manager).get(reverse("evaluation:report", args=[campaign.slug, "veracity"]))
    assert "Citation measures per theme" not in other.content.decode()


def test_rows_pair_the_themes_of_both_reports_and_end_with_overall(campaign):
    criterion, judge = precision_campaign(campaign)
    precision = compute_report(criterion=criterion, judge=judge)
    rows = read.citation_rows(precision=precision, recall=None)
    assert [row.theme for row in rows] == ["Finance", "RH", "overall"]
    assert all(row.recall is None for row in rows)


# Round trips with Label Studio


def test_a_label_studio_label_of_a_citation_lands_on_that_citation(campaign, tmp_path):
    answer = make_answer(campaign=campaign, citations=True)
    criterion = Criterion.objects.get(campaign=campaign, name="citation_support")
    stream = StringIO()
    exporting.write_label_studio(campaign=campaign, criteria=[criterion], stream=stream, vocabulary=None)
    tasks = json.loads(stream.getvalue())
    assert [(t["data"]["sentence"], t["data"]["source"], t["data"]["level"]) for t in tasks] == [
        (0, "c1", "citation"),
        (1, "c2", "citation"),
    ]
    task = tasks[1]
    del task["data"]["unit_id"]  # found by answer, sentence and source, as from another install
    task["annotations"] = [
        {
            "id": 1,
            "completed_by": 7,
            "result": [
                {
                    "from_name": "citation_support",
                    "to_name": "text",
                    "type": "choices",
                    "value": {"choices": ["0"]},
                }
            ],
            "created_at": "2025-03-01T09:15:02.123456Z",
        }
    ]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps([task]), encoding="utf-8")
    summary = import_labels(path=path, fmt="label-studio", campaign=campaign)
    assert summary.labels == 1
    stored = Label.objects.get(criterion=criterion)
    assert (stored.unit.level, stored.unit.sentence.position, stored.unit.chunk.external_id) == (
        Level.CITATION,
        1,
        "c2",
    )
    assert stored.unit.answer == answer and stored.value == 0


def test_the_citation_report_reads_both_snapshots_in_a_fixed_number_of_queries(client_for, manager, campaign):
    criterion, judge = precision_campaign(campaign)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    for each in (criterion, veracity):
        snapshots.record_snapshots(criterion=each, trigger=ReportSnapshot.Trigger.IMPORT)
    client = client_for(manager)
    url = reverse("evaluation:report", args=[campaign.slug, criterion.name])

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    first = queries()
    # Any criterion's page from a snapshot: 13 (test_report_source); then the veracity criterion's
    # snapshot and what changed since it: current sample, units count, schedule, labels, judgments
    # (the criterion itself read once, with the page's); the page cache's key of ALCE's measures:
    # both criteria's judgments' versions (the campaign's content version comes with it); ALCE's
    # measures on the judge's verdicts, computed this once: the chunks, answers, sentences, units
    # and judgments of both criteria (measures.citations); then the campaign's criteria.
    assert first == 13 + 6 + 2 + 5 + 1
    # Again, nothing changed: ALCE's measures come from the page cache.
    assert queries() == first - 5
    for _ in range(10):
        make_answer(campaign=campaign, theme="Finance", citations=True)
    for each in (criterion, veracity):
        snapshots.record_snapshots(criterion=each, trigger=ReportSnapshot.Trigger.IMPORT)
    assert queries() == first
