"""Server-rendered SVG charts: valid XML, escaped text, one mark per value."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from django.utils.safestring import SafeString

from evaluation.reports.charts import PALETTE, grouped_bar_chart, interval_chart, line_chart

NS = {"svg": "http://www.w3.org/2000/svg"}
SVG = "{http://www.w3.org/2000/svg}"
EVIL = "<script>alert('x')</script> & co"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def by_class(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{SVG}{tag}") if cls in e.get("class", "").split()]


def bar_chart(**overrides) -> str:
    kwargs = {
        "groups": ["Finance", "RH", "IT"],
        "series": ["simple", "hard"],
        "values": {
            ("Finance", "simple"): (0.5, 0.25, 0.75),
            ("Finance", "hard"): (0.25, 0.1, 0.4),
            ("RH", "simple"): (1.0, 1.0, 1.0),
            ("RH", "hard"): None,
            ("IT", "simple"): (0.0, 0.0, 0.0),
            ("IT", "hard"): (0.8, 0.6, 1.0),
        },
        "title": "Response by theme",
    }
    kwargs.update(overrides)
    return grouped_bar_chart(**kwargs)


# Grouped bars -----------------------------------------------------------------------------------


def test_bar_chart_is_an_accessible_svg_that_parses_as_xml():
    svg = bar_chart()
    assert isinstance(svg, SafeString)
    root = parse(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    assert root.get("aria-label") == "Response by theme"
    assert root[0].tag == f"{SVG}title" and root[0].text == "Response by theme"


def test_bar_chart_draws_one_bar_and_one_error_bar_per_value():
    root = parse(bar_chart())
    assert len(by_class(root, "rect", "bar")) == 5  # six cells, one None
    assert len(by_class(root, "g", "errorbar")) == 5
    assert len(by_class(root, "g", "legend-item")) == 2
    labels = by_class(root, "text", "group-label")
    assert [label.find("svg:title", NS).text for label in labels] == ["Finance", "RH", "IT"]


def test_bars_take_one_colour_per_series_from_the_palette():
    root = parse(bar_chart())
    fills = [bar.get("fill") for bar in by_class(root, "rect", "bar")]
    assert fills == [PALETTE[0], PALETTE[1], PALETTE[0], PALETTE[0], PALETTE[1]]


def test_bar_heights_and_error_bars_are_proportional_to_the_rates():
    root = parse(bar_chart())
    bars = by_class(root, "rect", "bar")
    finance_simple, finance_hard, rh_simple = (float(b.get("height")) for b in bars[:3])
    assert finance_simple == pytest.approx(rh_simple / 2, abs=0.2)
    assert finance_hard == pytest.approx(rh_simple / 4, abs=0.2)
    # The (0.25, 0.75) error bar spans half the axis, as tall as the 0.5 bar.
    stem = by_class(root, "g", "errorbar")[0][0]
    assert float(stem.get("y2")) - float(stem.get("y1")) == pytest.approx(finance_simple, abs=0.2)


def test_axis_ticks_are_percentages_up_to_y_max():
    root = parse(bar_chart(y_max=0.5))
    assert [t.text for t in by_class(root, "text", "tick")] == ["0%", "12.5%", "25%", "37.5%", "50%"]
    bars = by_class(root, "rect", "bar")
    # Above y_max a bar is clipped to the top of the axis: 1.0 and 0.8 draw as tall as 0.5.
    assert float(bars[2].get("height")) == pytest.approx(float(bars[0].get("height")))


def test_bar_chart_escapes_every_text():
    svg = bar_chart(
        groups=[EVIL],
        series=['"quoted" series'],
        values={(EVIL, '"quoted" series'): (0.5, 0.4, 0.6)},
        title="<b>title</b>",
    )
    assert "<script" not in svg
    assert "<b>" not in svg
    root = parse(svg)
    assert root.get("aria-label") == "<b>title</b>"
    assert EVIL in "".join(root.itertext())
    assert '"quoted" series' in "".join(root.itertext())


@pytest.mark.parametrize(
    "overrides",
    [
        {"groups": [], "values": {}},
        {"series": []},
        {"values": {("Finance", "simple"): None}},
        {"values": {("Elsewhere", "simple"): (0.5, 0.4, 0.6)}},
    ],
)
def test_bar_chart_without_data_says_so(overrides):
    root = parse(bar_chart(**overrides))
    assert not by_class(root, "rect", "bar")
    assert [t.text for t in by_class(root, "text", "empty")] == ["No data"]
    assert root.get("role") == "img"


def test_long_legends_wrap_inside_the_width():
    series = [f"difficulty number {i}" for i in range(12)]
    root = parse(
        grouped_bar_chart(
            groups=["A"],
            series=series,
            values={("A", s): (0.5, 0.4, 0.6) for s in series},
            title="t",
            width=400,
        )
    )
    rects = [item[0] for item in by_class(root, "g", "legend-item")]
    assert len({r.get("y") for r in rects}) > 1
    assert all(float(r.get("x")) < 400 for r in rects)


# Intervals --------------------------------------------------------------------------------------


def interval_rows():
    return [
        {
            "label": "Finance",
            "estimates": [("human", 0.6, 0.4, 0.8), ("judge", 0.7, 0.65, 0.75), ("PPI++", 0.62, 0.5, 0.74)],
        },
        {"label": "RH", "estimates": [("human", None, None, None), ("judge", 0.9, 0.85, 0.95)]},
        {"label": "IT", "estimates": [("PPI++", 0.3, None, None)]},
    ]


def test_interval_chart_draws_one_point_per_estimate_and_a_bar_per_interval():
    svg = interval_chart(rows=interval_rows(), title="Veracity per theme")
    assert isinstance(svg, SafeString)
    root = parse(svg)
    assert root.get("role") == "img" and root.get("aria-label") == "Veracity per theme"
    assert len(by_class(root, "g", "estimate")) == 5  # the None mean is skipped
    assert len(by_class(root, "line", "interval")) == 4  # the IT point has no interval
    assert [t.get("class") for t in root.iter() if t.get("class") == "row-label"] == ["row-label"] * 3


def test_interval_chart_gives_each_series_its_own_marker_and_colour():
    root = parse(interval_chart(rows=interval_rows(), title="t"))
    legend = by_class(root, "g", "legend-item")
    markers = [item[0] for item in legend]
    assert [m.tag for m in markers] == [f"{SVG}circle", f"{SVG}rect", f"{SVG}polygon"]
    assert [m.get("fill") for m in markers] == list(PALETTE[:3])
    assert ["".join(item.itertext()) for item in legend] == ["human", "judge", "PPI++"]


def test_interval_positions_follow_the_values():
    root = parse(interval_chart(rows=interval_rows(), title="t", width=720))
    ticks = {t.text: float(t.get("x")) for t in by_class(root, "text", "tick")}
    zero, full = ticks["0%"], ticks["100%"]
    first = by_class(root, "line", "interval")[0]  # Finance, human: 0.4 to 0.8
    assert float(first.get("x1")) == pytest.approx(zero + 0.4 * (full - zero), abs=0.2)
    assert float(first.get("x2")) == pytest.approx(zero + 0.8 * (full - zero), abs=0.2)


def test_interval_chart_escapes_labels_and_series():
    svg = interval_chart(rows=[{"label": EVIL, "estimates": [(EVIL, 0.5, 0.4, 0.6)]}], title=EVIL)
    assert "<script" not in svg
    root = parse(svg)
    assert root.get("aria-label") == EVIL
    assert EVIL in "".join(root.itertext())


@pytest.mark.parametrize(
    "rows", [[], [{"label": "A", "estimates": []}], [{"label": "A", "estimates": [("h", None, None, None)]}]]
)
def test_interval_chart_without_data_says_so(rows):
    root = parse(interval_chart(rows=rows, title="t"))
    assert not by_class(root, "g", "estimate")
    assert [t.text for t in by_class(root, "text", "empty")] == ["No data"]


def test_interval_chart_refuses_an_empty_axis():
    with pytest.raises(ValueError):
        interval_chart(rows=interval_rows(), title="t", x_min=1.0, x_max=1.0)


def test_line_chart_escapes_names_breaks_lines_at_missing_points_and_says_no_data():
    svg = line_chart(
        series=[
            ("<b>measured</b>", [(1, 0.4), (2, float("nan")), (3, 0.2), (4, 0.1)]),
            ("predicted", [(1, 0.3)]),
        ],
        title="<script>x</script>",
        x_label="repetitions",
        y_label="width",
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&lt;b&gt;measured" in svg
    # The missing point at 2 leaves the first point alone: one line, from 3 to 4.
    assert svg.count("<polyline") == 1
    assert svg.count('class="point"') == 4
    parse(svg)
    empty = line_chart(series=[("a", [(1, float("nan"))])], title="t", x_label="x", y_label="y")
    assert "No data" in empty and "<polyline" not in empty


# In the reader's language ------------------------------------------------------------------------


def test_a_french_chart_writes_its_numbers_and_words_in_french():
    from django.utils import translation

    from evaluation.reports.charts import reliability_chart

    with translation.override("fr"):
        bars = parse(bar_chart())
        intervals = parse(interval_chart(rows=interval_rows(), title="t"))
        lines = parse(
            line_chart(series=[("mesuré", [(1, 0.125), (2, 0.1)])], title="t", x_label="x", y_label="y")
        )
        reliability = reliability_chart(points=[(0.25, 0.5, 3)], title="t", x_label="x", y_label="y")
        empty = parse(interval_chart(rows=[], title="t"))
    assert [t.text for t in by_class(bars, "text", "tick")] == [
        "0\u00a0%",
        "25\u00a0%",
        "50\u00a0%",
        "75\u00a0%",
        "100\u00a0%",
    ]
    tips = [t.text for t in bars.iter(f"{SVG}title")]
    assert "Finance, hard\u00a0: 25,0\u00a0% (intervalle de 10,0\u00a0% à 40,0\u00a0%)" in tips
    shown = " ".join(t.text or "" for t in intervals.iter(f"{SVG}title"))
    assert "(intervalle de 40,0\u00a0% à 80,0\u00a0%)" in shown and "interval " not in shown
    assert [t.text for t in lines.iter(f"{SVG}title")][-2:] == ["mesuré, 1: 12,5", "mesuré, 2: 10,0"]
    assert "25,0\u00a0% → 50,0\u00a0% (3)" in reliability
    assert [t.text for t in by_class(empty, "text", "empty")] == ["Aucune donnée"]
    for root in (bars, intervals, lines, empty):
        text = " ".join(root.itertext())
        assert not re.search(r"\d\.\d|\d%", text), text
