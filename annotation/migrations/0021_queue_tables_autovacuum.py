"""Autovacuum of the tables the work queue churns, by row counts instead of a share of the table.

Every label deletes its open slot, which was rewritten when it was held, and fills its slot row:
about 1.9 dead rows in ``annotation_openslot`` and 1.1 in ``annotation_assignment`` per label
(docs/queue.md, "A long day"). PostgreSQL's defaults vacuum a table once a fifth of it is dead,
about 100,000 dead rows in a 500,000-unit queue; until then every claim's scan of the queue's
index reads past the dead entries at its front, up to a buffer each (2,453 buffers per claim
after 1,240 labels, 6 after a vacuum). So each table is vacuumed once 2,000 of its rows are dead:
about a minute of labels with 8 people back to back on 2 cores, autovacuum's round.

``vacuum_index_cleanup`` on: by default a vacuum that finds dead rows on fewer than 2 % of the
table's pages leaves the indexes alone, which is always the case here (2,110 dead rows on 81 of
5,341 pages), and the dead entries at the front of the queue's index stay (29 buffers per claim
after such a vacuum, 10 after one that cleans the indexes, for 0.02 s of CPU).

The slot rows are analyzed every 2,000 changes too, so that the planner knows how many slots each
person has. PostgreSQL only: SQLite has no autovacuum.
"""

from django.db import migrations

SETTINGS = {
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


def set_settings(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, settings in SETTINGS.items():
        pairs = ", ".join(f"{name} = {value}" for name, value in settings.items())
        schema_editor.execute(f"ALTER TABLE {table} SET ({pairs})")


def reset_settings(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, settings in SETTINGS.items():
        schema_editor.execute(f"ALTER TABLE {table} RESET ({', '.join(settings)})")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0020_campaign_label_hourly_rate"),
    ]

    operations = [migrations.RunPython(set_settings, reset_settings, elidable=False)]
