"""The demo's second version of the assistant: same questions, its own answers and labels."""

from __future__ import annotations

import io
import json

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Campaign, Membership, Question
from evaluation.demo.campaign import DEMO_CAMPAIGN, DEMO_FILE, DEMO_MEMBERS
from evaluation.demo.versions import SECOND_CAMPAIGN, second_version_records
from evaluation.measures import comparison

RECORDS = [json.loads(line) for line in DEMO_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def truth(record) -> int | None:
    return record["labels"]["relevance"]["human"]


def test_version_2_answers_the_same_questions_with_labels_on_the_same_answers():
    second = second_version_records(RECORDS)
    assert [(r["question_id"], r["answer_id"]) for r in second] == [
        (r["question_id"], r["answer_id"]) for r in RECORDS
    ]
    assert [truth(r) is None for r in second] == [truth(r) is None for r in RECORDS]
    assert second == second_version_records(RECORDS)  # seeded


def test_version_2_fixes_the_off_topic_answers_and_strays_in_informatique():
    second = {r["answer_id"]: r for r in second_version_records(RECORDS)}
    # Q-FIN-01-r5 was off topic in version 1 (labeled 0); version 2 answers the question.
    assert truth(next(r for r in RECORDS if r["answer_id"] == "Q-FIN-01-r5")) == 0
    assert truth(second["Q-FIN-01-r5"]) == 1
    wrong = {r["theme"] for r in second.values() if truth(r) == 0}
    assert wrong == {"Informatique"}
    strayed = [r for r in second.values() if r["theme"] == "Informatique" and truth(r) == 0]
    assert strayed and all("\n\n" in r["answer"] for r in strayed)


def test_load_demo_brings_version_2_comparable_by_question(db, client):
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    assert "version 2" in out.getvalue()
    first = Campaign.objects.get(name=DEMO_CAMPAIGN)
    second = Campaign.objects.get(name=SECOND_CAMPAIGN)
    assert Question.objects.filter(campaign=second).count() == 20
    for username in DEMO_MEMBERS:
        assert Membership.objects.filter(campaign=second, user__username=username).exists()
    versions = comparison.versions_for(campaigns=[first, second], criterion="relevance")
    assert {v.judge.name for v in versions} == {"lexical"}
    result = comparison.compare_versions(versions=versions)
    assert result.shared_questions == {(DEMO_CAMPAIGN, SECOND_CAMPAIGN): 20}
    human = {row.theme: row for row in result.rows_of("human")}
    assert human["Informatique"].right_value < human["Informatique"].left_value
    assert human["Finance"].right_value >= human["Finance"].left_value
    # The demo's analyst sees the two versions compared by question on the page.
    client.force_login(get_user_model().objects.get(username="analyst"))
    page = client.get(reverse("evaluation:compare", args=[first.slug, "relevance"]), {"other": second.slug})
    assert page.status_code == 200
    assert 'id="paired-note"' in page.content.decode()
    again = io.StringIO()
    call_command("load_demo", stdout=again)
    assert "already loaded: nothing changed" in again.getvalue()
