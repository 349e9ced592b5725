"""The upkeep of the tables the work queue churns on PostgreSQL: autovacuum by row counts with the
indexes cleaned (migration 0021), and the open slots' statistics refreshed after a rebuild."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import OpenSlot
from annotation.workflow import open_slots
from tests.factories import make_campaign, sampled

SETTINGS = importlib.import_module("annotation.migrations.0021_queue_tables_autovacuum").SETTINGS
on_postgres = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's autovacuum")


def _reloptions() -> dict[str, dict[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname, reloptions FROM pg_class WHERE relname = ANY(%s)", [list(SETTINGS)])
        rows = cursor.fetchall()
    return {name: dict(option.split("=", 1) for option in options or []) for name, options in rows}


@on_postgres
@pytest.mark.django_db
def test_the_queue_tables_are_vacuumed_by_row_counts_with_their_indexes():
    assert _reloptions() == {
        "annotation_openslot": {
            "autovacuum_vacuum_scale_factor": "0",
            "autovacuum_vacuum_threshold": "2000",
            "vacuum_index_cleanup": "on",
        },
        "annotation_assignment": {
            "autovacuum_vacuum_scale_factor": "0",
            "autovacuum_vacuum_threshold": "2000",
            "autovacuum_analyze_scale_factor": "0",
            "autovacuum_analyze_threshold": "2000",
            "vacuum_index_cleanup": "on",
        },
    }


@on_postgres
@pytest.mark.django_db(transaction=True)
def test_the_migration_takes_its_settings_back():
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("annotation", "0020_campaign_label_hourly_rate")])
        assert _reloptions() == {table: {} for table in SETTINGS}
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert _reloptions() == SETTINGS


def _rows_counted() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [OpenSlot._meta.db_table])
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_a_rebuild_of_many_open_slots_refreshes_their_statistics_once_committed(
    django_capture_on_commit_callbacks, monkeypatch
):
    campaign = make_campaign(name="Upkeep")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        criterion, _ = sampled(campaign=campaign, answers=7)
    # 7 open slots: left to autovacuum (the answers' content announces itself, nothing else runs).
    assert [callback for callback in callbacks if not hasattr(callback, "announces")] == []
    monkeypatch.setattr(open_slots, "ANALYZE_AFTER_ROWS", 14)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert open_slots.rebuild(criterion=criterion) == 14  # 7 deleted, 7 inserted
    if connection.vendor != "postgresql":
        assert callbacks == []
        return
    assert len(callbacks) == 1
    assert _rows_counted() == OpenSlot.objects.count() == 7
