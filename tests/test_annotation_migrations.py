"""Data migrations of the annotation app, run forwards on rows written by the previous schema."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.text import chunk_text_hash

BEFORE = [("annotation", "0004_drop_indexes_covered_by_composites")]
AFTER = [("annotation", "0005_chunk_text_variants_and_no_abstention")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_0005_hashes_existing_chunks_and_keeps_empty_abstention_lists_meaning_the_defaults():
    old = _migrate(BEFORE)
    Campaign = old.get_model("annotation", "Campaign")
    SourceChunk = old.get_model("annotation", "SourceChunk")
    defaults = Campaign.objects.create(name="Old defaults", slug="old-defaults", abstention_patterns=[])
    custom = Campaign.objects.create(name="Old custom", slug="old-custom", abstention_patterns=[r"\bnon\b"])
    texts = {"c1": "Loyer : 120 k€.", "c2": "Effectif : 312 personnes."}
    for external_id, text in texts.items():
        SourceChunk.objects.create(campaign=defaults, external_id=external_id, text=text)
    try:
        new = _migrate(AFTER)
        Campaign = new.get_model("annotation", "Campaign")
        SourceChunk = new.get_model("annotation", "SourceChunk")
        assert Campaign.objects.get(pk=defaults.pk).abstention_patterns is None
        assert Campaign.objects.get(pk=custom.pk).abstention_patterns == [r"\bnon\b"]
        assert dict(SourceChunk.objects.values_list("external_id", "text_hash")) == {
            external_id: chunk_text_hash(text) for external_id, text in texts.items()
        }
        # The same id may now hold another text.
        SourceChunk.objects.create(
            campaign_id=defaults.pk, external_id="c1", text="Loyer : [MONTANT].", text_hash="0" * 64
        )
        assert SourceChunk.objects.filter(external_id="c1").count() == 2
    finally:
        Campaign.objects.all().delete()
        # Back to the latest schema, for the tests that come after this one.
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
