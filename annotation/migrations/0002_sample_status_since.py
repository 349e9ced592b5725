from django.db import migrations, models
from django.utils import timezone


def start_the_clock(apps, schema_editor):
    # Samples pending or running now count from the migration: they go stale after a time limit
    # like any other, instead of at once while their worker may still be alive.
    Sample = apps.get_model("annotation", "Sample")
    Sample.objects.filter(status__in=["pending", "running"]).update(status_since=timezone.now())


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="sample",
            name="status_since",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(start_the_clock, migrations.RunPython.noop),
    ]
