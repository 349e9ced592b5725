from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import openpyxl
import pytest

from annotation import ingest
from annotation.corpus.sentences import split_sentences
from annotation.ingest.analysis import (
    LANGUAGE_SAMPLE_CHARS,
    WORKER_NICENESS,
    Analysis,
    TextJob,
    analyse,
    language_sample,
)
from annotation.models import (
    Answer,
    AnswerSource,
    Campaign,
    Criterion,
    Label,
    Level,
    Question,
    Sample,
    SampleItem,
    Sentence,
    SourceChunk,
    Stage,
    Unit,
)
from evaluation.imports.campaign_file import import_file
from evaluation.models import Judge, Judgment
from tests.factories import make_user
from tests.ingest_files import DATA, JSONL, RECORDS, table_counts, write_jsonl

pytestmark = pytest.mark.django_db

PATTERN = r"\[\^([A-Za-z0-9_-]+)\^\]"


def corpus(campaign: Campaign) -> dict[str, list]:
    """Everything an import wrote for a campaign, without database ids, in a stable order."""

    def rows(queryset, *fields):
        return sorted(queryset.values_list(*fields), key=repr)

    return {
        "questions": rows(
            Question.objects.filter(campaign=campaign),
            "external_id",
            "text",
            "theme",
            "difficulty",
            "language",
        ),
        "answers": rows(
            Answer.objects.filter(campaign=campaign),
            "external_id",
            "question__external_id",
            "repetition",
            "text",
            "language",
        ),
        "sources": rows(
            AnswerSource.objects.filter(answer__campaign=campaign),
            "answer__external_id",
            "rank",
            "chunk__external_id",
            "chunk__title",
            "chunk__page",
            "chunk__text",
        ),
        "sentences": rows(
            Sentence.objects.filter(answer__campaign=campaign),
            "answer__external_id",
            "position",
            "text",
            "paragraph",
            "cited_ids",
            "citations_ok",
        ),
        "units": rows(
            Unit.objects.filter(campaign=campaign),
            "answer__external_id",
            "level",
            "sentence__position",
            "theme",
            "difficulty",
        ),
        "labels": rows(
            Label.objects.filter(unit__campaign=campaign),
            "unit__answer__external_id",
            "unit__sentence__position",
            "criterion__name",
            "stage",
            "user",
            "value",
        ),
        "judgments": rows(
            Judgment.objects.filter(unit__campaign=campaign),
            "unit__answer__external_id",
            "unit__sentence__position",
            "criterion__name",
            "judge__name",
            "status",
            "value",
        ),
    }


def write_xlsx(path: Path, records: list[dict]) -> Path:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    header = ["question_id", "question", "theme", "difficulty", "answer", "sources", "human:relevance"]
    header.append("llm:relevance")
    sheet.append(header)
    for r in records:
        label = r.get("labels", {}).get("relevance", {})
        sheet.append(
            [
                r["question_id"],
                r["question"],
                r["theme"],
                r["difficulty"],
                r["answer"],
                json.dumps(r["sources"], ensure_ascii=False),
                label.get("human"),
                label.get("llm"),
            ]
        )
    workbook.save(path)
    return path


def import_ok(path: Path, name: str = "Import", **options):
    summary = import_file(path=path, campaign_name=name, **options)
    return summary, Campaign.objects.get(name=name)


def import_fails(path: Path, name: str = "Import", **options) -> list[ingest.RowError]:
    before = table_counts()
    with pytest.raises(ingest.ImportFailed) as failure:
        import_file(path=path, campaign_name=name, **options)
    assert table_counts() == before, "a failed import must not write anything"
    return failure.value.errors


# Formats


def test_jsonl_import_writes_questions_answers_chunks_and_sentences():
    summary, campaign = import_ok(JSONL)
    assert summary.campaign_created
    assert (summary.questions_created, summary.answers_created, summary.chunks_created) == (2, 4, 4)
    assert set(Criterion.objects.filter(campaign=campaign).values_list("name", "level")) == {
        ("veracity", Level.SENTENCE),
        ("relevance", Level.ANSWER),
        ("citation_support", Level.CITATION),
    }
    answers = Answer.objects.filter(campaign=campaign).order_by("external_id")
    assert [(a.external_id, a.question.external_id, a.repetition) for a in answers] == [
        ("Q1-1", "Q1", 1),
        ("Q1-2", "Q1", 2),
        ("Q2-1", "Q2", 1),
        ("Q2-2", "Q2", 2),
    ]
    assert {a.language for a in answers} == {"fr"}
    assert set(Question.objects.filter(campaign=campaign).values_list("language", flat=True)) == {"fr"}
    first = answers[0]
    assert list(first.sources.values_list("rank", "chunk__external_id")) == [(1, "c1"), (2, "c2"), (3, "c3")]
    expected = split_sentences(first.text, citation_pattern=PATTERN)
    stored = list(first.sentences.order_by("position"))
    assert [(s.text, s.paragraph, list(s.cited_ids)) for s in stored] == [
        (s.text, s.paragraph, list(s.cited_ids)) for s in expected
    ]
    total_sentences = sum(len(split_sentences(r["answer"], citation_pattern=PATTERN)) for r in RECORDS)
    assert summary.sentences == Sentence.objects.filter(answer__campaign=campaign).count() == total_sentences
    # Citations of retrieved chunks: c1 and c2 in Q1-1, c1 in Q1-2 (its c9 was not retrieved), h1 in Q2-1.
    assert summary.units == Unit.objects.filter(campaign=campaign).count() == 4 + total_sentences + 4


def test_units_copy_theme_and_difficulty_one_per_answer_and_per_sentence():
    _, campaign = import_ok(JSONL)
    for answer in Answer.objects.filter(campaign=campaign).select_related("question"):
        units = Unit.objects.filter(answer=answer)
        assert units.filter(level=Level.ANSWER, sentence=None).count() == 1
        assert units.filter(level=Level.SENTENCE).count() == answer.sentences.count()
        assert set(units.values_list("theme", "difficulty")) == {
            (answer.question.theme, answer.question.difficulty)
        }


def test_citation_check_is_none_without_citation_and_false_for_an_id_not_retrieved():
    _, campaign = import_ok(JSONL)
    sentences = Sentence.objects.filter(answer__campaign=campaign)
    assert sentences.get(text__contains="La marge reste stable").citations_ok is False  # cites c9
    assert sentences.get(text__startswith="Le chiffre d'affaires 2023").citations_ok is True
    assert sentences.get(text__startswith="Je ne trouve pas").citations_ok is None


def test_human_labels_land_as_final_imported_labels_without_a_person():
    summary, campaign = import_ok(JSONL)
    labels = Label.objects.filter(unit__campaign=campaign)
    assert summary.labels == labels.count() == 2
    assert set(
        labels.values_list("unit__answer__external_id", "unit__level", "criterion__name", "value")
    ) == {
        ("Q1-1", Level.ANSWER, "relevance", 1),
        ("Q1-2", Level.ANSWER, "relevance", 0),
    }
    assert set(labels.values_list("stage", "user")) == {(Stage.IMPORTED, None)}


def test_judge_labels_land_as_ok_judgments_of_the_imported_judge():
    summary, campaign = import_ok(JSONL)
    judge = Judge.objects.get(campaign=campaign, name="imported")
    assert judge.kind == Judge.Kind.IMPORTED
    judgments = Judgment.objects.filter(judge=judge)
    assert summary.judgments == judgments.count() == 3
    assert set(judgments.values_list("unit__answer__external_id", "criterion__name", "status", "value")) == {
        ("Q1-1", "relevance", Judgment.Status.OK, 1),
        ("Q1-2", "relevance", Judgment.Status.OK, 1),
        ("Q2-1", "relevance", Judgment.Status.OK, 0),
    }


def test_no_judge_is_created_when_the_file_has_no_judge_labels(tmp_path):
    records = [{k: v for k, v in r.items() if k != "labels"} for r in RECORDS]
    _, campaign = import_ok(write_jsonl(tmp_path / "plain.jsonl", records))
    assert not Judge.objects.filter(campaign=campaign).exists()


def test_json_list_gives_the_same_corpus_as_jsonl(tmp_path):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(RECORDS, ensure_ascii=False), encoding="utf-8")
    _, from_jsonl = import_ok(JSONL, name="From JSONL")
    _, from_json = import_ok(path, name="From JSON")
    assert corpus(from_json) == corpus(from_jsonl)


def test_csv_with_semicolons_and_a_byte_order_mark_gives_the_same_corpus():
    _, from_jsonl = import_ok(JSONL, name="From JSONL")
    _, from_csv = import_ok(DATA / "answers.csv", name="From CSV")
    assert corpus(from_csv) == corpus(from_jsonl)


def test_xlsx_written_by_openpyxl_gives_the_same_corpus(tmp_path):
    _, from_jsonl = import_ok(JSONL, name="From JSONL")
    _, from_xlsx = import_ok(write_xlsx(tmp_path / "answers.xlsx", RECORDS), name="From XLSX")
    assert corpus(from_xlsx) == corpus(from_jsonl)


def test_mapping_renames_columns_and_keys_inside_sources():
    _, from_jsonl = import_ok(JSONL, name="From JSONL")
    _, mapped = import_ok(DATA / "mapped.csv", name="Mapped", mapping=DATA / "mapping.json")
    expected = corpus(from_jsonl)
    got = corpus(mapped)
    # The mapped file carries no judge labels; everything else is the same.
    assert got["judgments"] == []
    assert {k: v for k, v in got.items() if k != "judgments"} == {
        k: v for k, v in expected.items() if k != "judgments"
    }


def test_mapping_errors_name_the_file_s_own_column(tmp_path):
    path = tmp_path / "mapped.csv"
    with (DATA / "mapped.csv").open(encoding="utf-8", newline="") as source:
        rows = list(csv.reader(source))
    rows[2][4] = "  "  # second answer: empty "Réponse"
    with path.open("w", encoding="utf-8", newline="") as out:
        csv.writer(out).writerows(rows)
    errors = import_fails(path, mapping=DATA / "mapping.json")
    assert [(e.row, e.field) for e in errors] == [(3, "Réponse")]


def test_an_invalid_mapping_file_is_an_error(tmp_path):
    mapping = tmp_path / "mapping.json"
    mapping.write_text('["question_id"]', encoding="utf-8")
    errors = import_fails(JSONL, mapping=mapping)
    assert errors[0].file == str(mapping)
    assert errors[0].field == "mapping"


def test_presplit_sentences_are_kept_with_their_labels_and_citations():
    summary, campaign = import_ok(DATA / "presplit.jsonl")
    sentences = list(Sentence.objects.filter(answer__campaign=campaign).order_by("position"))
    assert [(s.position, s.cited_ids, s.citations_ok) for s in sentences] == [
        (0, ["c1"], True),
        (1, ["c2", "zz"], False),
        (2, [], None),
    ]
    assert sentences[2].text == "Bonne lecture."
    assert sentences[2].paragraph == "Bonne lecture."
    assert sentences[0].paragraph.startswith("Le chiffre d'affaires 2023")
    veracity = Label.objects.filter(criterion__name="veracity", unit__campaign=campaign)
    assert sorted(veracity.values_list("unit__sentence__position", "value", "stage")) == [
        (0, 1, Stage.IMPORTED),
        (1, 0, Stage.IMPORTED),
    ]
    judged = Judgment.objects.filter(criterion__name="veracity", unit__campaign=campaign)
    assert sorted(judged.values_list("unit__sentence__position", "value")) == [(0, 1), (1, 1)]
    assert summary.labels == 3 and summary.judgments == 3  # plus relevance on the answer


def test_blob_sources_are_parsed_into_the_same_chunks(tmp_path):
    _, from_blob = import_ok(DATA / "blob.jsonl", name="From blob")
    _, from_list = import_ok(write_jsonl(tmp_path / "list.jsonl", RECORDS[:2]), name="From list")
    assert corpus(from_blob) == corpus(from_list)
    assert corpus(from_blob)["sources"][0][1:] == (
        1,
        "c1",
        "Rapport annuel 2023.pdf",
        12,
        RECORDS[0]["sources"][0]["text"],
    )


def test_a_malformed_blob_is_an_error_on_sources(tmp_path):
    path = _jsonl_with(tmp_path, 1, sources="##### [^c1^] #####\nno source line here\n\ntext")
    errors = import_fails(path)
    assert [(e.row, e.field) for e in errors] == [(2, "sources")]
    assert "Source:" in errors[0].message


def test_a_blob_in_a_csv_cell_is_parsed(tmp_path):
    path = tmp_path / "blob.csv"
    record = json.loads((DATA / "blob.jsonl").read_text(encoding="utf-8").splitlines()[0])
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["question_id", "question", "theme", "answer", "sources"])
        writer.writerow(
            [record["question_id"], record["question"], record["theme"], record["answer"], record["sources"]]
        )
    summary, campaign = import_ok(path)
    assert summary.chunks_created == 3
    assert list(
        Answer.objects.get(campaign=campaign).sources.values_list("chunk__external_id", flat=True)
    ) == [
        "c1",
        "c2",
        "c3",
    ]


def pooled(monkeypatch, *, cpus: int, chunk: int | None = None) -> None:
    """Worker processes from two jobs on, ``cpus`` of them, chunks of ``chunk`` jobs."""
    monkeypatch.setattr("annotation.ingest.analysis.POOL_MIN_ANSWERS", 2)
    monkeypatch.setattr("annotation.ingest.analysis.os.cpu_count", lambda: cpus)
    if chunk is not None:
        monkeypatch.setattr("annotation.ingest.analysis.CHUNK", chunk)


def test_worker_processes_analyse_like_this_process(monkeypatch):
    jobs = [TextJob(answer=r["answer"]) for r in RECORDS * 3]
    answer = "La société a signé un bail commercial.\n\nLe loyer annuel augmente de trois pour cent [^c1^]."
    jobs.append(
        TextJob(answer=answer, sentences=(("Le loyer annuel augmente de trois pour cent [^c1^].", None),))
    )
    expected = [analyse(job, citation_pattern=PATTERN) for job in jobs]
    pooled(monkeypatch, cpus=3, chunk=5)
    with Analysis(jobs=jobs, citation_pattern=PATTERN) as analysis:
        results = list(analysis)
        assert analysis._pool is not None
        workers = list(analysis._pool._processes)  # type: ignore[attr-defined]
        # The text work yields the CPU to the importing process and its database backend.
        assert {os.getpriority(os.PRIO_PROCESS, pid) for pid in workers} == {
            min(19, os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICENESS)
        }
    assert analysis.workers == 3
    assert analysis.inline == 0
    assert results == expected
    sentence = "Le loyer annuel augmente de trois pour cent [^c1^]."
    assert expected[-1] == ("fr", [(sentence, sentence, 1, ["c1"])])


def test_worker_processes_that_die_leave_their_work_to_this_process(monkeypatch):
    import signal

    jobs = [TextJob(answer=r["answer"]) for r in RECORDS * 10]
    expected = [analyse(job, citation_pattern=PATTERN) for job in jobs]
    pooled(monkeypatch, cpus=2, chunk=3)
    with Analysis(jobs=jobs, citation_pattern=PATTERN) as analysis:
        results = iter(analysis)
        first = next(results)
        assert analysis._pool is not None
        for pid in list(analysis._pool._processes):  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
        rest = list(results)
    assert [first, *rest] == expected
    # The chunks the workers held when they died, and the rest, were done here.
    assert 0 < analysis.inline <= len(jobs) - 1
    assert analysis.done == len(jobs)


def test_worker_processes_give_the_same_corpus_as_working_inline(monkeypatch):
    _, inline = import_ok(JSONL, name="Inline")
    pooled(monkeypatch, cpus=3)
    _, in_workers = import_ok(JSONL, name="Pooled")
    assert corpus(in_workers) == corpus(inline)


def test_a_failed_check_stops_the_worker_processes(monkeypatch):
    import_ok(JSONL)
    pooled(monkeypatch, cpus=3)
    errors = import_fails(JSONL)
    assert {e.field for e in errors} == {"answer_id"}


def test_progress_is_reported_up_to_the_total(tmp_path, monkeypatch):
    monkeypatch.setattr("annotation.ingest.load.WRITE_BATCH", 3)
    records = [dict(RECORDS[0], question_id=f"Q{i}", labels={}) for i in range(7)]
    calls = []
    import_ok(
        write_jsonl(tmp_path / "seven.jsonl", records),
        progress=lambda done, total: calls.append((done, total)),
    )
    # The first batch is a fifth of the others (at least one answer).
    assert calls == [(1, 7), (4, 7), (7, 7)]


def test_language_is_detected_on_a_bounded_prefix_without_citations():
    text = "Le chiffre d'affaires progresse [^4ca822^]. " * 100
    sample = language_sample(text=text, citation_pattern=PATTERN)
    assert "4ca822" not in sample
    assert len(sample) <= LANGUAGE_SAMPLE_CHARS


# Sharing across records and files


def test_chunks_are_shared_by_id_within_the_campaign(tmp_path):
    import_ok(JSONL)
    second = [
        dict(
            RECORDS[0],
            question_id="Q9",
            question="Autre question ?",
            answer="Autre réponse [^c1^].",
            labels={},
        )
    ]
    summary, campaign = import_ok(write_jsonl(tmp_path / "more.jsonl", second))
    assert summary.chunks_created == 0
    assert SourceChunk.objects.filter(campaign=campaign, external_id="c1").count() == 1
    chunk = SourceChunk.objects.get(campaign=campaign, external_id="c1")
    assert AnswerSource.objects.filter(chunk=chunk).count() == 4


def test_a_chunk_with_another_title_is_a_warning_and_keeps_the_first(tmp_path):
    records = [dict(r) for r in RECORDS[:2]]
    records[1]["sources"] = [dict(records[1]["sources"][0], title="Autre titre.pdf")]
    summary, campaign = import_ok(write_jsonl(tmp_path / "titles.jsonl", records))
    assert SourceChunk.objects.get(campaign=campaign, external_id="c1").title == "Rapport annuel 2023.pdf"
    assert any("c1" in w and "row 1" in w for w in summary.warnings)


def test_a_chunk_already_stored_with_another_text_gets_a_row_of_its_own(tmp_path):
    import_ok(JSONL)
    record = dict(RECORDS[0], question_id="Q9", question="Autre ?", labels={})
    record["sources"] = [dict(RECORDS[0]["sources"][0], text="Un autre texte.")]
    summary, campaign = import_ok(write_jsonl(tmp_path / "variant.jsonl", [record]))
    assert summary.chunks_created == 1
    c1 = SourceChunk.objects.filter(campaign=campaign, external_id="c1")
    assert set(c1.values_list("text", flat=True)) == {RECORDS[0]["sources"][0]["text"], "Un autre texte."}
    assert any("1 chunk id came with several texts" in w and "in the campaign" in w for w in summary.warnings)
    new = Answer.objects.get(campaign=campaign, external_id="Q9-1")
    assert new.sources.get().chunk.text == "Un autre texte."


def test_a_question_already_stored_with_another_theme_is_an_error(tmp_path):
    import_ok(JSONL)
    record = dict(RECORDS[0], answer_id="new", theme="Juridique", labels={})
    errors = import_fails(write_jsonl(tmp_path / "theme.jsonl", [record]))
    assert [(e.row, e.field) for e in errors] == [(1, "theme")]


def test_an_answer_id_already_in_the_campaign_is_an_error_without_update():
    import_ok(JSONL)
    errors = import_fails(JSONL)
    assert [(e.row, e.field) for e in errors] == [
        (1, "answer_id"),
        (2, "answer_id"),
        (3, "answer_id"),
        (4, "answer_id"),
    ]
    assert "update" in errors[0].message


# --update


def test_update_replaces_the_answer_and_says_what_was_deleted(tmp_path):
    import_ok(JSONL)
    changed = [dict(r) for r in RECORDS]
    changed[0] = dict(changed[0], answer="Réponse corrigée [^c2^]. Deuxième phrase.", labels={})
    summary, campaign = import_ok(write_jsonl(tmp_path / "fixed.jsonl", changed), update=True)
    assert (summary.answers_created, summary.answers_replaced) == (0, 4)
    answer = Answer.objects.get(campaign=campaign, external_id="Q1-1")
    assert answer.text.startswith("Réponse corrigée")
    assert [s.text for s in answer.sentences.order_by("position")] == [
        s.text for s in split_sentences(answer.text, citation_pattern=PATTERN)
    ]
    assert Unit.objects.filter(answer=answer, level=Level.SENTENCE).count() == answer.sentences.count()
    # Q1-1 lost its labels (the file gives none now); the others got theirs back.
    assert not Label.objects.filter(unit__answer=answer).exists()
    assert not Judgment.objects.filter(unit__answer=answer).exists()
    assert Label.objects.filter(unit__campaign=campaign).count() == 1
    assert (summary.deleted_labels, summary.deleted_judgments) == (2, 3)
    assert any("lost 2 earlier imported labels and 3 judgments" in line for line in summary.lines())
    assert Answer.objects.filter(campaign=campaign).count() == 4


def test_update_is_refused_for_an_answer_people_labelled_in_the_app(tmp_path):
    _, campaign = import_ok(JSONL)
    unit = Unit.objects.get(answer__external_id="Q1-2", level=Level.ANSWER)
    Label.objects.create(
        unit=unit,
        criterion=Criterion.objects.get(campaign=campaign, name="relevance"),
        user=make_user(),
        stage=Stage.LABEL,
        value=1,
    )
    errors = import_fails(JSONL, update=True)
    assert [(e.row, e.field) for e in errors] == [(2, "answer_id")]
    assert "labels made in the app" in errors[0].message


def test_update_is_refused_for_an_answer_in_a_drawn_sample():
    _, campaign = import_ok(JSONL)
    unit = Unit.objects.get(answer__external_id="Q2-1", level=Level.ANSWER)
    sample = Sample.objects.create(
        campaign=campaign, criterion=Criterion.objects.get(campaign=campaign, name="relevance")
    )
    SampleItem.objects.create(
        sample=sample, unit=unit, theme="RH", cluster=0, cluster_size=1, inclusion_probability=1.0
    )
    errors = import_fails(JSONL, update=True)
    assert [(e.row, e.field) for e in errors] == [(3, "answer_id")]


# Validation: every error names file, row and field; nothing is written.


def _jsonl_with(tmp_path: Path, index: int, **changes) -> Path:
    records = [dict(r) for r in RECORDS]
    records[index].update(changes)
    for key in [k for k, v in changes.items() if v is _DROP]:
        del records[index][key]
    return write_jsonl(tmp_path / "bad.jsonl", records)


_DROP = object()


@pytest.mark.parametrize(
    ("index", "changes", "field"),
    [
        (1, {"theme": _DROP}, "theme"),
        (1, {"question_id": "  "}, "question_id"),
        (2, {"answer": "   "}, "answer"),
        (2, {"answer": 12.5}, "answer"),
        (0, {"labels": {"relevance": {"human": 2}}}, "labels.relevance.human"),
        (0, {"labels": {"relevance": {"human": True}}}, "labels.relevance.human"),
        (0, {"labels": {"relevance": {"gpt": 1}}}, "labels.relevance.gpt"),
        (0, {"labels": {"relevance": 1}}, "labels.relevance"),
        (0, {"labels": {"politeness": {"human": 1}}}, "labels.politeness"),
        (0, {"labels": {"veracity": {"human": 1}}}, "labels.veracity"),
        (3, {"sources": 5}, "sources"),
        (3, {"sources": _DROP}, "sources"),
        (3, {"sources": ["c1"]}, "sources[1]"),
        (3, {"sources": [{"title": "x", "text": "y"}]}, "sources[1].id"),
        (3, {"sources": [{"id": "h1"}]}, "sources[1].text"),
        (3, {"sources": [dict(RECORDS[3]["sources"][0], page="xii")]}, "sources[1].page"),
        (3, {"sources": [RECORDS[3]["sources"][0]] * 2}, "sources[2].id"),
        (3, {"repetition": 0}, "repetition"),
        (3, {"difficulty": "x" * 51}, "difficulty"),
        (3, {"sentences": []}, "sentences"),
        (3, {"sentences": [{"text": ""}]}, "sentences[1].text"),
        (
            3,
            {"sentences": [{"text": "Je ne trouve pas.", "labels": {"veracity": {"human": 5}}}]},
            "sentences[1].labels.veracity.human",
        ),
        (
            3,
            {"sentences": [{"text": "Je ne trouve pas.", "labels": {"relevance": {"human": 1}}}]},
            "sentences[1].labels.relevance",
        ),
    ],
)
def test_a_bad_field_names_file_row_and_field_and_writes_nothing(tmp_path, index, changes, field):
    path = _jsonl_with(tmp_path, index, **changes)
    errors = import_fails(path)
    assert [(e.file, e.row, e.field) for e in errors] == [(str(path), index + 1, field)]


def test_a_duplicate_answer_id_names_both_rows(tmp_path):
    path = _jsonl_with(tmp_path, 3, answer_id="Q1-1")
    errors = import_fails(path)
    assert [(e.row, e.field) for e in errors] == [(4, "answer_id")]
    assert "row 1" in errors[0].message


def test_a_chunk_with_two_texts_in_one_file_is_a_warning_naming_both_rows(tmp_path):
    path = _jsonl_with(
        tmp_path, 2, sources=[RECORDS[2]["sources"][0], dict(RECORDS[0]["sources"][0], text="Autre.")]
    )
    summary, campaign = import_ok(path)
    assert [w for w in summary.warnings if "several texts" in w] == [
        f"{path}: 1 chunk id came with several texts (such as 'c1': rows 1 and 3); "
        "each answer keeps the text it was given"
    ]
    assert SourceChunk.objects.filter(campaign=campaign, external_id="c1").count() == 2


def test_a_question_with_two_texts_in_one_file_is_an_error(tmp_path):
    path = _jsonl_with(tmp_path, 1, question="Une autre question ?")
    errors = import_fails(path)
    assert [(e.row, e.field) for e in errors] == [(2, "question")]


def test_invalid_json_on_a_line_names_the_line(tmp_path):
    path = tmp_path / "broken.jsonl"
    lines = JSONL.read_text(encoding="utf-8").splitlines()
    lines.insert(2, '{"question_id": "Q3", "answer": ')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    errors = import_fails(path)
    assert [(e.row, e.field) for e in errors] == [(3, "json")]


def test_blank_lines_keep_the_line_numbers(tmp_path):
    path = tmp_path / "gaps.jsonl"
    lines = JSONL.read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[3])
    bad["answer"] = ""
    path.write_text("\n\n".join([*lines[:3], json.dumps(bad)]) + "\n", encoding="utf-8")
    errors = import_fails(path)
    assert [(e.row, e.field) for e in errors] == [(7, "answer")]


def test_every_bad_row_is_reported_up_to_the_limit(tmp_path):
    records = [
        dict(RECORDS[0], question_id=f"Q{i}", answer="", labels={}) for i in range(ingest.MAX_ERRORS + 7)
    ]
    with pytest.raises(ingest.ImportFailed) as failure:
        import_file(path=write_jsonl(tmp_path / "many.jsonl", records), campaign_name="Import")
    assert len(failure.value.errors) == ingest.MAX_ERRORS
    assert failure.value.more == 7
    assert [e.row for e in failure.value.errors[:3]] == [1, 2, 3]
    assert "... and 7 more errors" in str(failure.value)


def test_a_json_record_is_numbered_from_one(tmp_path):
    records = [dict(r) for r in RECORDS]
    records[1]["answer"] = ""
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    assert [(e.row, e.field) for e in import_fails(path)] == [(2, "answer")]


def test_a_json_file_that_is_not_a_list_is_an_error(tmp_path):
    path = tmp_path / "answers.json"
    path.write_text(json.dumps({"records": RECORDS}), encoding="utf-8")
    assert [(e.row, e.field) for e in import_fails(path)] == [(None, "json")]


def test_a_csv_row_counts_the_header_as_row_one(tmp_path):
    path = tmp_path / "answers.csv"
    with (DATA / "answers.csv").open(encoding="utf-8-sig", newline="") as source:
        rows = list(csv.reader(source, delimiter=";"))
    rows[2][6] = "oui"  # human:relevance of the second answer
    with path.open("w", encoding="utf-8", newline="") as out:
        csv.writer(out, delimiter=";").writerows(rows)
    errors = import_fails(path)
    assert [(e.file, e.row, e.field) for e in errors] == [(str(path), 3, "human:relevance")]


def test_an_xlsx_row_counts_the_header_as_row_one(tmp_path):
    records = [dict(r) for r in RECORDS]
    records[2] = dict(records[2], theme=None)
    errors = import_fails(write_xlsx(tmp_path / "answers.xlsx", records))
    assert [(e.row, e.field) for e in errors] == [(4, "theme")]


def test_a_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(
        (DATA / "answers.csv").read_text(encoding="utf-8-sig").encode("latin-1", errors="replace")
    )
    errors = import_fails(path)
    assert [(e.row, e.field) for e in errors] == [(2, "encoding")]
    assert "UTF-8" in errors[0].message


def test_an_unknown_extension_is_refused(tmp_path):
    path = tmp_path / "answers.txt"
    shutil.copy(JSONL, path)
    errors = import_fails(path)
    assert [(e.row, e.field) for e in errors] == [(None, "file")]
    assert ".jsonl" in errors[0].message


def test_a_file_over_the_size_limit_is_refused(tmp_path, settings):
    settings.IMPORT_MAX_BYTES = 1024
    errors = import_fails(JSONL)
    assert [(e.row, e.field) for e in errors] == [(None, "file")]
    assert "IMPORT_MAX_BYTES" in errors[0].message


def test_a_file_that_is_not_a_workbook_is_refused(tmp_path):
    path = tmp_path / "answers.xlsx"
    shutil.copy(JSONL, path)
    assert [(e.row, e.field) for e in import_fails(path)] == [(None, "file")]


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n", encoding="utf-8")
    assert [(e.row, e.field) for e in import_fails(path)] == [(None, "file")]


def test_a_blank_campaign_name_is_refused():
    errors = import_fails(JSONL, name="  ")
    assert [(e.row, e.field) for e in errors] == [(None, "campaign")]


def test_checking_a_file_and_reading_its_records_touch_no_database(django_assert_num_queries):
    with django_assert_num_queries(0):
        records = list(ingest.check_file(path=JSONL).records())
    assert [r.answer_id for r in records] == ["Q1-1", "Q1-2", "Q2-1", "Q2-2"]


# One chunk id, several texts (anonymisation, re-chunking, OCR): each answer keeps its own


def _variant_records() -> list[dict]:
    """Two answers to two questions, both citing chunk 'k7', each given another text for it."""
    source = {"id": "k7", "title": "Bail.pdf", "page": 3}
    return [
        {
            "question_id": "QA",
            "question": "Quel est le loyer annuel ?",
            "theme": "Immobilier",
            "answer": "Le loyer annuel est de 120 000 € [^k7^].",
            "sources": [dict(source, text="Loyer annuel : 120 000 € hors taxes (société [ANON-1]).")],
        },
        {
            "question_id": "QB",
            "question": "Qui est le bailleur ?",
            "theme": "Immobilier",
            "answer": "Le bailleur est la société [ANON-2] [^k7^].",
            "sources": [dict(source, text="Loyer annuel : 120 000 € hors taxes (société [ANON-2]).")],
        },
    ]


def _shown_to_annotator_and_judge(campaign: Campaign, answer_id: str) -> tuple[list[str], str]:
    """The cited chunk texts the annotator page shows for the answer's first sentence, and the
    text of the veracity prompt the judge would be sent for the answer."""
    from annotation.workbench import unit_view
    from evaluation.judge import inputs, runs

    unit = Unit.objects.get(
        answer__external_id=answer_id, answer__campaign=campaign, sentence__position=0, level=Level.SENTENCE
    )
    shown = [source.chunk.text for source in unit_view(unit=unit, campaign=campaign).cited]
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    judge = runs.get_or_create_judge(campaign=campaign, name=runs.LEXICAL)
    run = runs.create_run(criterion=veracity, judge=judge)
    batch = run.batches.get(answer__external_id=answer_id)
    data = inputs.load_batches(batch_ids=[batch.pk], criterion=veracity)[batch.pk]
    messages = inputs.build_messages(data=data, criterion=veracity, judge=judge)
    run.delete()
    return shown, "\n".join(str(message["content"]) for message in messages)


def test_one_chunk_id_with_two_texts_in_two_answers_keeps_each_answer_s_own_text(tmp_path):
    first, second = _variant_records()
    summary, campaign = import_ok(write_jsonl(tmp_path / "variants.jsonl", [first, second]))
    assert summary.answers_created == 2
    assert summary.chunks_created == 2
    assert [w for w in summary.warnings if "several texts" in w] == [
        f"{tmp_path / 'variants.jsonl'}: 1 chunk id came with several texts (such as 'k7': rows 1 and 2); "
        "each answer keeps the text it was given"
    ]
    for record, answer_id in ((first, "QA-1"), (second, "QB-1")):
        own, other = (
            record["sources"][0]["text"],
            ({first["sources"][0]["text"], second["sources"][0]["text"]}),
        )
        other = (other - {own}).pop()
        shown, prompt = _shown_to_annotator_and_judge(campaign, answer_id)
        assert shown == [own]
        assert own in prompt and other not in prompt
    # The citation still resolves by id within each answer's own sources.
    assert list(
        Sentence.objects.filter(answer__campaign=campaign).values_list("citations_ok", flat=True)
    ) == [
        True,
        True,
    ]


def test_identical_texts_of_an_id_share_one_chunk_row(tmp_path):
    first, second = _variant_records()
    second["sources"] = first["sources"]
    summary, campaign = import_ok(write_jsonl(tmp_path / "same.jsonl", [first, second]))
    assert summary.chunks_created == 1
    assert not [w for w in summary.warnings if "several texts" in w]
    assert SourceChunk.objects.filter(campaign=campaign, external_id="k7").count() == 1


def test_update_with_a_chunk_id_carrying_two_texts_keeps_each_answer_s_text(tmp_path):
    first, second = _variant_records()
    import_ok(write_jsonl(tmp_path / "v1.jsonl", [first, second]))
    # The second answer comes back with a third text for k7; the first answer is unchanged.
    second = dict(second, sources=[dict(second["sources"][0], text="Loyer : 120 000 € HT ([ANON-3]).")])
    summary, campaign = import_ok(write_jsonl(tmp_path / "v2.jsonl", [first, second]), update=True)
    assert (summary.answers_created, summary.answers_replaced, summary.chunks_created) == (0, 2, 1)
    assert any("1 chunk id came with several texts" in w for w in summary.warnings)
    assert _shown_to_annotator_and_judge(campaign, "QA-1")[0] == [first["sources"][0]["text"]]
    assert _shown_to_annotator_and_judge(campaign, "QB-1")[0] == ["Loyer : 120 000 € HT ([ANON-3])."]
    # The text no answer was given any more is gone; the two in use stay.
    assert set(
        SourceChunk.objects.filter(campaign=campaign, external_id="k7").values_list("text", flat=True)
    ) == {first["sources"][0]["text"], "Loyer : 120 000 € HT ([ANON-3])."}


def test_a_stored_chunk_s_text_hash_follows_its_text(db):
    from annotation.corpus.sources import chunk_text_hash

    campaign = Campaign.objects.create(name="Hashes", slug="hashes")
    chunk = SourceChunk.objects.create(campaign=campaign, external_id="k1", text="Un.")
    chunk.text = "Deux."
    chunk.save(update_fields=["text"])
    chunk.refresh_from_db()
    assert chunk.text_hash == chunk_text_hash("Deux.") != chunk_text_hash("Un.")


# Value mappings


def _vocabulary_records() -> list[dict]:
    base = {"Réponse": "Le loyer est de 10 k€ [^c1^].", "sources": [{"id": "c1", "text": "Loyer : 10 k€."}]}
    return [
        dict(
            base, **{"QID": "Q1", "Question": "Le loyer ?", "Thème": "Financial", "Niveau": "intermédiaire"}
        ),
        dict(base, **{"QID": "Q2", "Question": "Les RTT ?", "Thème": "Human resources", "Niveau": "facile"}),
        dict(base, **{"QID": "Q3", "Question": "Ton avis politique ?", "Thème": "Financial"}),
        dict(base, **{"QID": "Q4", "Question": "Et la météo ?", "Thème": "Other", "Niveau": ""}),
    ]


VOCABULARY_MAPPING = {
    "columns": {
        "QID": "question_id",
        "Question": "question",
        "Thème": "theme",
        "Niveau": "difficulty",
        "Réponse": "answer",
    },
    "values": {
        "theme": {"Financial": "Finance", "Human resources": "RH"},
        "difficulty": {"intermédiaire": "intermediate", "facile": "simple", "": "inappropriate"},
    },
}


def test_a_mapping_translates_themes_difficulties_and_what_an_empty_difficulty_means(tmp_path):
    mapping = tmp_path / "vocabulary.json"
    mapping.write_text(json.dumps(VOCABULARY_MAPPING, ensure_ascii=False), encoding="utf-8")
    _, campaign = import_ok(write_jsonl(tmp_path / "own.jsonl", _vocabulary_records()), mapping=mapping)
    assert sorted(
        Question.objects.filter(campaign=campaign).values_list("external_id", "theme", "difficulty")
    ) == [
        ("Q1", "Finance", "intermediate"),
        ("Q2", "RH", "simple"),
        ("Q3", "Finance", "inappropriate"),
        ("Q4", "Other", "inappropriate"),
    ]
    assert set(Unit.objects.filter(campaign=campaign).values_list("theme", flat=True)) == {
        "Finance",
        "RH",
        "Other",
    }


def test_a_value_mapping_can_give_a_missing_theme(tmp_path):
    records = [dict(r) for r in RECORDS]
    for record in records:
        del record["theme"]
    _, campaign = import_ok(
        write_jsonl(tmp_path / "no-theme.jsonl", records), mapping={"values": {"theme": {"": "Général"}}}
    )
    assert set(Question.objects.filter(campaign=campaign).values_list("theme", flat=True)) == {"Général"}


def test_values_a_mapping_does_not_list_are_kept(tmp_path):
    _, campaign = import_ok(JSONL, mapping={"values": {"theme": {"Juridique": "Legal"}}})
    assert set(Question.objects.filter(campaign=campaign).values_list("theme", flat=True)) == {
        r["theme"] for r in RECORDS
    }


@pytest.mark.parametrize(
    ("mapping", "key", "message"),
    [
        ({"columns": {"A": "question_id"}, "value": {}}, "value", "unknown key"),
        ({"values": {"answer": {"x": "y"}}}, "values['answer']", "only the values of theme and difficulty"),
        ({"values": {"theme": ["Finance"]}}, "values['theme']", "must be an object"),
        ({"values": {"theme": {"Financial": 1}}}, "values['theme']['Financial']", "non-empty string"),
        ({"values": {"difficulty": {"": ""}}}, "values['difficulty']['']", "non-empty string"),
        ({"columns": {"A": ""}, "values": {}}, "columns['A']", "non-empty strings"),
        ({"values": []}, "values", "must be an object"),
        ({"Question ID": 3}, "mapping['Question ID']", "non-empty strings"),
    ],
)
def test_a_bad_mapping_file_names_the_file_and_the_key_and_writes_nothing(tmp_path, mapping, key, message):
    path = tmp_path / "map.json"
    path.write_text(json.dumps(mapping), encoding="utf-8")
    errors = import_fails(JSONL, mapping=path)
    assert [(e.file, e.row, e.field) for e in errors] == [(str(path), None, key)]
    assert message in errors[0].message


def test_a_mapped_value_too_long_for_its_column_is_an_error(tmp_path):
    errors = import_fails(JSONL, mapping={"values": {"difficulty": {"simple": "x" * 51}}})
    assert {(e.row, e.field) for e in errors} == {(1, "difficulty"), (2, "difficulty")}
    assert "mapped to a value longer than 50" in errors[0].message


# Hostile nesting and big files


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_deeply_nested_json_on_a_jsonl_line_names_file_row_and_field(tmp_path):
    path = tmp_path / "deep.jsonl"
    lines = [json.dumps(RECORDS[0]), '{"question_id": "Q9", "labels": ' + _deep(100_000) + "}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    errors = import_fails(path)
    assert [(e.file, e.row, e.field) for e in errors] == [(str(path), 2, "json")]
    assert "nested too deeply" in errors[0].message


def test_nesting_the_decoder_reads_but_no_record_needs_is_refused_on_its_field(tmp_path):
    record = dict(RECORDS[0], labels={"relevance": {"human": json.loads(_deep(200))}})
    errors = import_fails(write_jsonl(tmp_path / "deep.jsonl", [record]))
    assert [(e.row, e.field) for e in errors] == [(1, "labels")]
    assert "nested too deeply" in errors[0].message


def test_deeply_nested_json_in_a_json_list_names_the_record(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(
        "[" + json.dumps(RECORDS[0]) + ",\n" + '{"sources": ' + _deep(100_000) + "}]", encoding="utf-8"
    )
    errors = import_fails(path)
    assert [(e.file, e.row, e.field) for e in errors] == [(str(path), 2, "json")]
    assert "nested too deeply" in errors[0].message and "(line 2)" in errors[0].message


def test_deeply_nested_json_in_a_csv_cell_names_row_and_column(tmp_path):
    path = tmp_path / "deep.csv"
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["question_id", "question", "theme", "answer", "sources", "labels"])
        # 2,000 levels in 4 kB: past the JSON decoder's recursion limit, within csv's cell limit.
        writer.writerow(["Q1", "Le loyer ?", "Finance", "Dix k€.", "[]", _deep(2000)])
        writer.writerow(["Q2", "Le loyer ?", "Finance", "Dix k€.", _deep(2000), ""])
    errors = import_fails(path)
    assert [(e.row, e.field) for e in errors] == [(2, "labels"), (3, "sources")]
    assert all("nested too deeply" in e.message for e in errors)


def test_a_jsonl_file_is_read_a_line_at_a_time(tmp_path):
    from annotation.ingest.errors import ErrorLog
    from annotation.ingest.readers import read_rows

    path = tmp_path / "stream.jsonl"
    path.write_bytes(JSONL.read_bytes() + b'{"answer": "caf\xe9"}\n')
    rows = read_rows(path=path, name="stream.jsonl", errors=ErrorLog(file="stream.jsonl"), max_bytes=10**6)
    # The first rows come before the bad bytes of line 5 are even read.
    assert [next(rows).row for _ in range(4)] == [1, 2, 3, 4]
    with pytest.raises(ingest.ImportFailed) as failure:
        next(rows)
    assert [(e.row, e.field) for e in failure.value.errors] == [(5, "encoding")]


def test_a_csv_file_is_read_a_row_at_a_time_with_quoted_line_breaks(tmp_path):
    from annotation.ingest.errors import ErrorLog
    from annotation.ingest.readers import read_rows

    path = tmp_path / "stream.csv"
    path.write_bytes(b'question_id;answer\nQ1;"Ligne un.\nLigne deux."\nQ2;Trois.\n\xff;x\n')
    rows = read_rows(path=path, name="stream.csv", errors=ErrorLog(file="stream.csv"), max_bytes=10**6)
    first, second = next(rows), next(rows)
    assert (first.row, first.data) == (2, {"question_id": "Q1", "answer": "Ligne un.\nLigne deux."})
    assert second.data == {"question_id": "Q2", "answer": "Trois."}
    with pytest.raises(ingest.ImportFailed) as failure:
        next(rows)
    assert [(e.row, e.field) for e in failure.value.errors] == [(5, "encoding")]


# Two passes: everything checked while streaming, then the file read again and written


def _numbered_records(count: int) -> list[dict]:
    return [dict(RECORDS[0], question_id=f"Q{i}", labels={}) for i in range(1, count + 1)]


def test_a_bad_last_row_writes_nothing_even_with_many_batches(tmp_path, monkeypatch):
    monkeypatch.setattr("annotation.ingest.load.WRITE_BATCH", 2)
    records = _numbered_records(7)
    records[-1]["answer"] = ""
    path = write_jsonl(tmp_path / "last-bad.jsonl", records)
    assert [(e.row, e.field) for e in import_fails(path)] == [(7, "answer")]
    assert not Campaign.objects.exists()


def test_a_last_row_repeating_an_answer_id_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr("annotation.ingest.load.WRITE_BATCH", 2)
    records = _numbered_records(7)
    records[-1]["answer_id"] = "Q1-1"
    errors = import_fails(write_jsonl(tmp_path / "last-duplicate.jsonl", records))
    assert [(e.row, e.field) for e in errors] == [(7, "answer_id")]
    assert "row 1" in errors[0].message


def test_a_question_text_differing_from_an_earlier_row_is_quoted_from_the_file(tmp_path):
    records = _numbered_records(3)
    records[2] = dict(records[2], question_id="Q1", question="Une autre question ?")
    errors = import_fails(write_jsonl(tmp_path / "two-texts.jsonl", records))
    assert [(e.row, e.field) for e in errors] == [(3, "question")]
    assert errors[0].message == (
        f"question 'Q1' has 'Une autre question ?' here but {RECORDS[0]['question']!r} at row 1"
    )


def test_a_question_text_differing_from_the_stored_one_is_quoted_from_the_file(tmp_path):
    import_ok(JSONL)
    record = dict(RECORDS[0], answer_id="new", question="Autre formulation ?", labels={})
    errors = import_fails(write_jsonl(tmp_path / "stored.jsonl", [record]))
    assert [(e.row, e.field) for e in errors] == [(1, "question")]
    assert errors[0].message == (
        f"question 'Q1' is already in the campaign with {RECORDS[0]['question']!r}, not 'Autre formulation ?'"
    )


def _load_after_rewrite(tmp_path, monkeypatch, rewritten: list[dict] | str) -> list[ingest.RowError]:
    """Check a file of 7 answers (pass 1), rewrite it, then load it (pass 2, batches of 2)."""
    monkeypatch.setattr("annotation.ingest.load.WRITE_BATCH", 2)
    path = write_jsonl(tmp_path / "moving.jsonl", _numbered_records(7))
    checked = ingest.check_file(path=path)
    if isinstance(rewritten, str):
        path.write_text(rewritten, encoding="utf-8")
    else:
        write_jsonl(path, rewritten)
    before = table_counts()
    written = []
    with pytest.raises(ingest.ImportFailed) as failure:
        ingest.load_file(
            checked=checked, campaign_name="Moving", progress=lambda done, total: written.append(done)
        )
    assert written, "the change is found after the first batches were written"
    assert table_counts() == before, "the transaction rolls back whatever was written"
    return failure.value.errors


def test_a_row_changed_between_the_passes_rolls_everything_back(tmp_path, monkeypatch):
    records = _numbered_records(7)
    records[5]["answer"] = "Une réponse écrite entre les deux lectures."
    errors = _load_after_rewrite(tmp_path, monkeypatch, records)
    assert [(e.row, e.field) for e in errors] == [(6, "file")]
    assert "changed while it was imported" in errors[0].message


def test_a_row_made_invalid_between_the_passes_is_named_as_usual(tmp_path, monkeypatch):
    records = _numbered_records(7)
    records[5]["answer"] = ""
    errors = _load_after_rewrite(tmp_path, monkeypatch, records)
    assert [(e.row, e.field, e.message) for e in errors] == [(6, "answer", "must not be empty")]


def test_rows_added_or_removed_between_the_passes_are_named(tmp_path, monkeypatch):
    errors = _load_after_rewrite(tmp_path, monkeypatch, _numbered_records(8))
    assert [(e.row, e.field) for e in errors] == [(8, "file")]
    errors = _load_after_rewrite(tmp_path, monkeypatch, _numbered_records(5))
    assert [(e.row, e.field) for e in errors] == [(6, "file")]


def test_a_failed_write_stops_the_reading_and_writes_nothing(tmp_path, monkeypatch):
    import threading

    monkeypatch.setattr("annotation.ingest.load.WRITE_BATCH", 2)
    records = _numbered_records(9)
    for record in records:
        record["labels"] = {"relevance": {"llm": 1}}
    path = write_jsonl(tmp_path / "refused-judge.jsonl", records)
    checked = ingest.check_file(path=path)
    before = table_counts()
    written = []

    def refuse_the_second_batch(campaign, labels):
        written.append(len(labels))
        if len(written) == 2:
            raise ingest.ImportFailed([ingest.RowError(file="x", row=None, field="judge", message="no")])
        return len(labels)

    with pytest.raises(ingest.ImportFailed) as failure:
        ingest.load_file(checked=checked, campaign_name="Refused", judge_labels=refuse_the_second_batch)
    assert [e.field for e in failure.value.errors] == ["judge"]
    assert written == [1, 2], "the batches after the failed one are not written (the first holds one)"
    assert not any(thread.name == "import-read" for thread in threading.enumerate())
    assert table_counts() == before


def test_the_text_analysis_takes_jobs_only_as_far_ahead_as_the_work_in_flight(monkeypatch):
    from annotation.ingest import analysis as analysis_module

    pooled(monkeypatch, cpus=2, chunk=5)
    handed = []

    def jobs():
        for index, record in enumerate(RECORDS * 20):
            handed.append(index)
            yield TextJob(answer=record["answer"])

    with Analysis(jobs=jobs(), count=80, citation_pattern=PATTERN) as analysis:
        results = iter(analysis)
        first = next(results)
        assert analysis.workers == 2
        # Two workers, each with a chunk being done and one waiting: 4 chunks of 5 jobs.
        assert len(handed) <= analysis_module.AHEAD_PER_WORKER * 2 * 5
        rest = list(results)
    assert [first, *rest] == [
        analyse(TextJob(answer=r["answer"]), citation_pattern=PATTERN) for r in RECORDS * 20
    ]


# A .json list is decoded one record at a time


def _json_rows(path: Path) -> list:
    from annotation.ingest.errors import ErrorLog
    from annotation.ingest.readers import read_rows

    return read_rows(path=path, name=path.name, errors=ErrorLog(file=path.name), max_bytes=10**8)


def test_a_json_list_longer_than_one_read_gives_every_record_in_order(tmp_path, monkeypatch):
    monkeypatch.setattr("annotation.ingest.readers.JSON_READ", 64)
    records = [dict(RECORDS[i % 4], question_id=f"Q{i}", note="é" * (i % 7), score=10**i) for i in range(30)]
    path = tmp_path / "long.json"
    path.write_text(
        "\ufeff[\n" + ",\n".join(json.dumps(r, ensure_ascii=False, indent=1) for r in records) + "\n]\n"
    )
    rows = list(_json_rows(path))
    assert [row.row for row in rows] == list(range(1, 31))
    assert [row.data for row in rows] == records


def test_a_json_list_is_read_a_record_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr("annotation.ingest.readers.JSON_READ", 64)
    path = tmp_path / "stream.json"
    big = dict(RECORDS[0], question_id="Q5", note="x" * 20_000)
    head = "[" + ",\n".join(json.dumps(r) for r in [*RECORDS, big]) + ',\n{"answer": "caf'
    path.write_bytes(head.encode() + b'\xe9"}]')
    rows = _json_rows(path)
    # The first records come before the bad byte on line 6 is even read.
    assert [next(rows).row for _ in range(4)] == [1, 2, 3, 4]
    with pytest.raises(ingest.ImportFailed) as failure:
        list(rows)
    assert [(e.row, e.field) for e in failure.value.errors] == [(6, "encoding")]


@pytest.mark.parametrize(
    "text",
    [
        '[{"a": 1},\n {"b": 2}\n {"c": 3}]',
        '[{"a": 1},\n {"b": 2},\n]',
        '[{"a": 1},\n {"b": 2}] x',
        '[{"a": 1},\n {"b": tru}]',
        '[{"a": 1},\n {"b": "x',
        "",
        "  \n",
        '{"records": []',
    ],
)
def test_invalid_json_in_a_json_list_names_the_line_and_column_as_the_decoder_does(
    tmp_path, monkeypatch, text
):
    monkeypatch.setattr("annotation.ingest.readers.JSON_READ", 4)
    path = tmp_path / "broken.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(json.JSONDecodeError) as expected:
        json.loads(text)
    with pytest.raises(ingest.ImportFailed) as failure:
        list(_json_rows(path))
    [error] = failure.value.errors
    exc = expected.value
    assert (error.row, error.field) == (None, "json")
    assert error.message == f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
