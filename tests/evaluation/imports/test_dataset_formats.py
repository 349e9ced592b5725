"""Published datasets import as they come: HAGRID, ALCE's outputs and RAGTruth, read from records
built to each dataset's published schema (tests/data/datasets/), and our own format with a
header that declares a criterion with categories. Each reader names the file, the row and the
dataset's field of what does not fit, writes nothing then, and goes through the campaign
import's limits and rule on control characters."""

from __future__ import annotations

import json
import shutil

import pytest

from annotation import ingest, limits
from annotation.ingest import formats
from annotation.models import Answer, Campaign, Criterion, Label, Question, Sentence, SourceChunk, Unit
from evaluation.imports.campaign_file import import_file, preview_file
from evaluation.models import Judgment
from tests.factories import make_campaign
from tests.ingest_files import DATA, JSONL, table_counts, write_jsonl

pytestmark = pytest.mark.django_db

DATASETS = DATA / "datasets"
HAGRID = DATASETS / "hagrid.jsonl"
ALCE_RESULT = DATASETS / "alce-result.json"
ALCE_HUMAN = DATASETS / "alce-human-eval.json"
RAGTRUTH = DATASETS / "ragtruth.jsonl"
DECLARED = DATASETS / "declared.jsonl"


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def labels_of(campaign: Campaign, name: str) -> list[tuple[str, int | None, int]]:
    """(answer id, sentence position or None, value) of the campaign's labels of ``name``."""
    rows = Label.objects.filter(criterion__campaign=campaign, criterion__name=name).values_list(
        "unit__answer__external_id", "unit__sentence__position", "value"
    )
    return sorted(rows, key=lambda row: (row[0], -1 if row[1] is None else row[1]))


def refused(path, *, name: str, format: str = formats.AUTO, campaign: str = "Refused") -> str:
    before = table_counts()
    with pytest.raises(ingest.ImportFailed) as failure:
        import_file(path=path, campaign_name=campaign, name=name, format=format)
    assert table_counts() == before
    return str(failure.value)


# --- HAGRID -----------------------------------------------------------------------------------


def test_a_hagrid_file_imports_as_it_comes_with_its_criteria_and_citation_pattern():
    summary = import_file(path=HAGRID, campaign_name="HAGRID dev")
    campaign = Campaign.objects.get(name="HAGRID dev")
    assert summary.format == "hagrid"
    assert summary.criteria_created == [
        "attributable",
        "informative",
        "answer_attributable",
        "answer_informative",
    ]
    assert campaign.citation_pattern == r"\[(\d+)\]"
    levels = dict(Criterion.objects.filter(campaign=campaign).values_list("name", "level"))
    assert levels == {
        "attributable": "sentence",
        "informative": "sentence",
        "answer_attributable": "answer",
        "answer_informative": "answer",
        "veracity": "sentence",
        "relevance": "answer",
        "citation_support": "citation",
    }
    # One question per record, one answer per nested answer, ids from the query and its rank.
    assert sorted(Answer.objects.filter(campaign=campaign).values_list("external_id", flat=True)) == [
        "1-1",
        "1-2",
        "7-1",
    ]
    assert (
        Question.objects.get(campaign=campaign, external_id="1").text
        == "What was Octavia E. Butler's first novel?"
    )
    # HAGRID's own split, labels per sentence; null is no label.
    assert labels_of(campaign, "attributable") == [("1-1", 0, 1), ("1-1", 1, 1), ("1-2", 0, 0), ("7-1", 0, 1)]
    assert labels_of(campaign, "informative") == [("1-1", 0, 1), ("1-1", 1, 0), ("1-2", 0, 1), ("7-1", 0, 1)]
    assert labels_of(campaign, "answer_attributable") == [("1-1", None, 1), ("7-1", None, 1)]
    # [2] cites the quote of idx 2; quotes counted from 0 are numbered from 1, as HAGRID cites them.
    first = Sentence.objects.get(answer__external_id="1-1", position=0)
    assert first.cited_ids == ["2"] and first.citations_ok is True
    assert SourceChunk.objects.get(campaign=campaign, external_id="2").title == "3398466#4"
    zero_based = Sentence.objects.get(answer__external_id="7-1", position=0)
    assert zero_based.cited_ids == ["1"] and zero_based.citations_ok is True
    assert SourceChunk.objects.get(campaign=campaign, external_id="1", title="55231#0")
    # Citation units exist for the cited quotes (the app's citation support can be labelled).
    assert Unit.objects.filter(campaign=campaign, level="citation").count() == 4


def test_a_second_hagrid_split_adds_to_the_campaign_and_reuses_its_criteria(tmp_path):
    import_file(path=HAGRID, campaign_name="HAGRID")
    records = lines(HAGRID)
    for record in records:
        record["query_id"] = f"{record['query_id']}-train"
    summary = import_file(path=write_jsonl(tmp_path / "train.jsonl", records), campaign_name="HAGRID")
    assert summary.criteria_created == []
    assert Answer.objects.filter(campaign__name="HAGRID").count() == 6


def test_a_hagrid_record_that_does_not_fit_names_file_row_and_its_own_field(tmp_path):
    records = lines(HAGRID)
    del records[1]["answers"][0]["answer"]
    records[0]["answers"][1]["sentences"][0]["attributable"] = 2
    records[0]["quotes"][1]["idx"] = "two"
    text = refused(write_jsonl(tmp_path / "h.jsonl", records), name="h.jsonl", format="hagrid")
    assert 'h.jsonl:1: quotes[2].idx: must be a whole number, not "two"' in text
    assert "h.jsonl:1: answers[2].sentences[1].attributable: must be 0, 1 or null, not 2" in text
    assert "h.jsonl:2: answers[1].answer: missing" in text


def test_hagrid_goes_through_the_import_limits_naming_the_dataset_field(tmp_path):
    records = lines(HAGRID)
    records[1]["quotes"][0]["text"] = "x" * (limits.SOURCE_TEXT + 1)
    records[0]["query"] = "q" * (limits.QUESTION + 1)
    text = refused(write_jsonl(tmp_path / "long.jsonl", records), name="long.jsonl")
    assert f"long.jsonl:1: query: longer than {limits.QUESTION} characters" in text
    assert f"long.jsonl:2: quotes[1].text: longer than {limits.SOURCE_TEXT} characters" in text


def test_hagrid_texts_go_through_the_rule_on_control_characters(tmp_path):
    records = lines(HAGRID)
    records[0]["answers"][0]["answer"] = "Patternmaster\x00 (1976)\x0c[2]."
    import_file(path=write_jsonl(tmp_path / "nul.jsonl", records), campaign_name="Controls")
    assert Answer.objects.get(external_id="1-1").text == "Patternmaster (1976)\n[2]."


def test_a_campaign_whose_answers_cite_another_way_refuses_a_hagrid_file():
    import_file(path=JSONL, campaign_name="Ours")
    text = refused(HAGRID, name="hagrid.jsonl", campaign="Ours")
    assert "hagrid.jsonl: citation_pattern: the file's citations are written" in text


def test_a_criterion_of_the_same_name_at_another_level_refuses_the_file_once():
    campaign = make_campaign(name="Clash")
    Criterion.objects.create(campaign=campaign, name="attributable", title="Attributable", level="answer")
    text = refused(HAGRID, name="hagrid.jsonl", campaign="Clash")
    assert text.count("criteria.attributable") == 1
    assert "the campaign's criterion 'attributable' has another level than the file declares" in text


# --- ALCE -------------------------------------------------------------------------------------


def test_an_alce_result_imports_its_outputs_docs_and_citations():
    summary = import_file(path=ALCE_RESULT, campaign_name="ALCE asqa")
    campaign = Campaign.objects.get(name="ALCE asqa")
    assert summary.format == "alce" and summary.criteria_created == []
    assert campaign.citation_pattern == r"\[(\d+)\]"
    # The theme is the dataset's name; the empty second sample is passed over, with a warning.
    assert set(Question.objects.filter(campaign=campaign).values_list("theme", flat=True)) == {"asqa"}
    assert sorted(Answer.objects.filter(campaign=campaign).values_list("external_id", flat=True)) == [
        "-7013890438520559398-1",
        "7089015503030534342-1",
    ]
    assert any("1 empty outputs passed over" in warning for warning in summary.warnings)
    second = Sentence.objects.get(answer__external_id="-7013890438520559398-1", position=1)
    assert second.cited_ids == ["2"] and second.citations_ok is True
    assert SourceChunk.objects.get(campaign=campaign, external_id="2").title == "Josef Bican"


def test_alce_human_scores_become_labels_and_its_automatic_scores_judgments():
    summary = import_file(path=ALCE_HUMAN, campaign_name="ALCE human")
    campaign = Campaign.objects.get(name="ALCE human")
    assert summary.criteria_created == ["utility", "sentence_recall", "sentence_precision"]
    utility = Criterion.objects.get(campaign=campaign, name="utility")
    assert utility.kind == "categorical" and [c["key"] for c in utility.categories] == [
        "1",
        "2",
        "3",
        "4",
        "5",
    ]
    answer = "8793099883447006698@asqa-gpt-35-turbo-gtr-shot2-ndoc5-42-azure.json"
    assert labels_of(campaign, "utility") == [(answer, None, 4)]
    assert labels_of(campaign, "sentence_recall") == [(answer, 0, 1), (answer, 1, 1)]
    assert labels_of(campaign, "sentence_precision") == [(answer, 0, 1), (answer, 1, 0)]
    judged = Judgment.objects.filter(criterion__name="sentence_recall").order_by("unit__sentence__position")
    assert [j.value for j in judged] == [1, 0]
    assert Sentence.objects.get(answer__external_id=answer, position=1).cited_ids == ["1", "2"]


def test_an_alce_item_that_does_not_fit_names_its_path(tmp_path):
    data = json.loads(ALCE_RESULT.read_text(encoding="utf-8"))
    data["data"][1]["docs"][0]["text"] = 7
    del data["data"][0]["question"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    text = refused(path, name="r.json")
    assert "r.json:1: data[1].question: missing" in text
    assert "r.json:2: data[2].docs[1].text: must be text, not int" in text


def test_a_utility_score_outside_one_to_five_is_refused(tmp_path):
    data = json.loads(ALCE_HUMAN.read_text(encoding="utf-8"))
    data["asqa"]["asqa-gpt-35-turbo-gtr-shot2-ndoc5-42-azure.json"]["8793099883447006698"][
        "utility_score"
    ] = 6
    path = tmp_path / "h.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    text = refused(path, name="h.json")
    assert "utility_score: must be a whole number from 1 to 5" in text


# --- RAGTruth ---------------------------------------------------------------------------------


def test_ragtruth_spans_become_sentence_labels_by_overlap():
    summary = import_file(path=RAGTRUTH, campaign_name="RAGTruth")
    campaign = Campaign.objects.get(name="RAGTruth")
    assert summary.format == "ragtruth" and summary.criteria_created == ["no_hallucination"]
    question = Question.objects.get(campaign=campaign, external_id="14312")
    assert (question.text, question.theme) == ("how to prepare beets and beet greens", "QA")
    # The span "for ten minutes" lies in the second sentence of response 1472: 0 there only.
    assert labels_of(campaign, "no_hallucination") == [
        ("1472", 0, 1),
        ("1472", 1, 0),
        ("1472", 2, 1),
        ("1473", 0, 1),
        ("1473", 1, 1),
    ]
    assert Sentence.objects.get(answer__external_id="1472", position=1).text.endswith("for ten minutes.")
    passages = SourceChunk.objects.filter(campaign=campaign).order_by("external_id")
    assert [chunk.external_id for chunk in passages] == ["1", "2", "3"]
    assert passages[1].text.startswith("Serve with red wine vinegar")


def test_a_span_touching_a_sentence_only_at_its_edge_does_not_label_it(tmp_path):
    records = lines(RAGTRUTH)
    response = records[1]["response"]
    end_of_first = response.index(".") + 1
    # A span of the space after the first sentence: it shares no character with either sentence.
    records[1]["labels"] = [
        {"start": end_of_first, "end": end_of_first + 1, "label_type": "Evident Baseless Info"}
    ]
    import_file(path=write_jsonl(tmp_path / "edge.jsonl", records), campaign_name="Edge")
    assert [value for _a, _s, value in labels_of(Campaign.objects.get(name="Edge"), "no_hallucination")] == [
        1
    ] * 5


def test_a_response_without_its_source_and_a_span_outside_it_are_refused(tmp_path):
    records = lines(RAGTRUTH)
    records[2]["source_id"] = "999"
    records[1]["labels"][0]["end"] = 10_000
    text = refused(write_jsonl(tmp_path / "r.jsonl", records), name="r.jsonl", format="ragtruth")
    assert "r.jsonl:2: labels[1]: the span" in text and "is not inside the response" in text
    assert "r.jsonl:3: source_id: no source record has source_id '999'" in text


# --- Our format with a header -----------------------------------------------------------------


def test_a_header_declares_a_categorical_criterion_imported_with_its_labels_in_one_step():
    summary = import_file(path=DECLARED, campaign_name="Declared")
    campaign = Campaign.objects.get(name="Declared")
    criterion = Criterion.objects.get(campaign=campaign, name="correctness")
    assert summary.format == "attest" and summary.criteria_created == ["correctness"]
    assert (criterion.kind, criterion.title, criterion.category_groups) == (
        "categorical",
        "Correctness",
        {"acceptable": [2, 3]},
    )
    assert labels_of(campaign, "correctness") == [("FIN-03-1", None, 3), ("RH-01-1", None, 1)]
    assert list(Judgment.objects.filter(criterion=criterion).values_list("value", flat=True)) == [2]
    # The campaign keeps its citation pattern: the header did not set one.
    assert campaign.citation_pattern == Campaign._meta.get_field("citation_pattern").default


def test_the_same_file_imports_again_into_a_campaign_that_has_the_criterion(tmp_path):
    import_file(path=DECLARED, campaign_name="Twice")
    records = lines(DECLARED)
    for record in records[1:]:
        record["question_id"] += "-b"
    summary = import_file(path=write_jsonl(tmp_path / "b.jsonl", records), campaign_name="Twice")
    assert summary.criteria_created == [] and summary.labels == 2


def test_a_header_that_does_not_fit_names_its_field(tmp_path):
    records = lines(DECLARED)
    records[0]["criteria"][0]["categories"][1]["key"] = "s"
    records[0]["criteria"].append({"name": "has space", "title": "", "level": "citation"})
    text = refused(write_jsonl(tmp_path / "d.jsonl", records), name="d.jsonl")
    assert "d.jsonl:1: criteria[1].categories: category 2: key 's' is taken" in text
    assert "d.jsonl:1: criteria[2].name: must be a slug" in text
    assert "d.jsonl:1: criteria[2].title: must not be empty" in text
    assert "d.jsonl:1: criteria[2].level: must be answer or sentence, not 'citation'" in text


def test_a_declared_criterion_that_differs_from_the_campaign_s_is_refused(tmp_path):
    import_file(path=DECLARED, campaign_name="Differs")
    records = lines(DECLARED)
    records[0]["criteria"][0]["categories"][2]["name"] = "correct"
    for record in records[1:]:
        record["question_id"] += "-b"
    text = refused(write_jsonl(tmp_path / "d.jsonl", records), name="d.jsonl", campaign="Differs")
    assert (
        "d.jsonl: criteria.correctness: the campaign's criterion 'correctness' has another categories" in text
    )


def test_a_header_title_another_criterion_has_refuses_the_import_and_writes_nothing(tmp_path):
    records = lines(DECLARED)
    records[0]["criteria"][0]["title"] = "Relevance"
    text = refused(write_jsonl(tmp_path / "d.jsonl", records), name="d.jsonl")
    assert "d.jsonl: criteria.correctness: title:" in text
    assert not Campaign.objects.filter(name="Refused").exists()


def test_the_preview_names_the_criteria_to_create_and_writes_nothing():
    before = table_counts()
    preview = preview_file(path=HAGRID, campaign_name="Preview")
    assert table_counts() == before
    assert preview.format == "hagrid" and preview.citation_pattern == r"\[(\d+)\]"
    assert preview.criteria_new == [
        "attributable",
        "informative",
        "answer_attributable",
        "answer_informative",
    ]
    assert {(row.criterion, row.level, row.human) for row in preview.labels} >= {
        ("attributable", "sentence", 4)
    }


# --- Detection and choice ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (HAGRID, "hagrid"),
        (ALCE_RESULT, "alce"),
        (ALCE_HUMAN, "alce"),
        (RAGTRUTH, "ragtruth"),
        (DECLARED, "attest"),
        (JSONL, "attest"),
    ],
)
def test_the_format_is_detected_from_the_file_s_shape(path, expected):
    assert formats.detect(path=path, name=path.name, max_bytes=10**7) == expected


def test_a_chosen_format_that_does_not_take_the_extension_is_refused(tmp_path):
    path = shutil.copy(HAGRID, tmp_path / "hagrid.csv")
    assert "hagrid.csv: format: the hagrid format is read from .jsonl, .json files, not .csv" in refused(
        path, name="hagrid.csv", format="hagrid"
    )


def test_our_file_read_as_hagrid_names_what_is_missing():
    text = refused(JSONL, name="answers.jsonl", format="hagrid")
    assert "answers.jsonl:1: query_id: missing" in text and "answers.jsonl:1: quotes: missing" in text
