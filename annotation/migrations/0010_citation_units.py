"""Citation units: ``Level.CITATION``, ``Unit.chunk``, a sentence with several units (one per
cited chunk besides its own), and the built-in criterion ``citation_support``.

Existing campaigns get the criterion and their citation units here, made as an import makes
them (annotation.citations): one per (sentence, retrieved chunk it cites)."""

import django.db.models.deletion
from django.db import migrations, models

from annotation.citations import cited_chunks
from annotation.conventions import BUILTIN_CRITERIA, BUILTIN_GUIDELINES

CRITERION = "citation_support"


def add_citation_units(apps, schema_editor):
    Campaign = apps.get_model("annotation", "Campaign")
    Criterion = apps.get_model("annotation", "Criterion")
    AnswerSource = apps.get_model("annotation", "AnswerSource")
    Unit = apps.get_model("annotation", "Unit")
    spec = BUILTIN_CRITERIA[CRITERION]
    for campaign in Campaign.objects.order_by("pk"):
        texts = BUILTIN_GUIDELINES[CRITERION]
        Criterion.objects.get_or_create(
            campaign=campaign,
            name=CRITERION,
            defaults={
                "level": spec["level"],
                "title": spec["title"],
                "guidelines": texts.get(campaign.expected_language or "fr") or texts["fr"],
                "builtin": True,
            },
        )
        retrieved: dict[int, dict[str, int]] = {}
        for answer_id, external_id, chunk_id in (
            AnswerSource.objects.filter(answer__campaign=campaign)
            .order_by("answer_id", "rank")
            .values_list("answer_id", "chunk__external_id", "chunk_id")
        ):
            retrieved.setdefault(answer_id, {}).setdefault(external_id, chunk_id)
        units = Unit.objects.filter(campaign=campaign, level="sentence").select_related("sentence")
        made = []
        for unit in units.iterator(chunk_size=2000):
            for chunk_id in cited_chunks(
                cited_ids=unit.sentence.cited_ids or [], retrieved=retrieved.get(unit.answer_id, {})
            ):
                made.append(
                    Unit(
                        campaign_id=campaign.pk,
                        level="citation",
                        answer_id=unit.answer_id,
                        sentence_id=unit.sentence_id,
                        chunk_id=chunk_id,
                        theme=unit.theme,
                        difficulty=unit.difficulty,
                    )
                )
        Unit.objects.bulk_create(made, batch_size=2000, ignore_conflicts=True)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0009_label_seconds_spent"),
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
        migrations.RunPython(add_citation_units, migrations.RunPython.noop),
    ]
