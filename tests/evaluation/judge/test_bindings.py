"""A judge means one prompt: bound on first use, refused after an edit that would change it."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.models import Criterion, CriterionVersion
from evaluation.judge import bindings, runs
from evaluation.models import JudgePrompt, JudgeRun
from tests.factories import make_answer
from tests.llm_server import ScriptedLLMServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def server():
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def relevance(campaign) -> Criterion:
    make_answer(campaign=campaign)
    return Criterion.objects.get(campaign=campaign, name="relevance")


def _judge(campaign, server, name: str = "gpt"):
    return runs.get_or_create_judge(campaign=campaign, name=name, model="scripted", base_url=server.base_url)


def _edit(criterion: Criterion, guidelines: str) -> None:
    criterion.guidelines = guidelines
    criterion.save(update_fields=["guidelines"])


def test_the_first_run_binds_the_judge_to_the_exact_prompt_it_sends(campaign, relevance, server):
    judge = _judge(campaign, server)
    runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    binding = JudgePrompt.objects.get(judge=judge, criterion=relevance)
    sent = server.requests[0]["messages"][0]["content"]
    assert binding.system_prompt == sent
    assert binding.sha256 == hashlib.sha256(sent.encode("utf-8")).hexdigest()
    assert binding.version.number == 1
    assert binding.version.guidelines == relevance.guidelines


def test_a_run_after_an_edit_of_the_guidelines_is_refused_and_changes_nothing(campaign, relevance, server):
    judge = _judge(campaign, server)
    runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    _edit(relevance, "Label 1 when the answer is on topic.")
    with pytest.raises(
        runs.RunError, match=r"judge gpt is bound to .* guidelines version 1 .*; guidelines now version 2\)"
    ):
        runs.create_run(criterion=relevance, judge=judge)
    assert JudgeRun.objects.count() == 1
    # A judge under a new name takes the new text.
    other = _judge(campaign, server, name="gpt-v2")
    runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=other).pk)
    assert JudgePrompt.objects.get(judge=other).version.number == 2
    assert "Label 1 when the answer is on topic." in server.requests[-1]["messages"][0]["content"]


def test_a_new_title_of_a_campaign_criterion_changes_its_prompt_and_the_refusal_says_so(campaign, server):
    make_answer(campaign=campaign)
    tone = Criterion.objects.create(
        campaign=campaign, name="tone", title="Tone", level="answer", guidelines="1: a neutral tone."
    )
    judge = _judge(campaign, server)
    runs.run_inline(run_id=runs.create_run(criterion=tone, judge=judge).pk)
    tone.title = "Professional tone"
    tone.save(update_fields=["title"])
    with pytest.raises(runs.RunError, match=r"an edit of the criterion's title, guidelines or judge prompt"):
        runs.create_run(criterion=tone, judge=judge)
    assert JudgeRun.objects.filter(criterion=tone).count() == 1


def test_an_edit_of_the_judge_prompt_refuses_too_but_one_that_renders_the_same_text_does_not(
    campaign, relevance, server
):
    judge = _judge(campaign, server)
    runs.create_run(criterion=relevance, judge=judge, scope=JudgeRun.Scope.MISSING)
    JudgeRun.objects.update(status=JudgeRun.Status.DONE)
    relevance.judge_prompt = "   "  # blank: the built-in framing, the same prompt
    relevance.save()
    runs.create_run(criterion=relevance, judge=judge, scope=JudgeRun.Scope.MISSING)
    JudgeRun.objects.update(status=JudgeRun.Status.DONE)
    relevance.judge_prompt = "You are a strict judge."
    relevance.save()
    with pytest.raises(runs.RunError, match="one judge's labels must rest on one prompt"):
        runs.create_run(criterion=relevance, judge=judge)


def test_resume_after_an_edit_is_refused(campaign, relevance, server):
    judge = _judge(campaign, server)
    run = runs.create_run(criterion=relevance, judge=judge)
    runs.cancel_run(run_id=run.pk)
    _edit(relevance, "New guidelines.")
    with pytest.raises(runs.RunError, match="bound to the prompt"):
        runs.resume_run(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.CANCELLED


def test_an_edit_while_a_run_works_changes_nothing_it_sends(campaign, relevance, server):
    judge = _judge(campaign, server)
    run = runs.create_run(criterion=relevance, judge=judge)
    _edit(relevance, "Edited while the run waits for a worker.")
    runs.run_inline(run_id=run.pk)
    assert server.requests[0]["messages"][0]["content"] == JudgePrompt.objects.get().system_prompt
    assert "Edited while" not in server.requests[0]["messages"][0]["content"]


def test_the_lexical_judge_sends_no_prompt_and_is_not_bound(campaign, relevance):
    judge = runs.get_or_create_judge(campaign=campaign, name="lexical")
    runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    _edit(relevance, "Anything.")
    runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    assert not JudgePrompt.objects.exists()
    assert bindings.bind(judge=judge, criterion=relevance) is None


def test_the_judge_command_refuses_a_run_after_an_edit_saying_why(campaign, relevance, server):
    call_command(
        "judge", campaign=campaign.name, criterion="relevance", judge="gpt", base_url=server.base_url
    )
    _edit(relevance, "Edited guidelines.")
    with pytest.raises(CommandError, match="bound to the prompt of relevance guidelines version 1"):
        call_command("judge", campaign=campaign.name, criterion="relevance", judge="gpt")
    assert JudgeRun.objects.count() == 1


def test_the_run_page_refuses_a_run_after_an_edit_saying_why(
    client_for, manager, campaign, relevance, server
):
    judge = _judge(campaign, server)
    runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    _edit(relevance, "Edited guidelines.")
    url = reverse("evaluation:run_list", args=[campaign.slug])
    response = client_for(manager).post(url, {"criterion": "relevance", "judge": "gpt", "scope": "all"})
    assert response.status_code == 400
    assert "is bound to the prompt of relevance guidelines version 1" in response.content.decode()
    assert JudgeRun.objects.count() == 1
    french = client_for(manager).post(
        url, {"criterion": "relevance", "judge": "gpt", "scope": "all"}, headers={"accept-language": "fr"}
    )
    assert "est lié au prompt" in french.content.decode()


def test_the_run_page_names_the_prompt_its_judge_is_bound_to(
    client_for, analyst, campaign, relevance, server
):
    judge = _judge(campaign, server)
    run = runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    page = client_for(analyst).get(reverse("evaluation:run_detail", args=[campaign.slug, run.pk])).content
    binding = JudgePrompt.objects.get()
    assert f"Guidelines version 1 · prompt sha256 {binding.sha256[:12]}" in page.decode()


def test_reports_name_the_guidelines_and_prompt_versions_they_rest_on(
    campaign, relevance, server, tmp_path, capsys
):
    judge = _judge(campaign, server)
    runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    binding = JudgePrompt.objects.get()
    call_command("report", campaign=campaign.name, criterion="relevance", judge="gpt", format="json")
    data = json.loads(capsys.readouterr().out)
    assert data["versions"] == {
        "human_labels": [],
        "label_states": {"needs_label": 0, "needs_review": 0, "needs_adjudication": 0, "final": 0},
        "judge_prompt": {"guidelines_version": 1, "sha256": binding.sha256},
    }
    out = tmp_path / "report.csv"
    call_command(
        "report", campaign=campaign.name, criterion="relevance", judge="gpt", format="csv", output=str(out)
    )
    header, first = out.read_text().splitlines()[:2]
    assert header.startswith("criterion,judge,alpha,human_guidelines,judge_prompt,")
    assert f'none,"guidelines v1, sha256 {binding.sha256}"' in first
    assert CriterionVersion.objects.filter(criterion=relevance).count() == 1


def test_the_report_page_and_workbook_name_the_versions_too(
    client_for, analyst, campaign, relevance, server, tmp_path
):
    from openpyxl import load_workbook

    judge = _judge(campaign, server)
    runs.run_inline(run_id=runs.create_run(criterion=relevance, judge=judge).pk)
    binding = JudgePrompt.objects.get()
    page = (
        client_for(analyst)
        .get(reverse("evaluation:report", args=[campaign.slug, "relevance"]), {"judge": "gpt"})
        .content.decode()
    )
    assert "Human labels given under guidelines" in page and "(no human labels)" in page
    assert f"Judge prompt from guidelines version 1, sha256 {binding.sha256[:12]}." in page
    out = tmp_path / "report.xlsx"
    call_command(
        "report", campaign=campaign.name, criterion="relevance", judge="gpt", format="xlsx", output=str(out)
    )
    summary = load_workbook(out)["Summary"]
    rows = list(summary.iter_rows(values_only=True))
    header = next(row for row in rows if row and row[0] == "criterion")
    values = dict(zip(header, rows[rows.index(header) + 1], strict=False))
    assert values["human_guidelines"] == "none"
    assert values["judge_prompt"] == f"guidelines v1, sha256 {binding.sha256}"
