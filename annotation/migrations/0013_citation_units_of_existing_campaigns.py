"""Existing campaigns get the built-in criterion ``citation_support`` and their citation units,
made as an import makes them (annotation.corpus.citations): one per (sentence, retrieved chunk it
cites); a cited id the retriever did not return makes none."""

from django.db import migrations

from annotation.corpus.citations import cited_chunks
from annotation.corpus.conventions import BUILTIN_CRITERIA, BUILTIN_GUIDELINES

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
        ("annotation", "0012_citation_units"),
    ]

    operations = [
        migrations.RunPython(add_citation_units, migrations.RunPython.noop),
    ]
