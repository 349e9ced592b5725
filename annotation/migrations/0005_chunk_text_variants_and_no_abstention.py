"""One chunk row per distinct text of an id; campaigns may set no abstention patterns at all.

Chunks: every existing row gets the digest of its text (what models.chunk_text_hash computes,
repeated here so that this migration never changes), then the unique key moves from
(campaign, external_id) to (campaign, external_id, text_hash). Existing rows were unique by id,
so they stay unique.

Abstention patterns: an empty list used to mean the built-in patterns; it now means none, and
None means the built-in ones. Existing empty lists become None, so no campaign changes meaning.
"""

from __future__ import annotations

import hashlib

from django.db import migrations, models

BATCH = 2000


def fill_text_hashes(apps, schema_editor):
    SourceChunk = apps.get_model("annotation", "SourceChunk")
    pending = []
    for chunk in SourceChunk.objects.only("pk", "text").order_by("pk").iterator(chunk_size=BATCH):
        chunk.text_hash = hashlib.sha256(chunk.text.encode("utf-8")).hexdigest()
        pending.append(chunk)
        if len(pending) >= BATCH:
            SourceChunk.objects.bulk_update(pending, ["text_hash"])
            pending = []
    SourceChunk.objects.bulk_update(pending, ["text_hash"])


def empty_patterns_to_defaults(apps, schema_editor):
    Campaign = apps.get_model("annotation", "Campaign")
    for campaign in Campaign.objects.only("pk", "abstention_patterns"):
        if campaign.abstention_patterns == []:
            Campaign.objects.filter(pk=campaign.pk).update(abstention_patterns=None)


def defaults_to_empty_patterns(apps, schema_editor):
    # Before this migration [] meant the built-in patterns; a campaign that had none can't be said.
    Campaign = apps.get_model("annotation", "Campaign")
    Campaign.objects.filter(abstention_patterns__isnull=True).update(abstention_patterns=[])


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0004_drop_indexes_covered_by_composites"),
    ]

    operations = [
        migrations.AddField(
            model_name="sourcechunk",
            name="text_hash",
            field=models.CharField(default="", editable=False, max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(fill_text_hashes, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="sourcechunk",
            constraint=models.UniqueConstraint(
                fields=("campaign", "external_id", "text_hash"), name="chunk_unique_text"
            ),
        ),
        migrations.RemoveConstraint(
            model_name="sourcechunk",
            name="chunk_unique_external_id",
        ),
        migrations.AlterField(
            model_name="campaign",
            name="abstention_patterns",
            field=models.JSONField(
                blank=True,
                default=None,
                help_text="Regular expressions. null: the built-in patterns; []: none.",
                null=True,
            ),
        ),
        migrations.RunPython(empty_patterns_to_defaults, defaults_to_empty_patterns),
    ]
