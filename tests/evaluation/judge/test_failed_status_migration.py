"""Runs that ended with nothing judged before the 'failed' status existed take it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

# The corpus's tables as they were when the status came, whatever came after them.
CORPUS = ("annotation", "0017_assignment_one_slot_per_person")
BEFORE = [CORPUS, ("evaluation", "0008_audit_append_only")]
AFTER = [CORPUS, ("evaluation", "0009_judgerun_failed_status")]


@pytest.mark.django_db(transaction=True)
def test_a_done_run_that_judged_nothing_becomes_failed_and_the_others_stay():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        campaign = old.get_model("annotation", "Campaign").objects.create(name="Old", slug="old")
        criterion = old.get_model("annotation", "Criterion").objects.create(
            campaign=campaign, name="relevance", title="Relevance", level="answer"
        )
        judge = old.get_model("evaluation", "Judge").objects.create(campaign=campaign, name="gpt", model="m")
        JudgeRun = old.get_model("evaluation", "JudgeRun")
        counts = {
            "nothing judged": ("done", 0, 681),
            "some failures": ("done", 669, 12),
            "all judged": ("done", 5, 0),
            "cancelled": ("cancelled", 0, 3),
            "empty": ("done", 0, 0),
        }
        made = {
            name: JudgeRun.objects.create(
                campaign=campaign,
                criterion=criterion,
                judge=judge,
                status=status,
                total_units=done + failed,
                done_units=done,
                failed_units=failed,
            ).pk
            for name, (status, done, failed) in counts.items()
        }
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps.get_model("evaluation", "JudgeRun")
        statuses = {name: new.objects.get(pk=pk).status for name, pk in made.items()}
        assert statuses == {
            "nothing judged": "failed",
            "some failures": "done",
            "all judged": "done",
            "cancelled": "cancelled",
            "empty": "done",
        }
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
