"""Existing data migrates: criteria get version 1, their labels point to it, judges get a prompt."""

from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from evaluation.judge import prompts

BEFORE = [
    ("annotation", "0004_drop_indexes_covered_by_composites"),
    ("evaluation", "0003_batch_llm_calls_and_one_active_run"),
]
AFTER = [("annotation", "0006_criterion_versions"), ("evaluation", "0004_llm_calls_and_judge_prompts")]


@pytest.mark.django_db(transaction=True)
def test_existing_criteria_labels_and_judges_get_version_1_and_their_current_prompt():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        campaign = old.get_model("annotation", "Campaign").objects.create(name="Old", slug="old")
        criterion = old.get_model("annotation", "Criterion").objects.create(
            campaign=campaign, name="relevance", level="answer", guidelines="Old guidelines.", builtin=True
        )
        question = old.get_model("annotation", "Question").objects.create(
            campaign=campaign, external_id="q1", text="Q?", theme="Finance"
        )
        answer = old.get_model("annotation", "Answer").objects.create(
            campaign=campaign, question=question, external_id="a1", text="A."
        )
        unit = old.get_model("annotation", "Unit").objects.create(
            campaign=campaign, level="answer", answer=answer, theme="Finance"
        )
        Label = old.get_model("annotation", "Label")
        given = Label.objects.create(unit=unit, criterion=criterion, stage="label", value=1)
        imported = Label.objects.create(unit=unit, criterion=criterion, stage="imported", value=0)
        Judge = old.get_model("evaluation", "Judge")
        judge = Judge.objects.create(
            campaign=campaign, name="gpt", model="m", prompt_version="v1", language="en"
        )
        Judge.objects.create(campaign=campaign, name="lexical", kind="lexical")
        old.get_model("evaluation", "JudgeRun").objects.create(
            campaign=campaign, criterion=criterion, judge=judge, status="done"
        )

        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps
        version = new.get_model("annotation", "CriterionVersion").objects.get()
        assert (version.criterion_id, version.number, version.guidelines) == (
            criterion.pk,
            1,
            "Old guidelines.",
        )
        assert new.get_model("annotation", "Criterion").objects.get().current_version_id == version.pk
        labels = new.get_model("annotation", "Label").objects
        assert labels.get(pk=given.pk).guidelines_version_id == version.pk
        assert labels.get(pk=imported.pk).guidelines_version_id is None
        bound = new.get_model("evaluation", "JudgePrompt").objects.get()
        text = prompts.system_prompt(
            name="relevance", level="answer", guidelines="Old guidelines.", language="en"
        )
        assert (bound.judge_id, bound.criterion_id, bound.version_id) == (judge.pk, criterion.pk, version.pk)
        assert bound.system_prompt == text
        assert bound.sha256 == hashlib.sha256(text.encode("utf-8")).hexdigest()
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
