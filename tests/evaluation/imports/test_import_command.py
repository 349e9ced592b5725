from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import translation

from annotation.models import Answer, Campaign, Label, Membership, Question, Role, SourceChunk, Stage, Unit
from evaluation.demo.campaign import DEMO_CAMPAIGN, DEMO_FILE, DEMO_MEMBERS
from evaluation.models import Judge, Judgment
from tests.ingest_files import DATA, JSONL, RECORDS, table_counts, write_jsonl

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("import_campaign", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_command_imports_a_file_and_prints_a_summary():
    output = run(str(JSONL), "--campaign", "Velmont")
    campaign = Campaign.objects.get(name="Velmont")
    assert Answer.objects.filter(campaign=campaign).count() == 4
    assert "imported into a new campaign 'Velmont'" in output
    assert "answers: 4 new, 0 replaced" in output
    assert "imported labels: 2 human, 3 judge ('imported')" in output


def test_command_prints_every_error_as_file_row_field_message(tmp_path):
    records = [dict(r) for r in RECORDS]
    records[1]["answer"] = ""
    records[3]["labels"] = {"relevance": {"llm": 3}}
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    before = table_counts()
    with pytest.raises(CommandError) as failure:
        run(str(path), "--campaign", "Velmont")
    message = str(failure.value)
    assert "2 errors; nothing was imported" in message
    assert f"{path}:2: answer: must not be empty" in message
    assert f"{path}:4: labels.relevance.llm: must be 0, 1 or empty, not 3" in message
    assert table_counts() == before


def test_a_bad_row_in_the_middle_of_2000_answers_imports_nothing(tmp_path):
    records = []
    for i in range(1, 2001):
        records.append(
            {
                "question_id": f"Q{(i - 1) // 20 + 1}",
                "question": f"Question numéro {(i - 1) // 20 + 1} sur les comptes ?",
                "theme": ["Finance", "RH", "IT"][((i - 1) // 20) % 3],
                "difficulty": "simple",
                "answer": f"Réponse {i} : {i} k€ [^c{i % 25}^]. Il progresse [^c{i % 25 + 1}^].",
                "sources": [
                    {"id": f"c{k}", "title": f"doc{k}.pdf", "page": k, "text": f"Texte du chunk {k}."}
                    for k in range(i % 25, i % 25 + 5)
                ],
            }
        )
    records[999]["answer"] = ""  # line 1000
    bad = write_jsonl(tmp_path / "big-bad.jsonl", records)
    before = table_counts()
    with pytest.raises(CommandError) as failure:
        run(str(bad), "--campaign", "Big")
    assert f"{bad}:1000: answer: must not be empty" in str(failure.value)
    assert "1 error;" in str(failure.value)
    assert table_counts() == before

    # The same file without the bad row imports: the row was the only reason.
    records[999]["answer"] = "Réponse corrigée."
    run(str(write_jsonl(tmp_path / "big-good.jsonl", records)), "--campaign", "Big")
    assert Answer.objects.filter(campaign__name="Big").count() == 2000


def test_command_reads_a_mapping_file():
    run(str(DATA / "mapped.csv"), "--campaign", "Mapped", "--mapping", str(DATA / "mapping.json"))
    assert Question.objects.filter(campaign__name="Mapped").count() == 2
    assert Label.objects.filter(unit__campaign__name="Mapped").count() == 2


def test_command_refuses_a_second_import_of_the_same_answers_unless_update():
    run(str(JSONL), "--campaign", "Velmont")
    with pytest.raises(CommandError) as failure:
        run(str(JSONL), "--campaign", "Velmont")
    assert f"{JSONL}:1: answer_id: 'Q1-1' is already in the campaign" in str(failure.value)
    output = run(str(JSONL), "--campaign", "Velmont", "--update")
    assert "answers: 0 new, 4 replaced" in output
    assert "lost 2 earlier imported labels and 3 judgments" in output
    assert Answer.objects.filter(campaign__name="Velmont").count() == 4
    assert Judgment.objects.filter(unit__campaign__name="Velmont").count() == 3


def test_command_shows_progress_on_stderr_when_asked():
    err = io.StringIO()
    call_command(
        "import_campaign", str(JSONL), "--campaign", "Velmont", verbosity=2, stdout=io.StringIO(), stderr=err
    )
    assert "importing: 4/4 answers" in err.getvalue()


# load_demo


def _demo_expectations() -> dict[str, int]:
    records = [
        json.loads(line) for line in Path(DEMO_FILE).read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    human = llm = 0
    for record in records:
        pairs = list(record.get("labels", {}).values())
        for sentence in record.get("sentences") or []:
            if isinstance(sentence, dict):
                pairs.extend(sentence.get("labels", {}).values())
        human += sum(pair.get("human") is not None for pair in pairs)
        llm += sum(pair.get("llm") is not None for pair in pairs)
    return {
        "answers": len(records),
        "questions": len({str(r["question_id"]) for r in records}),
        "labels": human,
        "judgments": llm,
    }


def test_load_demo_imports_the_demo_file_and_creates_its_people(loaded_demo):
    out = loaded_demo
    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN)
    expected = _demo_expectations()
    assert campaign.expected_language == "fr"
    assert Answer.objects.filter(campaign=campaign).count() == expected["answers"]
    assert Question.objects.filter(campaign=campaign).count() == expected["questions"]
    # The file's labels; the criterion with categories the demo adds has its own
    # (tests/evaluation/demo/test_categories.py), and its people label veracity and citation
    # support through the workflow (tests/evaluation/demo/test_labelling.py).
    from_file = Label.objects.filter(unit__campaign=campaign, stage=Stage.IMPORTED).exclude(
        criterion__name="correctness"
    )
    assert from_file.count() == expected["labels"]
    assert (
        Judgment.objects.filter(unit__campaign=campaign, judge__name="imported")
        .exclude(criterion__name="correctness")
        .count()
        == expected["judgments"]
    )
    assert SourceChunk.objects.filter(campaign=campaign).exists()
    assert Unit.objects.filter(campaign=campaign).count() > expected["answers"]
    User = get_user_model()
    for username, roles in DEMO_MEMBERS.items():
        user = User.objects.get(username=username)
        # "manager" existed before the load (the fixture made it): it keeps its own password.
        assert user.check_password("my-own-password" if username == "manager" else "demo")
        assert set(
            Membership.objects.filter(campaign=campaign, user=user).values_list("role", flat=True)
        ) == set(roles)
    assert set(
        Membership.objects.filter(campaign=campaign, user__username="annotator2").values_list(
            "role", flat=True
        )
    ) == {
        Role.ANNOTATOR,
        Role.REVIEWER,
    }
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.check_password("demo")
    assert "password 'demo'" in out
    # The login message names each person's roles.
    lines = out.splitlines()
    assert "  annotator2   annotator, reviewer" in lines
    assert "  manager      manager" in lines
    assert any(line.startswith("  admin        superuser") for line in lines)


def test_load_demo_twice_changes_nothing_and_says_so(loaded_demo):
    before = table_counts()
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert table_counts() == before
    assert "already loaded: nothing changed" in out.getvalue()


def test_load_demo_leaves_an_existing_user_s_password_alone(loaded_demo):
    User = get_user_model()
    assert User.objects.get(username="manager").check_password("my-own-password")
    names = sorted(Judge.objects.filter(campaign__name=DEMO_CAMPAIGN).values_list("name", flat=True))
    assert names == ["imported", "lexical"]


def test_command_prints_the_warning_about_chunk_ids_with_several_texts(tmp_path):
    records = [dict(r) for r in RECORDS[:2]]
    records[1]["sources"] = [dict(records[1]["sources"][0], text="Chiffre d'affaires 2023 : [MONTANT].")]
    path = write_jsonl(tmp_path / "variants.jsonl", records)
    output = run(str(path), "--campaign", "Variants")
    assert "answers: 2 new, 0 replaced" in output
    assert (
        f"warning: {path}: 1 chunk id came with several texts (such as 'c1': rows 1 and 2); "
        "each answer keeps the text it was given"
    ) in output
    again = run(str(path), "--campaign", "Variants", "--update")
    assert "answers: 0 new, 2 replaced" in again
    assert "chunks: 0 new" in again
    texts = {
        answer.external_id: answer.sources.get(chunk__external_id="c1").chunk.text
        for answer in Answer.objects.filter(campaign__name="Variants")
    }
    assert texts == {
        "Q1-1": RECORDS[0]["sources"][0]["text"],
        "Q1-2": "Chiffre d'affaires 2023 : [MONTANT].",
    }


def test_command_reads_a_mapping_of_values(tmp_path):
    records = [dict(r, theme={"Finance": "Financial", "RH": "People"}[r["theme"]]) for r in RECORDS]
    for record in records[2:]:  # the two answers to Q2
        record.pop("difficulty")
    mapping = tmp_path / "vocabulary.json"
    mapping.write_text(
        json.dumps(
            {"values": {"theme": {"Financial": "Finance", "People": "RH"}, "difficulty": {"": "hard"}}}
        ),
        encoding="utf-8",
    )
    run(str(write_jsonl(tmp_path / "own.jsonl", records)), "--campaign", "Values", "--mapping", str(mapping))
    assert sorted(Question.objects.filter(campaign__name="Values").values_list("theme", "difficulty")) == [
        ("Finance", "simple"),
        ("RH", "hard"),
    ]


def test_command_names_the_mapping_file_and_key_at_fault(tmp_path):
    mapping = tmp_path / "vocabulary.json"
    mapping.write_text(json.dumps({"values": {"language": {"French": "fr"}}}), encoding="utf-8")
    before = table_counts()
    with pytest.raises(CommandError) as failure:
        run(str(JSONL), "--campaign", "Values", "--mapping", str(mapping))
    assert f"{mapping}: values['language']: only the values of theme and difficulty can be mapped" in str(
        failure.value
    )
    assert table_counts() == before


def test_command_refuses_deeply_nested_json_with_file_row_and_field(tmp_path):
    path = tmp_path / "deep.jsonl"
    # 4 kB: one record whose labels nest 2,000 lists deep.
    path.write_text(json.dumps(RECORDS[0]) + "\n" + '{"labels": ' + "[" * 2000 + "]" * 2000 + "}\n")
    before = table_counts()
    with pytest.raises(CommandError) as failure:
        run(str(path), "--campaign", "Deep")
    assert f"{path}:2: json: nested too deeply" in str(failure.value)
    assert table_counts() == before


def test_the_command_line_keeps_its_refusals_in_english_whatever_language_is_active(tmp_path):
    records = [dict(r) for r in RECORDS]
    records[1]["answer"] = ""
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    with translation.override("fr"), pytest.raises(CommandError) as failure:
        run(str(path), "--campaign", "Velmont")
    assert f"{path}:2: answer: must not be empty" in str(failure.value)
    assert "vide" not in str(failure.value)
