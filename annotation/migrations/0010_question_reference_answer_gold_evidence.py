"""A question may carry a reference answer and its gold evidence (passage texts and/or chunk
ids), for the evidence coverage of answers and the retrieval ranking metrics."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_label_seconds_spent"),
    ]

    operations = [
        migrations.AddField(
            model_name="question",
            name="reference_answer",
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name="question",
            name="gold_evidence",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
