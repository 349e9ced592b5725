"""Round trips with Label Studio and Argilla, refusals that write nothing, Parquet and ARES."""

from __future__ import annotations

import io
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.ingest import ImportFailed
from annotation.models import Criterion, Label, Role, Stage, Unit
from annotation.workflow import final_labels, next_unit, skip, stage_progress
from evaluation.estimates import codec
from evaluation.estimates.report import compute_report
from evaluation.interchange import exporting
from evaluation.interchange.loading import import_labels
from evaluation.interchange.vocabulary import Vocabulary, check_vocabulary, read_vocabulary
from evaluation.models import Judge, Judgment
from tests.categorical import correctness
from tests.factories import make_campaign, make_user, member, sample_units
from tests.interchange_files import (
    ARGILLA_FILE,
    ARGILLA_MAPPING,
    LABEL_STUDIO_FILE,
    LABEL_STUDIO_MAPPING,
    argilla_labels,
    argilla_suggestions,
    fixture_answers,
    label_studio_labels,
    label_studio_predictions,
    load,
    write_json,
)
from tests.judged import judged_campaign

pytestmark = pytest.mark.django_db


def _counts() -> tuple[int, int, int, int]:
    return (
        Label.objects.count(),
        Judgment.objects.count(),
        Judge.objects.count(),
        get_user_model().objects.count(),
    )


def _criteria(campaign) -> list[Criterion]:
    return list(Criterion.objects.filter(campaign=campaign).order_by("name"))


def _label_studio_out(campaign, vocabulary) -> list[dict]:
    stream = io.StringIO()
    exporting.write_label_studio(
        campaign=campaign, criteria=_criteria(campaign), stream=stream, vocabulary=vocabulary
    )
    return json.loads(stream.getvalue())


def _argilla_out(campaign, vocabulary, judge) -> list[dict]:
    stream = io.StringIO()
    exporting.write_argilla(
        campaign=campaign, criteria=_criteria(campaign), stream=stream, vocabulary=vocabulary, judge=judge
    )
    return json.loads(stream.getvalue())


# Round trips


def test_label_studio_round_trip_keeps_every_label_author_time_and_prediction(campaign):
    fixture_answers(campaign)
    vocabulary = check_vocabulary(mapping=LABEL_STUDIO_MAPPING, name="mapping")
    summary = import_labels(
        path=LABEL_STUDIO_FILE, fmt="label-studio", campaign=campaign, vocabulary=vocabulary, judge_name="gpt"
    )
    assert (summary.labels, summary.judgments, summary.skipped) == (5, 3, 1)
    assert sorted(summary.people_created) == ["label-studio-7", "label-studio-9"]

    original = load(LABEL_STUDIO_FILE)
    exported = _label_studio_out(campaign, vocabulary)
    assert label_studio_labels(exported) == label_studio_labels(original)
    assert len(label_studio_labels(original)) == 5
    assert label_studio_predictions(exported) == label_studio_predictions(original)


def test_argilla_round_trip_keeps_every_response_user_time_and_suggestion(campaign):
    fixture_answers(campaign)
    vocabulary = check_vocabulary(mapping=ARGILLA_MAPPING, name="mapping")
    summary = import_labels(
        path=ARGILLA_FILE, fmt="argilla", campaign=campaign, vocabulary=vocabulary, judge_name="gpt"
    )
    assert (summary.labels, summary.judgments, summary.skipped) == (3, 3, 1)

    original = load(ARGILLA_FILE)
    judge = Judge.objects.get(campaign=campaign, name="gpt")
    exported = _argilla_out(campaign, vocabulary, judge)
    assert argilla_labels(exported) == argilla_labels(original)
    assert len(argilla_labels(original)) == 3
    assert argilla_suggestions(exported) == argilla_suggestions(original)


def test_imported_labels_keep_author_times_and_seconds_and_the_latest_is_final(campaign):
    answers = fixture_answers(campaign)
    import_labels(
        path=LABEL_STUDIO_FILE,
        fmt="label-studio",
        campaign=campaign,
        vocabulary=check_vocabulary(mapping=LABEL_STUDIO_MAPPING, name="mapping"),
    )
    unit = Unit.objects.get(answer=answers["ans-1"], sentence__isnull=True)
    relevance = Criterion.objects.get(campaign=campaign, name="relevance")
    rows = list(Label.objects.filter(unit=unit, criterion=relevance).order_by("created_at"))
    assert [(r.user.username, r.value, r.stage, r.seconds_spent) for r in rows] == [
        ("label-studio-7", 1, Stage.IMPORTED, 41.5),
        ("label-studio-9", 0, Stage.IMPORTED, 12.0),
    ]
    assert rows[0].created_at.isoformat() == "2025-03-01T09:15:02.123456+00:00"
    assert rows[0].edited_at.isoformat() == "2025-03-01T09:16:40.000001+00:00"
    # Claire labelled last: her label is the final one.
    assert final_labels(criterion=relevance)[unit.pk] == 0
    created = get_user_model().objects.get(username="label-studio-9")
    assert created.email == "claire@example.org"
    assert not created.is_active and not created.has_usable_password()
    judgment = Judgment.objects.get(unit=unit, judge__name="imported")
    assert judgment.value == 1 and json.loads(judgment.raw_response)["score"] == 0.82


def test_existing_people_are_matched_by_email_and_argilla_user_by_username(campaign):
    fixture_answers(campaign)
    claire = make_user(username="claire")
    claire.email = "Claire@Example.org"
    claire.save()
    make_user(username="0f0c6a5e-3c1b-4f6e-9d7a-1b2c3d4e5f60")
    before = get_user_model().objects.count()
    summary = import_labels(path=LABEL_STUDIO_FILE, fmt="label-studio", campaign=campaign)
    assert summary.people_created == ["label-studio-7"]
    assert Label.objects.filter(user=claire).count() == 2
    summary = import_labels(
        path=ARGILLA_FILE,
        fmt="argilla",
        campaign=campaign,
        vocabulary=check_vocabulary(mapping=ARGILLA_MAPPING, name="m"),
        judge_name="mini",
    )
    assert summary.people_created == ["argilla-9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"]
    assert get_user_model().objects.count() == before + 2


def test_people_of_attest_exported_to_argilla_come_back_as_themselves(campaign, manager, tmp_path):
    fixture_answers(campaign)
    vocabulary = check_vocabulary(mapping=ARGILLA_MAPPING, name="m")
    unit = Unit.objects.filter(campaign=campaign, level="sentence").first()
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    Label.objects.create(unit=unit, criterion=veracity, user=manager, stage=Stage.IMPORTED, value=1)
    exported = _argilla_out(campaign, vocabulary, None)
    # Imported again into a campaign with the same answers: the same person, not a new one.
    other = make_campaign(name="Velmont v2")
    fixture_answers(other)
    path = write_json(tmp_path / "argilla-out.json", exported)
    summary = import_labels(path=path, fmt="argilla", campaign=other, vocabulary=vocabulary)
    assert summary.people_created == [] and summary.labels == 1
    assert Label.objects.get(unit__campaign=other).user == manager


def test_importing_the_same_labels_twice_writes_them_once(campaign, tmp_path):
    fixture_answers(campaign)
    tasks = load(LABEL_STUDIO_FILE)
    for task in tasks:
        task["predictions"] = []
    path = write_json(tmp_path / "labels.json", tasks)
    first = import_labels(path=path, fmt="label-studio", campaign=campaign)
    second = import_labels(path=path, fmt="label-studio", campaign=campaign)
    assert (first.labels, first.already) == (5, 0)
    assert (second.labels, second.already) == (0, 5)
    assert Label.objects.count() == 5


# Refusals: file, record and field named, nothing written


def _refused(campaign, path, fmt="label-studio", **kwargs) -> ImportFailed:
    before = _counts()
    with pytest.raises(ImportFailed) as caught:
        import_labels(path=path, fmt=fmt, campaign=campaign, **kwargs)
    assert _counts() == before
    return caught.value


def test_an_unknown_unit_is_refused_naming_file_record_and_field(campaign, tmp_path):
    fixture_answers(campaign)
    tasks = load(LABEL_STUDIO_FILE)
    tasks[2]["data"]["answer_id"] = "ans-404"
    path = write_json(tmp_path / "ls.json", tasks)
    error = _refused(campaign, path)
    assert [(e.file, e.row, e.field) for e in error.errors] == [(str(path), 3, "annotations[0].result[0]")]
    assert (
        "sentence 1 of answer 'ans-404' is not a unit of 'Velmont due diligence'" in error.errors[0].message
    )


def test_an_unknown_label_value_is_refused_and_names_the_choice(campaign, tmp_path):
    fixture_answers(campaign)
    tasks = load(LABEL_STUDIO_FILE)
    tasks[1]["annotations"][0]["result"][0]["value"]["choices"] = ["maybe"]
    error = _refused(campaign, write_json(tmp_path / "ls.json", tasks))
    assert [(e.row, e.field) for e in error.errors] == [(2, "annotations[0].result[0].value.choices")]
    assert "'maybe' is not a known label value" in error.errors[0].message


def test_another_vocabulary_without_its_mapping_is_refused_and_accepted_with_it(campaign, tmp_path):
    fixture_answers(campaign)
    records = load(ARGILLA_FILE)
    for record in records:
        for responses in record["responses"].values():
            for response in responses:
                if response["value"] == "supported":
                    response["value"] = "Fully supported"
    path = write_json(tmp_path / "ar.json", records)
    error = _refused(
        campaign, path, fmt="argilla", vocabulary=check_vocabulary(mapping=ARGILLA_MAPPING, name="m")
    )
    assert {(e.row, e.field) for e in error.errors} == {
        (1, "responses.faithful[0]"),
        (2, "responses.faithful[0]"),
    } or {(e.row, e.field) for e in error.errors} == {
        (1, "responses.faithful[0].value"),
        (2, "responses.faithful[0].value"),
    }
    mapping = {
        "values": {"Fully supported": 1, **ARGILLA_MAPPING["values"]},
        "criteria": {"faithful": "veracity"},
    }
    summary = import_labels(
        path=path, fmt="argilla", campaign=campaign, vocabulary=check_vocabulary(mapping=mapping, name="m")
    )
    assert summary.labels == 3


def test_an_unknown_criterion_and_a_wrong_level_are_refused(campaign, tmp_path):
    fixture_answers(campaign)
    tasks = load(LABEL_STUDIO_FILE)
    tasks[0]["annotations"][0]["result"][0]["from_name"] = "tone"
    tasks[1]["annotations"][0]["result"][0]["from_name"] = "relevance"
    error = _refused(campaign, write_json(tmp_path / "ls.json", tasks))
    messages = {(e.row, e.field): e.message for e in error.errors}
    assert "'tone' is not a criterion" in messages[(1, "annotations[0].result[0]")]
    assert (
        "at the sentence level, criterion 'relevance' at the answer level"
        in messages[(2, "annotations[0].result[0]")]
    )


def test_malformed_records_name_their_field(campaign, tmp_path):
    fixture_answers(campaign)
    records = load(ARGILLA_FILE)
    del records[0]["responses"]["faithful"][1]["user_id"]
    records[1]["metadata"] = {"sentence": 1}
    error = _refused(
        campaign,
        write_json(tmp_path / "ar.json", records),
        fmt="argilla",
        vocabulary=check_vocabulary(mapping=ARGILLA_MAPPING, name="m"),
    )
    assert [(e.row, e.field) for e in error.errors] == [
        (1, "responses.faithful[1].user_id"),
        (2, "metadata"),
    ]
    assert str(error.errors[0]).startswith(f"{tmp_path / 'ar.json'}:1: responses.faithful[1].user_id: ")


def test_a_file_that_is_not_json_is_refused_as_a_whole(campaign, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("[{", encoding="utf-8")
    error = _refused(campaign, path)
    assert (error.errors[0].row, error.errors[0].field) == (None, "file")


def test_predictions_for_units_the_judge_already_labelled_are_refused(campaign):
    fixture_answers(campaign)
    import_labels(path=LABEL_STUDIO_FILE, fmt="label-studio", campaign=campaign, judge_name="gpt")
    error = _refused(campaign, LABEL_STUDIO_FILE, judge_name="gpt")
    assert {e.field for e in error.errors} == {"predictions[0].result[0]"}
    assert "already has a judgment of judge 'gpt'" in error.errors[0].message


def test_predictions_are_refused_for_a_judge_that_is_not_imported(campaign):
    fixture_answers(campaign)
    Judge.objects.create(campaign=campaign, name="lexical", kind=Judge.Kind.LEXICAL)
    error = _refused(campaign, LABEL_STUDIO_FILE, judge_name="lexical")
    assert (error.errors[0].row, error.errors[0].field) == (None, "judge")


def test_a_bad_mapping_names_its_key():
    with pytest.raises(ImportFailed) as caught:
        check_vocabulary(mapping={"values": {"yes": 2}}, name="map.json")
    assert (caught.value.errors[0].file, caught.value.errors[0].field) == ("map.json", "values.yes")
    assert Vocabulary().value("Unsupported") == 0 and Vocabulary().value(True) is None


# Parquet and ARES


def test_parquet_read_back_by_pandas_equals_the_units_and_labels(campaign, tmp_path):
    fixture_answers(campaign)
    import_labels(path=LABEL_STUDIO_FILE, fmt="label-studio", campaign=campaign, judge_name="gpt")
    path = tmp_path / "units.parquet"
    rows = exporting.write_parquet(campaign=campaign, criteria=_criteria(campaign), sink=str(path))
    frame = pd.read_parquet(path)
    units = Unit.objects.filter(campaign=campaign)
    assert rows == len(frame) == units.count()  # one criterion per level here
    for criterion in _criteria(campaign):
        part = frame[frame["criterion"] == criterion.name].set_index("unit_id")
        expected = final_labels(criterion=criterion)
        got = {int(k): int(v) for k, v in part["human_label"].dropna().items()}
        assert got == expected
        assert set(part.index) == set(units.filter(level=criterion.level).values_list("pk", flat=True))
        for unit_id, labels in part["labels"].items():
            stored = Label.objects.filter(unit_id=unit_id, criterion=criterion).order_by("created_at")
            assert [(x["author"], x["value"], x["seconds_spent"]) for x in labels] == [
                (label.user.username, label.value, label.seconds_spent) for label in stored
            ]
            assert [x["created_at"] for x in labels] == [pd.Timestamp(label.created_at) for label in stored]
    judged = frame[frame["judgments"].map(len) > 0]
    assert len(judged) == 3 and all(j[0]["judge"] == "gpt" for j in judged["judgments"])
    schema = pq.read_schema(path)
    assert str(schema.field("human_label").type) == "int8"


def test_parquet_is_readable_by_the_datasets_library(campaign, tmp_path, monkeypatch):
    # A local file: nothing to ask the hub for.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    datasets = pytest.importorskip("datasets")
    fixture_answers(campaign)
    import_labels(path=LABEL_STUDIO_FILE, fmt="label-studio", campaign=campaign)
    path = tmp_path / "units.parquet"
    exporting.write_parquet(campaign=campaign, criteria=_criteria(campaign), sink=str(path))
    dataset = datasets.Dataset.from_parquet(str(path), cache_dir=str(tmp_path / "cache"))
    assert dataset.num_rows == Unit.objects.filter(campaign=campaign).count()
    rows = {row["unit_id"]: row for row in dataset if row["criterion"] == "relevance"}
    answer_unit = Unit.objects.get(campaign=campaign, answer__external_id="ans-1", level="answer")
    assert rows[answer_unit.pk]["human_label"] == 0
    assert [(x["author"], x["value"]) for x in rows[answer_unit.pk]["labels"]] == [
        ("label-studio-7", 1),
        ("label-studio-9", 0),
    ]


ARES_KEYS = {
    "Label_Column",
    "Evaluation_Set",
    "ARES_Prediction",
    "ARES_Confidence_Interval",
    "Number_of_Examples_in_Evaluation_Set",
    "Ground_Truth_Performance",
    "ARES_LLM_Judge_Accuracy_on_Ground_Truth_Labels",
    "Annotated_Examples_used_for_PPI",
    "Pre_PPI_Score",
}


def test_ares_results_carry_the_reports_ppi_figures(campaign):
    criterion, judge, _ = judged_campaign(campaign)
    report = compute_report(criterion=criterion, judge=judge, alpha=0.05, method="robust")
    data = codec.report_as_json(report=report)
    stream = io.StringIO()
    count = exporting.write_ares(report=report, stream=stream)
    results = json.loads(stream.getvalue())
    assert count == len(results) == len(data["themes"]) + 1
    for result, group in zip(results, [*data["themes"], data["overall"]], strict=True):
        assert set(result) >= ARES_KEYS
        assert result["Label_Column"] == "relevance"
        assert (
            result["ARES_Prediction"]
            == group["ppi_mean"]
            == pytest.approx(report.overall.ppi.mean if group is data["overall"] else group["ppi_mean"])
        )
        assert result["ARES_Confidence_Interval"] == group["ppi_ci"]
        assert result["Ground_Truth_Performance"] == group["human_mean"]
        assert result["Pre_PPI_Score"] == group["judge_mean"]
        assert result["ARES_LLM_Judge_Accuracy_on_Ground_Truth_Labels"] == group["observed_agreement"]
        assert result["Annotated_Examples_used_for_PPI"] == group["n_paired"]
        assert result["Number_of_Examples_in_Evaluation_Set"] == group["n_judge"]
    overall = results[-1]
    assert overall["Evaluation_Set"] == f"{campaign.name} / overall"
    assert (
        overall["ARES_Confidence_Interval"][0]
        < overall["ARES_Prediction"]
        < overall["ARES_Confidence_Interval"][1]
    )
    assert overall["Annotated_Examples_used_for_PPI"] == 14 + 12 + 16


# Commands


def test_commands_import_and_export_both_ways(campaign, tmp_path, capsys):
    fixture_answers(campaign)
    mapping = write_json(tmp_path / "map.json", LABEL_STUDIO_MAPPING)
    call_command(
        "import_labels",
        str(LABEL_STUDIO_FILE),
        "--format",
        "label-studio",
        "--campaign",
        campaign.name,
        "--judge",
        "gpt",
        "--mapping",
        str(mapping),
    )
    assert "labels: 5 imported" in capsys.readouterr().out
    out = tmp_path / "out.json"
    call_command(
        "export_campaign", "--campaign", campaign.name, "--format", "label-studio", "--output", str(out),
        "--mapping", str(mapping),
    )  # fmt: skip
    assert label_studio_labels(load(out)) == label_studio_labels(load(LABEL_STUDIO_FILE))
    for fmt in ("argilla", "parquet", "ares"):
        target = tmp_path / f"out.{fmt}"
        call_command(
            "export_campaign", "--campaign", campaign.name, "--format", fmt, "--output", str(target),
            "--criterion", "relevance",
        )  # fmt: skip
        assert target.stat().st_size > 0
    assert json.loads((tmp_path / "out.ares").read_text())[-1]["Annotated_Examples_used_for_PPI"] == 2


def test_import_command_refuses_with_every_error_and_writes_nothing(campaign, tmp_path):
    fixture_answers(campaign)
    tasks = load(LABEL_STUDIO_FILE)
    tasks[0]["annotations"][0]["completed_by"] = "someone"
    path = write_json(tmp_path / "bad.json", tasks)
    with pytest.raises(CommandError) as caught:
        call_command("import_labels", str(path), "--format", "label-studio", "--campaign", campaign.name)
    assert "1 error; nothing was imported" in str(caught.value)
    assert f"{path}:1: annotations[0].completed_by:" in str(caught.value)
    assert Label.objects.count() == 0


def test_ares_export_needs_a_criterion(campaign, tmp_path):
    with pytest.raises(CommandError, match="needs --criterion"):
        call_command(
            "export_campaign",
            "--campaign",
            campaign.name,
            "--format",
            "ares",
            "--output",
            str(tmp_path / "x"),
        )


def test_a_refused_export_leaves_the_file_it_would_replace_as_it_was(campaign, tmp_path):
    """The export is written beside its file and put in its place once whole: a criterion with
    categories, which Label Studio's and Argilla's files cannot hold, leaves no file behind and an
    existing one untouched."""
    name = correctness(campaign).name
    kept = tmp_path / "kept.json"
    kept.write_text("an earlier export", encoding="utf-8")
    for fmt, target in (("label-studio", kept), ("argilla", tmp_path / "new.json")):
        with pytest.raises(CommandError, match=name):
            call_command(
                "export_campaign", "--campaign", campaign.name, "--format", fmt, "--output", str(target),
                "--criterion", name,
            )  # fmt: skip
    assert kept.read_text(encoding="utf-8") == "an earlier export"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kept.json"]


def test_imported_labels_take_their_units_out_of_the_work_queue(campaign):
    fixture_answers(campaign)
    vocabulary = check_vocabulary(mapping=LABEL_STUDIO_MAPPING, name="mapping")
    criteria = {c.name: c for c in Criterion.objects.select_related("campaign").filter(campaign=campaign)}
    for criterion in criteria.values():
        units = list(Unit.objects.filter(campaign=campaign, level=criterion.level).order_by("pk"))
        sample_units(criterion=criterion, units=units)
    annotator = member(campaign, Role.ANNOTATOR)
    import_labels(path=LABEL_STUDIO_FILE, fmt="label-studio", campaign=campaign, vocabulary=vocabulary)
    for criterion in criteria.values():
        imported = set(
            Label.objects.filter(criterion=criterion, stage=Stage.IMPORTED).values_list("unit_id", flat=True)
        )
        if not imported:
            continue
        progress = stage_progress(user=annotator, criterion=criterion, stage=Stage.LABEL)
        assert progress.imported == len(imported)
        # Skipped units come back after all the others: going round once shows the whole queue.
        handed: set[int] = set()
        while (unit := next_unit(user=annotator, criterion=criterion, stage=Stage.LABEL)) is not None:
            if unit.pk in handed:
                break
            handed.add(unit.pk)
            skip(user=annotator, criterion=criterion, stage=Stage.LABEL, unit_id=unit.pk)
        units = set(
            Unit.objects.filter(campaign=campaign, level=criterion.level).values_list("pk", flat=True)
        )
        assert handed == units - imported


@pytest.mark.parametrize("fmt", ["label-studio", "argilla"])
def test_json_nested_too_deeply_is_refused_naming_its_record_never_a_crash(campaign, tmp_path, fmt):
    fixture_answers(campaign)
    tasks = load(LABEL_STUDIO_FILE if fmt == "label-studio" else ARGILLA_FILE)
    text = json.dumps(tasks[:2])
    # A third record whose metadata nests 100,000 lists: deeper than any decoder goes.
    path = tmp_path / "deep.json"
    path.write_text(text[:-1] + ', {"metadata": ' + "[" * 100_000 + "]" * 100_000 + "}]", encoding="utf-8")
    error = _refused(campaign, path, fmt=fmt)
    assert [(e.file, e.row, e.field) for e in error.errors] == [(str(path), 3, "json")]
    assert "nested too deeply" in error.errors[0].message


def test_a_mapping_file_nested_too_deeply_is_refused_naming_it(tmp_path):
    path = tmp_path / "mapping.json"
    path.write_text('{"values": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    with pytest.raises(ImportFailed) as refused:
        read_vocabulary(path=path)
    assert [(e.file, e.row, e.field) for e in refused.value.errors] == [(str(path), None, "mapping")]
    assert "nested too deeply" in refused.value.errors[0].message
