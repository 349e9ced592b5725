"""Data migrations of the annotation app, run forwards on rows written by the previous schema."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from annotation.corpus.conventions import DEFAULT_CITATION_PATTERN
from annotation.corpus.sources import chunk_text_hash

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


@pytest.mark.django_db(transaction=True)
def test_0012_and_0013_give_existing_campaigns_citation_support_and_their_citation_units():
    old = _migrate([("annotation", "0011_criterion_categories")])
    get = old.get_model
    Campaign = get("annotation", "Campaign")
    campaign = Campaign.objects.create(name="Old", slug="old", expected_language="en")
    question = get("annotation", "Question").objects.create(
        campaign=campaign, external_id="Q", text="?", theme="T"
    )
    answer = get("annotation", "Answer").objects.create(
        campaign=campaign, question=question, external_id="A", text="x"
    )
    chunks = {}
    for rank, external_id in enumerate(["a", "b"], start=1):
        chunks[external_id] = get("annotation", "SourceChunk").objects.create(
            campaign=campaign,
            external_id=external_id,
            text=external_id,
            text_hash=chunk_text_hash(external_id),
        )
        get("annotation", "AnswerSource").objects.create(answer=answer, chunk=chunks[external_id], rank=rank)
    Unit = get("annotation", "Unit")
    Unit.objects.create(campaign=campaign, level="answer", answer=answer, theme="T")
    for position, cited in enumerate([["b", "a", "b"], ["zz"], []]):
        sentence = get("annotation", "Sentence").objects.create(
            answer=answer, position=position, text=f"s{position}", cited_ids=cited
        )
        Unit.objects.create(campaign=campaign, level="sentence", answer=answer, sentence=sentence, theme="T")
    try:
        new = _migrate([("annotation", "0013_citation_units_of_existing_campaigns")])
        Unit = new.get_model("annotation", "Unit")
        Criterion = new.get_model("annotation", "Criterion")
        made = Unit.objects.filter(level="citation").order_by("id")
        assert [(u.sentence.position, u.chunk.external_id, u.theme) for u in made] == [
            (0, "b", "T"),
            (0, "a", "T"),
        ]
        criterion = Criterion.objects.get(campaign_id=campaign.pk, name="citation_support")
        assert (criterion.level, criterion.builtin) == ("citation", True)
        assert criterion.guidelines.startswith("Citation support")
    finally:
        new_campaign = _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes()).get_model(
            "annotation", "Campaign"
        )
        new_campaign.objects.all().delete()


@pytest.mark.django_db(transaction=True)
def test_0016_gives_a_campaign_whose_citation_pattern_cannot_work_the_default():
    old = _migrate([("annotation", "0015_sample_design_sequential")])
    Campaign = old.get_model("annotation", "Campaign")
    rows = {
        "unclosed": "[unclosed",
        "no-group": r"\[\d+\]",
        "own": r"\[(\d+)\]",
    }
    made = {
        slug: Campaign.objects.create(name=slug, slug=slug, citation_pattern=p) for slug, p in rows.items()
    }
    try:
        new = _migrate([("annotation", "0016_citation_pattern_checked")])
        Campaign = new.get_model("annotation", "Campaign")
        kept = dict(
            Campaign.objects.filter(pk__in=[c.pk for c in made.values()]).values_list(
                "slug", "citation_pattern"
            )
        )
        assert kept == {
            "unclosed": DEFAULT_CITATION_PATTERN,
            "no-group": DEFAULT_CITATION_PATTERN,
            "own": r"\[(\d+)\]",
        }
    finally:
        Campaign.objects.all().delete()
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_0018_and_0019_give_every_criterion_a_title_unique_in_its_campaign():
    old = _migrate([("annotation", "0017_assignment_one_slot_per_person")])
    Campaign = old.get_model("annotation", "Campaign")
    Criterion = old.get_model("annotation", "Criterion")
    first = Campaign.objects.create(name="Old titles", slug="old-titles")
    second = Campaign.objects.create(name="Other", slug="other")

    def made(campaign, name, title, builtin=False):
        return Criterion.objects.create(
            campaign=campaign, name=name, title=title, level="answer", builtin=builtin
        )

    rows = [
        made(first, "tone_b", ""),
        made(first, "completeness", "Completeness"),
        made(first, "completeness_v2", " complétude  "),
        made(first, "completeness-v3", "COMPLETENESS"),
        made(first, "on-topic", "Relevance"),
        made(first, "relevance", "Relevance", builtin=True),  # built-in: keeps its title
        made(second, "completeness", "Completeness"),
    ]
    try:
        new = _migrate([("annotation", "0019_criterion_title_required")])
        Criterion = new.get_model("annotation", "Criterion")
        titles = {
            (c.campaign_id, c.name): (c.title, c.title_key)
            for c in Criterion.objects.filter(pk__in=[row.pk for row in rows])
        }
        assert titles == {
            (first.pk, "tone_b"): ("Tone b", "tone b"),
            (first.pk, "completeness"): ("Completeness", "completeness"),
            (first.pk, "completeness_v2"): ("complétude", "completude"),
            (first.pk, "completeness-v3"): (
                "COMPLETENESS (completeness-v3)",
                "completeness (completeness-v3)",
            ),
            (first.pk, "on-topic"): ("Relevance (on-topic)", "relevance (on-topic)"),
            (first.pk, "relevance"): ("Relevance", "relevance"),
            (second.pk, "completeness"): ("Completeness", "completeness"),
        }
        # The constraints hold from now on.
        with pytest.raises(IntegrityError), transaction.atomic():
            Criterion.objects.create(
                campaign_id=first.pk, name="x", title="X", title_key="tone b", level="answer"
            )
        with pytest.raises(IntegrityError), transaction.atomic():
            Criterion.objects.create(campaign_id=first.pk, name="y", title="", title_key="", level="answer")
    finally:
        Campaign.objects.filter(pk__in=[first.pk, second.pk]).delete()
        _migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
