"""A run that ended with no unit judged and some failed reads 'failed', not 'done'; runs that
ended so before this status existed take it."""

from django.db import migrations, models


def failed_runs_say_so(apps, schema_editor):
    JudgeRun = apps.get_model("evaluation", "JudgeRun")
    JudgeRun.objects.filter(status="done", done_units=0, failed_units__gt=0).update(status="failed")


def failed_runs_read_done_again(apps, schema_editor):
    JudgeRun = apps.get_model("evaluation", "JudgeRun")
    JudgeRun.objects.filter(status="failed").update(status="done")


class Migration(migrations.Migration):
    dependencies = [("evaluation", "0008_audit_append_only")]

    operations = [
        migrations.AlterField(
            model_name="judgerun",
            name="status",
            field=models.CharField(
                choices=[
                    ("pending", "Pending"),
                    ("running", "Running"),
                    ("done", "Done"),
                    ("failed", "Failed"),
                    ("cancelled", "Cancelled"),
                    ("budget", "Stopped: token budget reached"),
                ],
                default="pending",
                max_length=10,
            ),
        ),
        migrations.RunPython(failed_runs_say_so, failed_runs_read_done_again),
    ]
