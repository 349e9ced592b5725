"""Cluster allocation, the stratified draw, top-ups and design weights."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest

from annotation.sampling.design import (
    MINIBATCH_ABOVE,
    Draw,
    allocate_clusters,
    design_weights,
    draw_stratified,
    redraw_with_keep,
    top_up,
)

THEME_SIZES = {"Finance": 240, "IT": 45, "RH": 130}


def make_units(sizes: dict[str, int] = THEME_SIZES, *, seed: int = 1, dimensions: int = 8):
    """Units with sparse, non-contiguous ids; each theme's embeddings form a few Gaussian blobs."""
    rng = np.random.default_rng(seed)
    total = sum(sizes.values())
    ids = rng.choice(10 * total, size=total, replace=False) + 1
    themes, rows = [], []
    for theme, size in sizes.items():
        centres = rng.normal(scale=4.0, size=(6, dimensions))
        rows.append(centres[rng.integers(0, 6, size=size)] + rng.normal(size=(size, dimensions)))
        themes += [theme] * size
    return [int(i) for i in ids], themes, np.vstack(rows)


def draw(units, *, k, m=3, seed=7, previous=None):
    ids, themes, vectors = units
    arguments = dict(unit_ids=ids, themes=themes, embeddings=vectors, k_per_theme=k, per_cluster=m, seed=seed)
    if previous is None:
        return draw_stratified(**arguments)
    return redraw_with_keep(previous=previous, **arguments)


def by_cluster(draws: list[Draw]) -> dict[tuple[str, int], list[Draw]]:
    groups = defaultdict(list)
    for item in draws:
        groups[(item.theme, item.cluster)].append(item)
    return groups


K = {"Finance": 12, "IT": 4, "RH": 7}


# Allocation


def test_allocation_is_proportional_to_theme_sizes():
    assert allocate_clusters(theme_sizes={"A": 600, "B": 300, "C": 100}, budget=90, per_cluster=3) == {
        "A": 18,
        "B": 9,
        "C": 3,
    }


def test_allocation_rounds_by_largest_remainder():
    # 7 clusters: quotas 3.5, 2.1, 1.4 -> floors 3, 2, 1 and the one left goes to the largest remainder.
    assert allocate_clusters(theme_sizes={"A": 50, "B": 30, "C": 20}, budget=21, per_cluster=3) == {
        "A": 4,
        "B": 2,
        "C": 1,
    }


def test_allocation_never_exceeds_the_budget_and_bounds_every_theme():
    rng = np.random.default_rng(3)
    for _ in range(300):
        sizes = {f"t{i}": int(rng.integers(0, 3000)) for i in range(int(rng.integers(1, 8)))}
        sizes["t0"] = max(sizes["t0"], 1)
        m = int(rng.integers(1, 6))
        non_empty = sum(1 for size in sizes.values() if size)
        budget = int(rng.integers(non_empty * m, 2000 + non_empty * m))
        k = allocate_clusters(theme_sizes=sizes, budget=budget, per_cluster=m)
        assert set(k) == set(sizes)
        assert sum(k.values()) * m <= budget
        caps = {t: math.ceil(size / m) for t, size in sizes.items()}
        for theme, size in sizes.items():
            assert (k[theme] >= 1) if size else (k[theme] == 0)
            assert k[theme] <= caps[theme]
        # The budget is spent whole (to the last full cluster) unless every theme is at its ceiling.
        assert sum(k.values()) == min(budget // m, sum(caps.values()))


def test_allocation_gives_a_small_theme_one_cluster():
    assert allocate_clusters(theme_sizes={"big": 10_000, "tiny": 2}, budget=9, per_cluster=3) == {
        "big": 2,
        "tiny": 1,
    }


def test_allocation_caps_a_theme_at_ceil_size_over_m_and_gives_the_rest_to_others():
    # 102 clusters: in proportion B would take 100.6, but 100 clusters of 3 already cover its 300 units.
    k = allocate_clusters(theme_sizes={"A": 4, "B": 300}, budget=306, per_cluster=3)
    assert k == {"A": 2, "B": 100}


def test_allocation_spends_less_than_the_budget_when_every_theme_is_capped():
    assert allocate_clusters(theme_sizes={"A": 4, "B": 7}, budget=300, per_cluster=3) == {"A": 2, "B": 3}


def test_allocation_gives_an_empty_theme_no_cluster():
    assert allocate_clusters(theme_sizes={"A": 90, "empty": 0}, budget=9, per_cluster=3) == {
        "A": 3,
        "empty": 0,
    }


def test_explicit_theme_budgets_are_used_and_the_rest_is_split_among_the_others():
    k = allocate_clusters(
        theme_sizes={"A": 600, "B": 300, "C": 100}, budget=60, per_cluster=3, per_theme_budget={"A": 30}
    )
    # A: 30 // 3; the 30 left make 10 clusters for B and C (7.5 and 2.5: the tie goes to the larger theme).
    assert k == {"A": 10, "B": 8, "C": 2}


def test_explicit_theme_budgets_for_every_theme_including_zero():
    k = allocate_clusters(
        theme_sizes={"A": 600, "B": 300, "C": 10},
        budget=100,
        per_cluster=3,
        per_theme_budget={"A": 31, "B": 0, "C": 60},
    )
    assert k == {"A": 10, "B": 0, "C": 4}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (dict(theme_sizes={"A": 10}, budget=2, per_cluster=3), "below per_cluster"),
        (dict(theme_sizes={"A": 10}, budget=9, per_cluster=0), "per_cluster"),
        (dict(theme_sizes={"A": 10, "B": 10, "C": 10}, budget=8, per_cluster=3), "at least 9"),
        (dict(theme_sizes={"A": -1}, budget=9), r"theme_sizes\[.A.\]: must be at least 0"),
        (dict(theme_sizes={"A": 0, "B": 0}, budget=9), "nothing to sample"),
        (dict(theme_sizes={"A": 10}, budget=9, per_theme_budget={"Z": 3}), "unknown themes 'Z'"),
        (dict(theme_sizes={"A": 10, "B": 10}, budget=9, per_theme_budget={"A": 12}), "more than the budget"),
        (dict(theme_sizes={"A": 10, "B": 10}, budget=9, per_theme_budget={"A": 2}), "not enough for one"),
        (
            dict(theme_sizes={"A": 10, "B": 10}, budget=9, per_theme_budget={"A": 9}),
            "0 labels for the 1 non-empty themes without their own budget",
        ),
    ],
)
def test_allocation_rejects_impossible_requests_with_a_clear_message(arguments, message):
    with pytest.raises(ValueError, match=message):
        allocate_clusters(**arguments)


# The draw


def test_same_seed_gives_identical_draws():
    units = make_units()
    assert draw(units, k=K, seed=11) == draw(units, k=K, seed=11)


def test_different_seed_gives_different_draws():
    units = make_units()
    first = {d.unit_id for d in draw(units, k=K, seed=11)}
    second = {d.unit_id for d in draw(units, k=K, seed=12)}
    assert first != second


def test_input_order_does_not_change_the_draws():
    ids, themes, vectors = make_units()
    order = np.random.default_rng(5).permutation(len(ids))
    shuffled = ([ids[i] for i in order], [themes[i] for i in order], vectors[order])
    assert draw(shuffled, k=K) == draw((ids, themes, vectors), k=K)


def test_each_cluster_gives_m_units_and_cluster_sizes_add_up_to_the_theme_size():
    units = make_units()
    draws = draw(units, k=K, m=3)
    clusters = by_cluster(draws)
    for theme, size in THEME_SIZES.items():
        sizes = {c: group[0].cluster_size for (t, c), group in clusters.items() if t == theme}
        assert sorted(sizes) == list(range(K[theme]))
        assert sum(sizes.values()) == size
    for group in clusters.values():
        size = group[0].cluster_size
        assert len(group) == min(3, size)
        assert [d.rank for d in group] == list(range(len(group)))
        assert all(d.cluster_size == size for d in group)


def test_inclusion_probability_is_m_over_cluster_size_and_one_for_small_clusters():
    units = make_units({"A": 5, "B": 300})
    draws = draw(units, k={"A": 3, "B": 10}, m=3)
    for item in draws:
        expected = 1.0 if item.cluster_size <= 3 else 3 / item.cluster_size
        assert item.inclusion_probability == pytest.approx(expected)
    # Theme A: 5 units in 3 non-empty clusters, so none holds more than 3: every unit is drawn, surely.
    assert [d.inclusion_probability for d in draws if d.theme == "A"] == [1.0] * 5
    assert any(d.inclusion_probability < 1.0 for d in draws if d.theme == "B")


def test_design_weights_of_a_theme_add_up_to_its_size():
    draws = draw(make_units(), k=K, m=3)
    for theme, size in THEME_SIZES.items():
        assert sum(1 / d.inclusion_probability for d in draws if d.theme == theme) == pytest.approx(size)


def test_clusters_are_numbered_by_their_smallest_unit_id():
    units = make_units()
    # Drawing more than any cluster holds reveals every cluster's full membership.
    everything = draw(units, k=K, m=10_000)
    assert len(everything) == sum(THEME_SIZES.values())
    for theme in THEME_SIZES:
        smallest = [
            min(d.unit_id for d in group)
            for (t, _), group in sorted(by_cluster(everything).items())
            if t == theme
        ]
        assert smallest == sorted(smallest)
    assert all(d.inclusion_probability == 1.0 for d in everything)


def test_a_larger_m_extends_each_cluster_with_the_same_permutation():
    units = make_units()
    three, five = draw(units, k=K, m=3), draw(units, k=K, m=5)
    kept = {(d.unit_id, d.cluster, d.rank) for d in five if d.rank < 3}
    assert kept == {(d.unit_id, d.cluster, d.rank) for d in three}


def test_adding_a_theme_or_changing_another_themes_k_leaves_a_theme_unchanged():
    base = make_units({"A": 150, "B": 90}, seed=2)
    extra = make_units({"C": 60}, seed=9)
    ids_c = [i + 10_000 for i in extra[0]]
    wider = (base[0] + ids_c, base[1] + extra[1], np.vstack([base[2], extra[2]]))

    only_a = [d for d in draw(base, k={"A": 8, "B": 5}) if d.theme == "A"]
    assert only_a == [d for d in draw(wider, k={"A": 8, "B": 5, "C": 4}) if d.theme == "A"]
    assert only_a == [d for d in draw(base, k={"A": 8, "B": 9}) if d.theme == "A"]


def test_a_theme_with_k_zero_is_left_out():
    draws = draw(make_units(), k={"Finance": 5, "IT": 0, "RH": 3})
    assert {d.theme for d in draws} == {"Finance", "RH"}


def test_duplicate_embeddings_give_fewer_clusters_without_error():
    ids = list(range(1, 13))
    vectors = np.zeros((12, 4))
    vectors[10:, 0] = 1.0  # ten identical rows (blank texts), two others
    draws = draw_stratified(
        unit_ids=ids, themes=["A"] * 12, embeddings=vectors, k_per_theme={"A": 4}, per_cluster=3, seed=0
    )
    sizes = {d.cluster: d.cluster_size for d in draws}
    assert sorted(sizes) == list(range(len(sizes)))
    assert len(sizes) < 4
    assert sum(sizes.values()) == 12


def test_a_theme_above_the_minibatch_threshold_is_drawn_deterministically():
    n = MINIBATCH_ABOVE + 1
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(n, 4)) + rng.integers(0, 5, size=(n, 1)) * 3.0
    arguments = dict(
        unit_ids=range(n), themes=["A"] * n, embeddings=vectors, k_per_theme={"A": 6}, per_cluster=3, seed=4
    )
    first = draw_stratified(**arguments)
    assert first == draw_stratified(**arguments)
    assert len(first) == 18
    assert sum({d.cluster: d.cluster_size for d in first}.values()) == n


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda ids, themes, vectors, k: (ids[:-1], themes, vectors, k), "themes"),
        (lambda ids, themes, vectors, k: (ids, themes, vectors[:-1], k), "embeddings: shape"),
        (
            lambda ids, themes, vectors, k: ([ids[0]] + ids[1:-1] + [ids[0]], themes, vectors, k),
            "more than once",
        ),
        (lambda ids, themes, vectors, k: (ids, themes, vectors * np.nan, k), "NaN"),
        (
            lambda ids, themes, vectors, k: (ids, themes, vectors, {"Finance": 3, "RH": 3}),
            "no K for themes 'IT'",
        ),
        (lambda ids, themes, vectors, k: (ids, themes, vectors, {**k, "IT": 46}), "46 clusters for 45 units"),
        (lambda ids, themes, vectors, k: (ids, themes, vectors, {**k, "Legal": 2}), "2 clusters for 0 units"),
    ],
)
def test_inconsistent_inputs_are_rejected(change, message):
    ids, themes, vectors = make_units()
    ids, themes, vectors, k = change(ids, themes, vectors, K)
    with pytest.raises(ValueError, match=message):
        draw_stratified(unit_ids=ids, themes=themes, embeddings=vectors, k_per_theme=k, per_cluster=3, seed=0)


def test_per_cluster_must_be_positive():
    ids, themes, vectors = make_units()
    with pytest.raises(ValueError, match="per_cluster"):
        draw_stratified(unit_ids=ids, themes=themes, embeddings=vectors, k_per_theme=K, per_cluster=0, seed=0)


# Top-ups


def call_top_up(units, *, previous, k, m, seed=7):
    ids, themes, vectors = units
    return top_up(
        previous=previous,
        unit_ids=ids,
        themes=themes,
        embeddings=vectors,
        k_per_theme=k,
        per_cluster=m,
        seed=seed,
    )


def test_top_up_with_more_per_cluster_adds_the_next_ranks_and_keeps_the_old_draws():
    units = make_units()
    previous = draw(units, k=K, m=2)
    added = call_top_up(units, previous=previous, k=K, m=4)
    assert not {d.unit_id for d in added} & {d.unit_id for d in previous}
    assert {d.rank for d in added} == {2, 3}
    updated = draw(units, k=K, m=4, previous=previous)
    assert updated == draw(units, k=K, m=4)
    assert sorted(updated, key=lambda d: d.unit_id) == sorted(
        [d for d in updated if d.unit_id in {p.unit_id for p in previous}] + added, key=lambda d: d.unit_id
    )
    old = {(d.unit_id, d.cluster, d.rank) for d in previous}
    assert old <= {(d.unit_id, d.cluster, d.rank) for d in updated}
    for item in updated:
        assert item.inclusion_probability == pytest.approx(min(4, item.cluster_size) / item.cluster_size)


def test_top_up_with_more_clusters_keeps_every_previous_unit():
    units = make_units()
    previous = draw(units, k=K, m=3)
    more = {"Finance": 20, "IT": 9, "RH": 12}
    updated = draw(units, k=more, m=3, previous=previous)
    added = call_top_up(units, previous=previous, k=more, m=3)

    previous_ids = {d.unit_id for d in previous}
    assert previous_ids <= {d.unit_id for d in updated}
    assert {d.unit_id for d in added} == {d.unit_id for d in updated} - previous_ids
    assert len(updated) == len({d.unit_id for d in updated})
    for group in by_cluster(updated).values():
        size = group[0].cluster_size
        kept = [d for d in group if d.unit_id in previous_ids]
        assert len(group) == max(len(kept), min(3, size))
        # Previous units come first; fresh units only where fewer than m were already drawn.
        assert [d.unit_id in previous_ids for d in group] == [True] * len(kept) + [False] * (
            len(group) - len(kept)
        )
        assert all(d.inclusion_probability == pytest.approx(len(group) / size) for d in group)
    for theme, size in THEME_SIZES.items():
        clusters = {c: g[0].cluster_size for (t, c), g in by_cluster(updated).items() if t == theme}
        assert sorted(clusters) == list(range(more[theme]))
        assert sum(clusters.values()) == size


def test_redraw_with_keep_is_deterministic_and_equals_the_draw_without_previous_units():
    units = make_units()
    previous = draw(units, k=K, m=3)
    more = {"Finance": 15, "IT": 6, "RH": 9}
    assert draw(units, k=more, previous=previous) == draw(units, k=more, previous=previous)
    assert draw(units, k=more, previous=[]) == draw(units, k=more)


def test_top_up_keeps_units_whose_theme_was_not_topped_up():
    units = make_units()
    previous = draw(units, k=K, m=3)
    updated = draw(units, k={**K, "Finance": 18}, m=3, previous=previous)
    assert [d for d in updated if d.theme != "Finance"] == [d for d in previous if d.theme != "Finance"]


def test_redraw_rejects_previous_units_that_vanished_or_changed_theme():
    ids, themes, vectors = make_units()
    previous = draw((ids, themes, vectors), k=K)
    gone = previous[0].unit_id
    keep = [i for i, unit in enumerate(ids) if unit != gone]
    with pytest.raises(ValueError, match=f"unit {gone} is not among unit_ids"):
        draw(([ids[i] for i in keep], [themes[i] for i in keep], vectors[keep]), k=K, previous=previous)
    moved = previous[0]
    relabelled = [
        ("IT" if moved.theme != "IT" else "RH") if unit == moved.unit_id else t
        for unit, t in zip(ids, themes, strict=True)
    ]
    with pytest.raises(ValueError, match="was drawn in theme"):
        draw((ids, relabelled, vectors), k=K, previous=previous)
    with pytest.raises(ValueError, match="previous draws to keep"):
        draw((ids, themes, vectors), k={**K, previous[0].theme: 0}, previous=previous)


def test_asking_fewer_per_cluster_never_drops_a_previous_unit():
    units = make_units()
    previous = draw(units, k=K, m=3)
    assert draw(units, k=K, m=1, previous=previous) == previous


# Design weights


def test_design_weights_are_inverse_inclusion_probabilities():
    np.testing.assert_allclose(design_weights(inclusion_probabilities=[0.5, 1.0, 0.25]), [2.0, 1.0, 4.0])


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan")])
def test_design_weights_reject_probabilities_outside_zero_one(bad):
    with pytest.raises(ValueError, match=r"inclusion_probabilities\[1\]"):
        design_weights(inclusion_probabilities=[0.5, bad])
