"""A stored sample for people and programs to read: as JSON, and per theme and cluster."""

from __future__ import annotations

from annotation.models import Level, Sample

# Keys of an item in sample_as_json, and where each comes from.
JSON_FIELDS = {
    "answer_id": "unit__answer__external_id",
    "sentence": "unit__sentence__position",
    "source": "unit__chunk__external_id",
    "theme": "theme",
    "cluster": "cluster",
    "cluster_size": "cluster_size",
    "inclusion_probability": "inclusion_probability",
}


def sample_as_json(*, sample: Sample) -> dict:
    """The sample as a JSON-ready dict, items ordered by theme, cluster and rank::

    {"sample": id, "criterion": name, "items": [{"answer_id", "sentence", "source", "theme",
    "cluster", "cluster_size", "inclusion_probability"}, ...]}

    ``answer_id`` is the answer's external id; ``sentence`` the sentence's position, None for
    answer-level units; ``source`` the cited chunk's id of a citation unit, else None.
    """
    rows = sample.items.order_by("theme", "cluster", "rank", "unit_id").values_list(*JSON_FIELDS.values())
    return {
        "sample": sample.pk,
        "criterion": sample.criterion.name,
        "items": [dict(zip(JSON_FIELDS, row, strict=True)) for row in rows],
    }


def cluster_summary(*, sample: Sample, examples: int = 3) -> list[dict]:
    """Per theme (sorted), what the sample holds, for people to read.

    Each entry: ``theme``, ``k`` (clusters asked for), ``clusters`` (found; fewer than K when the
    theme has fewer distinct texts), ``units`` (units in the theme when drawn: the sum of its
    cluster sizes), ``drawn``, and ``cluster_rows``: per cluster ``cluster``, ``size``, ``drawn``,
    ``inclusion_probability`` and ``examples`` (texts of up to ``examples`` drawn units, in rank
    order). Themes with no drawn unit are left out.
    """
    text_field = "unit__answer__text" if sample.criterion.level == Level.ANSWER else "unit__sentence__text"
    rows = sample.items.order_by("theme", "cluster", "rank", "unit_id").values_list(
        "theme", "cluster", "cluster_size", "inclusion_probability", text_field
    )
    themes: dict[str, dict[int, dict]] = {}
    for theme, cluster, size, probability, text in rows:
        entry = themes.setdefault(theme, {}).setdefault(
            cluster,
            {
                "cluster": cluster,
                "size": size,
                "drawn": 0,
                "inclusion_probability": probability,
                "examples": [],
            },
        )
        entry["drawn"] += 1
        if len(entry["examples"]) < examples:
            entry["examples"].append(text)
    summary = []
    for theme in sorted(themes):
        clusters = list(themes[theme].values())
        summary.append(
            {
                "theme": theme,
                "k": int(sample.k_per_theme.get(theme, 0)),
                "clusters": len(clusters),
                "units": sum(c["size"] for c in clusters),
                "drawn": sum(c["drawn"] for c in clusters),
                "cluster_rows": clusters,
            }
        )
    return summary
