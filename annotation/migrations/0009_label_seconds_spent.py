"""Imported labels keep the time their author spent and when they were last edited in the tool
they came from (Label Studio's lead_time and updated_at). Both are set when the row is inserted:
labels stay append-only (annotation/workflow/append_only.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_work_queue_stored"),
    ]

    operations = [
        migrations.AddField(
            model_name="label",
            name="seconds_spent",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="label",
            name="edited_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
