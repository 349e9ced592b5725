"""Drawing, storing and topping up stratified samples (annotation.sampling) and the Celery path."""

from __future__ import annotations

import shutil
import socket
from collections import Counter, defaultdict
from datetime import timedelta

import pytest
from celery.exceptions import Retry
from django.utils import timezone

from annotation.jobs import request_sample, request_top_up
from annotation.models import Criterion, Label, Sample, SampleItem, Stage, Unit
from annotation.sampling.background import create_pending_sample, run_sample
from annotation.sampling.design import allocate_clusters
from annotation.sampling.draws import draw_sample, top_up_sample
from annotation.sampling.reading import cluster_summary, sample_as_json
from annotation.sampling.staleness import STALE_MARGIN, is_stale, seconds_until_stale, stale_after
from annotation.tasks import draw_sample_task
from tests.factories import die_while_running, make_answer, make_corpus
from tests.llm_server import ScriptedLLMServer
from tests.worker import Worker, wait_for


def items_of(sample: Sample) -> list[tuple]:
    return list(
        sample.items.order_by("unit_id").values_list(
            "unit_id", "theme", "cluster", "cluster_size", "inclusion_probability", "rank"
        )
    )


def counts() -> tuple[int, int]:
    return Sample.objects.count(), SampleItem.objects.count()


@pytest.fixture
def veracity(campaign):
    make_corpus(campaign=campaign)
    return Criterion.objects.get(campaign=campaign, name="veracity")


@pytest.fixture
def relevance(veracity):
    return Criterion.objects.get(campaign=veracity.campaign, name="relevance")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Drawing


@pytest.mark.django_db
def test_same_seed_draws_identical_items(veracity):
    first = draw_sample(criterion=veracity, budget=30, seed=7)
    second = draw_sample(criterion=veracity, budget=30, seed=7)
    assert first.pk != second.pk
    assert items_of(first) == items_of(second)
    assert len(items_of(first)) > 0


@pytest.mark.django_db
def test_a_different_seed_draws_a_different_sample(veracity):
    first = draw_sample(criterion=veracity, budget=30, seed=7)
    second = draw_sample(criterion=veracity, budget=30, seed=8)
    assert {row[0] for row in items_of(first)} != {row[0] for row in items_of(second)}


@pytest.mark.django_db
def test_inclusion_probability_is_m_over_cluster_size_and_one_for_small_clusters(veracity):
    sample = draw_sample(criterion=veracity, budget=45, seed=3, per_cluster=3)
    by_cluster: dict[tuple[str, int], list[SampleItem]] = defaultdict(list)
    for item in sample.items.all():
        by_cluster[(item.theme, item.cluster)].append(item)
    assert by_cluster
    saw_small = saw_large = False
    for items in by_cluster.values():
        size = items[0].cluster_size
        assert all(item.cluster_size == size for item in items)
        assert len(items) == min(3, size)
        for item in items:
            assert item.inclusion_probability == pytest.approx(min(3, size) / size)
        saw_small |= size <= 3
        saw_large |= size > 3
        assert sorted(item.rank for item in items) == list(range(len(items)))
    assert saw_large
    if saw_small:
        assert any(item.inclusion_probability == 1.0 for items in by_cluster.values() for item in items)


@pytest.mark.django_db
def test_k_per_theme_follows_the_budget_split_by_theme_size(veracity):
    sizes = Counter(
        Unit.objects.filter(campaign=veracity.campaign, level="sentence").values_list("theme", flat=True)
    )
    sample = draw_sample(criterion=veracity, budget=42, seed=0, per_cluster=3)
    expected = allocate_clusters(theme_sizes=dict(sizes), budget=42, per_cluster=3)
    assert sample.k_per_theme == expected
    assert sum(expected.values()) == 14
    assert expected["Finance"] > expected["RH"] > expected["IT"]
    for theme, k in expected.items():
        clusters = set(sample.items.filter(theme=theme).values_list("cluster", flat=True))
        assert clusters == set(range(k))
        sizes_in_theme = dict(sample.items.filter(theme=theme).values_list("cluster", "cluster_size"))
        assert sample.items.filter(theme=theme).count() == sum(min(3, n) for n in sizes_in_theme.values())
    summary = {row["theme"]: row for row in cluster_summary(sample=sample)}
    assert {theme: row["units"] for theme, row in summary.items()} == dict(sizes)


@pytest.mark.django_db
def test_per_theme_budget_fixes_that_themes_clusters_and_the_rest_is_shared(veracity):
    sample = draw_sample(criterion=veracity, budget=45, per_theme_budget={"IT": 12})
    assert sample.k_per_theme["IT"] == 4
    assert sample.k_per_theme["Finance"] + sample.k_per_theme["RH"] == 11
    assert sample.items.filter(theme="IT").count() == 12


@pytest.mark.django_db
def test_answer_level_criterion_samples_answers_and_embeds_their_text(relevance):
    sample = draw_sample(criterion=relevance, budget=9, seed=1)
    units = Unit.objects.filter(sample_items__sample=sample)
    assert units.count() == 9
    assert set(units.values_list("level", flat=True)) == {"answer"}
    assert all(item["sentence"] is None for item in sample_as_json(sample=sample)["items"])
    examples = [
        text
        for theme in cluster_summary(sample=sample)
        for c in theme["cluster_rows"]
        for text in c["examples"]
    ]
    assert examples and all(text.count("Selon le rapport") == 3 for text in examples)


@pytest.mark.django_db
def test_draw_records_its_parameters_and_reports_progress_up_to_one(veracity, manager):
    seen: list[float] = []
    sample = draw_sample(
        criterion=veracity, budget=30, seed=5, per_cluster=2, user=manager, progress=seen.append
    )
    assert (sample.status, sample.seed, sample.budget, sample.per_cluster) == ("done", 5, 30, 2)
    assert sample.embedding_backend == "tfidf"
    assert sample.created_by == manager
    assert sample.campaign_id == veracity.campaign_id
    assert seen == sorted(seen) and seen[-1] == 1.0


@pytest.mark.django_db
def test_sample_as_json_has_exactly_the_documented_shape(veracity):
    sample = draw_sample(criterion=veracity, budget=15, seed=2)
    data = sample_as_json(sample=sample)
    assert set(data) == {"sample", "criterion", "items"}
    assert data["sample"] == sample.pk
    assert data["criterion"] == "veracity"
    assert len(data["items"]) == 15
    item = (
        sample.items.select_related("unit__answer", "unit__sentence")
        .order_by("theme", "cluster", "rank")
        .first()
    )
    assert data["items"][0] == {
        "answer_id": item.unit.answer.external_id,
        "sentence": item.unit.sentence.position,
        "source": None,
        "theme": item.theme,
        "cluster": item.cluster,
        "cluster_size": item.cluster_size,
        "inclusion_probability": item.inclusion_probability,
    }
    keys = [(i["theme"], i["cluster"]) for i in data["items"]]
    assert keys == sorted(keys)


@pytest.mark.django_db
def test_cluster_summary_gives_sizes_drawn_counts_and_example_texts(veracity):
    sample = draw_sample(criterion=veracity, budget=30, seed=0)
    summary = cluster_summary(sample=sample, examples=2)
    assert [row["theme"] for row in summary] == ["Finance", "IT", "RH"]
    for row in summary:
        assert row["k"] == sample.k_per_theme[row["theme"]] == row["clusters"]
        assert row["drawn"] == sum(c["drawn"] for c in row["cluster_rows"])
        for cluster in row["cluster_rows"]:
            assert 1 <= len(cluster["examples"]) <= 2
            assert all(text.startswith("Selon le rapport") for text in cluster["examples"])
    assert sum(row["drawn"] for row in summary) == sample.items.count()


# Validation


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"budget": 2, "per_cluster": 3}, "budget"),
        ({"budget": 30, "per_cluster": 0}, "per_cluster"),
        ({"budget": 30, "per_theme_budget": {"Juridique": 6}}, "per_theme_budget"),
        ({"budget": 30, "seed": -1}, "seed"),
        ({"budget": 30, "backend": "word2vec"}, "backend"),
    ],
)
def test_invalid_draw_raises_naming_the_field_and_writes_nothing(veracity, arguments, field):
    before = counts()
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        draw_sample(criterion=veracity, **arguments)
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        create_pending_sample(criterion=veracity, **arguments)
    assert counts() == before


@pytest.mark.django_db
def test_criterion_without_units_of_its_level_is_refused(campaign):
    make_answer(campaign=campaign, sentences=[])
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    with pytest.raises(ValueError, match=r"^criterion: .*no sentence units"):
        draw_sample(criterion=veracity, budget=30)
    assert counts() == (0, 0)


# Top-up


@pytest.mark.django_db
def test_top_up_with_a_larger_budget_keeps_every_unit_and_their_labels(veracity, annotator):
    sample = draw_sample(criterion=veracity, budget=24, seed=4)
    before = dict(sample.items.values_list("unit_id", "id"))
    labelled = next(iter(before))
    label = Label.objects.create(
        unit_id=labelled, criterion=veracity, user=annotator, stage=Stage.LABEL, value=1
    )
    topped = top_up_sample(sample=sample, budget=48)
    assert topped.pk == sample.pk
    assert topped.budget == 48 and topped.status == "done"
    assert sum(topped.k_per_theme.values()) == 16
    after = dict(topped.items.values_list("unit_id", "id"))
    assert set(before) < set(after)
    # The same rows, updated in place.
    assert {unit: after[unit] for unit in before} == before
    assert Label.objects.filter(pk=label.pk, unit_id=labelled).exists()
    for item in topped.items.all():
        in_cluster = topped.items.filter(theme=item.theme, cluster=item.cluster).count()
        assert item.inclusion_probability == pytest.approx(in_cluster / item.cluster_size)


@pytest.mark.django_db
def test_top_up_with_more_per_cluster_equals_a_fresh_draw_with_the_same_k_and_that_m(veracity):
    sample = draw_sample(criterion=veracity, budget=30, seed=6, per_cluster=3)
    kept = set(sample.items.values_list("unit_id", flat=True))
    k = dict(sample.k_per_theme)
    topped = top_up_sample(sample=sample, per_cluster=4)
    assert topped.k_per_theme == k
    assert topped.per_cluster == 4
    fresh = draw_sample(
        criterion=veracity,
        budget=4 * sum(k.values()),
        seed=6,
        per_cluster=4,
        per_theme_budget={theme: 4 * clusters for theme, clusters in k.items()},
    )
    assert fresh.k_per_theme == k
    assert kept < set(topped.items.values_list("unit_id", flat=True))
    assert items_of(topped) == items_of(fresh)
    for item in topped.items.all():
        assert item.inclusion_probability == pytest.approx(min(4, item.cluster_size) / item.cluster_size)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"budget": 20}, "budget"),
        ({"per_cluster": 2}, "per_cluster"),
        ({}, "budget"),
        ({"budget": 48, "per_theme_budget": {"Juridique": 6}}, "per_theme_budget"),
    ],
)
def test_invalid_top_up_raises_naming_the_field_and_changes_nothing(veracity, arguments, field):
    sample = draw_sample(criterion=veracity, budget=24, seed=4)
    before = items_of(sample), counts()
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        top_up_sample(sample=sample, **arguments)
    with pytest.raises(ValueError, match=rf"^{field}\b"):
        request_top_up(sample=sample, **arguments)
    sample.refresh_from_db()
    assert (items_of(sample), counts()) == before
    assert (sample.budget, sample.per_cluster, sample.status) == (24, 3, "done")


@pytest.mark.django_db
def test_top_up_of_a_sample_still_being_drawn_is_refused(veracity):
    sample = create_pending_sample(criterion=veracity, budget=24)
    with pytest.raises(ValueError, match=r"^sample: .*pending"):
        top_up_sample(sample=sample, budget=48)
    with pytest.raises(ValueError, match=r"^sample: .*pending"):
        request_top_up(sample=sample, budget=48)


# Background path


@pytest.mark.django_db
def test_requested_sample_is_drawn_by_the_task_after_commit(
    veracity, manager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        sample = request_sample(criterion=veracity, budget=30, seed=7, user=manager)
        assert sample.status == "pending"
        assert not sample.items.exists()
    assert len(callbacks) == 1
    sample.refresh_from_db()
    assert (sample.status, sample.progress, sample.error) == ("done", 1.0, "")
    assert items_of(sample) == items_of(draw_sample(criterion=veracity, budget=30, seed=7))


@pytest.mark.django_db
def test_running_the_same_sample_twice_draws_it_once(veracity):
    sample = create_pending_sample(criterion=veracity, budget=30, seed=1)
    first = run_sample(sample_id=sample.pk)
    rows = items_of(first)
    second = run_sample(sample_id=sample.pk)
    assert first.status == second.status == "done"
    assert items_of(second) == rows
    assert SampleItem.objects.filter(sample=sample).count() == len(rows) > 0


@pytest.mark.django_db
def test_a_sample_claimed_by_another_worker_is_left_alone(veracity):
    sample = create_pending_sample(criterion=veracity, budget=30)
    Sample.objects.filter(pk=sample.pk).update(status=Sample.Status.RUNNING)
    assert run_sample(sample_id=sample.pk).status == "running"
    assert not SampleItem.objects.filter(sample=sample).exists()


@pytest.mark.django_db
def test_the_redelivered_task_takes_over_a_sample_whose_worker_died(veracity):
    sample = create_pending_sample(criterion=veracity, budget=30, seed=3)
    die_while_running(sample, ago=stale_after() + timedelta(seconds=1))
    draw_sample_task.apply(args=[sample.pk])
    sample.refresh_from_db()
    assert (sample.status, sample.progress, sample.error) == ("done", 1.0, "")
    assert items_of(sample) == items_of(draw_sample(criterion=veracity, budget=30, seed=3))


@pytest.mark.django_db
def test_a_redelivered_task_comes_back_when_a_live_claim_would_be_stale(veracity):
    sample = create_pending_sample(criterion=veracity, budget=30)
    die_while_running(sample, ago=timedelta(minutes=5))
    with pytest.raises(Retry) as retry:
        draw_sample_task.apply(args=[sample.pk])
    expected = (stale_after() - timedelta(minutes=5)).total_seconds()
    assert expected <= retry.value.when <= expected + 5
    sample.refresh_from_db()
    assert sample.status == "running" and not sample.items.exists()


@pytest.mark.django_db
def test_only_pending_or_running_samples_go_stale_and_only_after_the_time_limit(veracity, settings):
    settings.CELERY_TASK_TIME_LIMIT = 600
    sample = create_pending_sample(criterion=veracity, budget=30)
    now = timezone.now()
    assert not is_stale(sample=sample, now=now)
    assert is_stale(sample=sample, now=now + timedelta(seconds=600) + STALE_MARGIN)
    assert seconds_until_stale(sample=sample, now=now) is None
    done = draw_sample(criterion=veracity, budget=30)
    assert not is_stale(sample=done, now=now + timedelta(days=1))


@pytest.mark.django_db
def test_a_stale_sample_can_be_requested_again_and_a_live_one_cannot(
    veracity, django_capture_on_commit_callbacks
):
    sample = create_pending_sample(criterion=veracity, budget=30, seed=2)
    die_while_running(sample, ago=timedelta(minutes=1))
    sample.refresh_from_db()
    with pytest.raises(ValueError, match=r"^sample: .*running"):
        request_top_up(sample=sample)
    die_while_running(sample, ago=stale_after() + timedelta(minutes=1))
    sample.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        pending = request_top_up(sample=sample)
        assert pending.status == "pending" and pending.budget == 30
    assert len(callbacks) == 1
    sample.refresh_from_db()
    assert sample.status == "done"
    assert items_of(sample) == items_of(draw_sample(criterion=veracity, budget=30, seed=2))


@pytest.mark.django_db
def test_requested_top_up_keeps_units_and_is_computed_by_the_task(
    veracity, django_capture_on_commit_callbacks
):
    sample = draw_sample(criterion=veracity, budget=24, seed=4)
    kept = set(sample.items.values_list("unit_id", flat=True))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        pending = request_top_up(sample=sample, budget=48)
        assert (pending.status, pending.budget) == ("pending", 48)
    assert len(callbacks) == 1
    sample.refresh_from_db()
    assert sample.status == "done"
    units = set(sample.items.values_list("unit_id", flat=True))
    assert kept < units
    inline = top_up_sample(sample=draw_sample(criterion=veracity, budget=24, seed=4), budget=48)
    assert items_of(sample) == items_of(inline)


@pytest.mark.django_db
def test_openai_backend_embeds_through_the_configured_server(veracity, settings):
    with ScriptedLLMServer() as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "test"
        settings.OPENAI_EMBEDDING_MODEL = "scripted-embeddings"
        sample = draw_sample(criterion=veracity, budget=15, seed=0, backend="openai")
        again = draw_sample(criterion=veracity, budget=15, seed=0, backend="openai")
        sent = [call.body for call in server.calls if call.path.endswith("/embeddings")]
    assert sample.embedding_backend == "openai"
    assert sample.items.count() == 15
    assert items_of(sample) == items_of(again)
    assert {body["model"] for body in sent} == {"scripted-embeddings"}
    assert sum(len(body["input"]) for body in sent) == 2 * Unit.objects.filter(level="sentence").count()


@pytest.mark.django_db
def test_unreachable_embedding_server_fails_the_sample_with_the_error(veracity, settings):
    settings.OPENAI_BASE_URL = f"http://127.0.0.1:{closed_port()}/v1"
    settings.OPENAI_API_KEY = "test"
    settings.OPENAI_MAX_ATTEMPTS = 1
    sample = create_pending_sample(criterion=veracity, budget=15, backend="openai")
    failed = run_sample(sample_id=sample.pk)
    assert failed.status == "failed"
    assert "embedding server unavailable" in failed.error
    assert not failed.items.exists()
    assert run_sample(sample_id=sample.pk).status == "failed"


@pytest.mark.django_db
def test_failed_top_up_leaves_the_drawn_items_untouched_and_can_be_retried(veracity, settings):
    with ScriptedLLMServer() as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "test"
        settings.OPENAI_MAX_ATTEMPTS = 1
        sample = draw_sample(criterion=veracity, budget=24, seed=4, backend="openai")
        before = items_of(sample)
    request_top_up(sample=sample, budget=48)
    failed = run_sample(sample_id=sample.pk)
    assert failed.status == "failed" and failed.error
    assert items_of(failed) == before
    with ScriptedLLMServer() as server:
        settings.OPENAI_BASE_URL = server.base_url
        retried = top_up_sample(sample=failed, budget=48)
    assert retried.status == "done" and retried.error == ""
    assert {row[0] for row in before} < {row[0] for row in items_of(retried)}


# A real worker


@pytest.fixture
def worker(tmp_path):
    w = Worker(tmp_path=tmp_path)
    w.configure_producer()
    yield w
    w.stop()
    w.restore_producer()
    shutil.rmtree(tmp_path / "var", ignore_errors=True)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_draws_a_requested_sample(campaign, worker):
    make_corpus(campaign=campaign)
    veracity = Criterion.objects.get(campaign=campaign, name="veracity")
    sample = request_sample(criterion=veracity, budget=30, seed=7)
    worker.start()

    def finished() -> bool:
        sample.refresh_from_db()
        return sample.status in ("done", "failed")

    wait_for(finished, timeout=90, what=lambda: f"the sample to be drawn (worker log:\n{worker.log()})")
    assert sample.status == "done", sample.error
    assert sample.items.count() == 30
