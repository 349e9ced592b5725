"""Citation units: ``Level.CITATION``, ``Unit.chunk``, and a sentence with several units (one per
cited chunk besides its own). Existing campaigns get their citation units in the next migration:
PostgreSQL creates this one's indexes at its end, which rows written in the same transaction
would block."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0011_criterion_categories"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="unit",
            name="unit_level_matches_sentence",
        ),
        migrations.AddField(
            model_name="unit",
            name="chunk",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="annotation.sourcechunk",
            ),
        ),
        migrations.AlterField(
            model_name="criterion",
            name="level",
            field=models.CharField(
                choices=[("answer", "Answer"), ("sentence", "Sentence"), ("citation", "Citation")],
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="unit",
            name="level",
            field=models.CharField(
                choices=[("answer", "Answer"), ("sentence", "Sentence"), ("citation", "Citation")],
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="unit",
            name="sentence",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="units",
                to="annotation.sentence",
            ),
        ),
        migrations.AddConstraint(
            model_name="unit",
            constraint=models.UniqueConstraint(
                condition=models.Q(("chunk__isnull", True), ("sentence__isnull", False)),
                fields=("sentence",),
                name="unit_unique_sentence_level",
            ),
        ),
        migrations.AddConstraint(
            model_name="unit",
            constraint=models.UniqueConstraint(
                condition=models.Q(("chunk__isnull", False)),
                fields=("sentence", "chunk"),
                name="unit_unique_citation",
            ),
        ),
        migrations.AddConstraint(
            model_name="unit",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("chunk__isnull", True), ("level", "answer"), ("sentence__isnull", True)),
                    models.Q(("chunk__isnull", True), ("level", "sentence"), ("sentence__isnull", False)),
                    models.Q(("chunk__isnull", False), ("level", "citation"), ("sentence__isnull", False)),
                    _connector="OR",
                ),
                name="unit_level_matches_sentence",
            ),
        ),
    ]
