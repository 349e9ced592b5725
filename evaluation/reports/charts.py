"""Server-rendered SVG charts: no JavaScript, no CDN, readable without colour.

Every text that reaches the SVG (titles, group and series names) goes through
``django.utils.html.escape``; numbers and the charts' own words are written in the reader's
language (``annotation.page_numbers``: ``12,3 %`` in French), as the page around them.
The result is marked safe only once assembled from escaped parts, so a theme called
``<script>`` stays text.

Its length is three kinds of chart (intervals per group, lines over time, reliability), each
drawing its own axes from the same escaped parts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from annotation.page_numbers import number, pct, percent_text, plain, rate_with_interval
from inference.numbers import is_finite

# Okabe-Ito, ordered for contrast on white; black is left out so that error bars stay visible.
PALETTE: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442")
MARKERS: tuple[str, ...] = ("circle", "square", "diamond", "triangle", "triangle-down", "cross")
INK = "#1d1f21"
MUTED = "#5f6368"
GRID = "#d9d9d4"
CHAR_W = 6.6  # average advance of a 12px sans-serif character, for layout and clipping

Value = tuple[float, float, float] | None


def _f(x: float) -> str:
    return f"{x:.1f}"


def _tick_label(x: float) -> str:
    return percent_text(f"{x * 100:.0f}" if abs(x * 100 - round(x * 100)) < 1e-9 else f"{x * 100:.1f}")


def _y_gridlines(
    *, left: float, plot_w: float, y_max: float, y_of: Callable[[float], float], label: Callable[[float], str]
) -> list[str]:
    """Five horizontal grid lines from 0 to ``y_max``, each with its tick ``label(v)`` left of
    the plot."""
    out = []
    for i in range(5):
        v = y_max * i / 4
        y = y_of(v)
        out.append(
            f'<line class="gridline" x1="{_f(left)}" x2="{_f(left + plot_w)}" y1="{_f(y)}" y2="{_f(y)}" '
            f'stroke="{GRID}"/>'
            f'<text class="tick" x="{_f(left - 6)}" y="{_f(y + 4)}" text-anchor="end" fill="{MUTED}">'
            f"{label(v)}</text>"
        )
    return out


def _clip(text: str, max_chars: int) -> str:
    max_chars = max(2, max_chars)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _open(*, width: int, height: int, title: str) -> list[str]:
    t = escape(title)
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="{t}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'font-family="system-ui, sans-serif" font-size="12">',
        f"<title>{t}</title>",
        # Cut with an ellipsis to the chart's width (14px bold: about 7.7px a character); the
        # whole title stays in <title> and aria-label.
        f'<text class="chart-title" x="8" y="18" font-size="14" font-weight="600" fill="{INK}">'
        f"{escape(_clip(title, int((width - 16) / (CHAR_W * 14 / 12))))}</text>",
    ]


def _empty(*, width: int, height: int, title: str) -> SafeString:
    parts = _open(width=width, height=height, title=title)
    parts.append(
        f'<text class="empty" x="{width / 2:.1f}" y="{height / 2:.1f}" text-anchor="middle" '
        f'fill="{MUTED}">{escape(gettext("No data"))}</text>'
    )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text above went through escape()


def _legend_layout(*, names: Sequence[str], width: int, x0: float, y0: float) -> list[tuple[float, float]]:
    """Top-left corner of each legend entry, wrapping onto new lines when the width runs out."""
    positions = []
    x, y = x0, y0
    for name in names:
        w = 18 + CHAR_W * min(len(name), 30) + 14
        if x > x0 and x + w > width - 8:
            x, y = x0, y + 18
        positions.append((x, y))
        x += w
    return positions


def _points(*xy: tuple[float, float]) -> str:
    return " ".join(f"{_f(x)},{_f(y)}" for x, y in xy)


def _marker(shape: str, *, cx: float, cy: float, r: float, colour: str) -> str:
    stroke = f'fill="{colour}" stroke="{INK}" stroke-width="0.8"'
    k = r * 1.3
    if shape == "square":
        return (
            f'<rect class="marker" x="{_f(cx - r)}" y="{_f(cy - r)}" '
            f'width="{_f(2 * r)}" height="{_f(2 * r)}" {stroke}/>'
        )
    if shape == "diamond":
        pts = _points((cx, cy - k), (cx + k, cy), (cx, cy + k), (cx - k, cy))
        return f'<polygon class="marker" points="{pts}" {stroke}/>'
    if shape == "triangle":
        pts = _points((cx, cy - k), (cx + r * 1.2, cy + r), (cx - r * 1.2, cy + r))
        return f'<polygon class="marker" points="{pts}" {stroke}/>'
    if shape == "triangle-down":
        pts = _points((cx, cy + k), (cx + r * 1.2, cy - r), (cx - r * 1.2, cy - r))
        return f'<polygon class="marker" points="{pts}" {stroke}/>'
    if shape == "cross":
        d = f"M{_points((cx - r, cy - r), (cx + r, cy + r))}M{_points((cx - r, cy + r), (cx + r, cy - r))}"
        return f'<path class="marker" d="{d}" stroke="{colour}" stroke-width="2.5" fill="none"/>'
    return f'<circle class="marker" cx="{_f(cx)}" cy="{_f(cy)}" r="{_f(r)}" {stroke}/>'


def grouped_bar_chart(
    *,
    groups: list[str],
    series: list[str],
    values: Mapping[tuple[str, str], Value],
    title: str,
    y_max: float = 1.0,
    width: int = 720,
    height: int = 300,
) -> SafeString:
    """A grouped bar chart of rates as a safe SVG string.

    One cluster of bars per group (e.g. theme), one bar per series (e.g. difficulty) coloured
    from the Okabe-Ito palette, each with its (lo, hi) error bar; ``values[(group, series)]`` is
    (rate, lo, hi) or None for no bar. The y axis runs from 0 to ``y_max`` with percent ticks;
    taller values are clipped. With no group, no series or no value the chart says "No data"
    (in the reader's language, as every word and number of the charts).
    Colours repeat after seven series.
    """
    if y_max <= 0:
        raise ValueError("y_max must be positive")
    drawable = {
        key: v
        for key, v in values.items()
        if v is not None and is_finite(*v) and key[0] in groups and key[1] in series
    }
    if not groups or not series or not drawable:
        return _empty(width=width, height=height, title=title)

    left, right, bottom = 52.0, 12.0, 34.0
    legend = _legend_layout(names=series, width=width, x0=left, y0=30)
    top = legend[-1][1] + 26
    plot_w = max(10.0, width - left - right)
    plot_h = max(10.0, height - top - bottom)
    base = top + plot_h

    def y_of(v: float) -> float:
        return base - min(max(v, 0.0), y_max) / y_max * plot_h

    parts = _open(width=width, height=height, title=title)
    for i, name in enumerate(series):
        x, y = legend[i]
        colour = PALETTE[i % len(PALETTE)]
        parts.append(
            f'<g class="legend-item"><rect x="{_f(x)}" y="{_f(y)}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{_f(x + 18)}" y="{_f(y + 10)}" fill="{INK}">{escape(_clip(name, 30))}</text></g>'
        )
    parts.extend(_y_gridlines(left=left, plot_w=plot_w, y_max=y_max, y_of=y_of, label=_tick_label))
    parts.append(
        f'<line class="axis" x1="{_f(left)}" x2="{_f(left)}" y1="{_f(top)}" y2="{_f(base)}" '
        f'stroke="{MUTED}"/>'
        f'<line class="axis" x1="{_f(left)}" x2="{_f(left + plot_w)}" y1="{_f(base)}" y2="{_f(base)}" '
        f'stroke="{MUTED}"/>'
    )

    band = plot_w / len(groups)
    bar_w = band * 0.8 / len(series)
    for gi, group in enumerate(groups):
        g_x = left + gi * band
        label = escape(_clip(group, int(band / CHAR_W)))
        parts.append(
            f'<text class="group-label" x="{_f(g_x + band / 2)}" y="{_f(base + 18)}" text-anchor="middle" '
            f'fill="{INK}"><title>{escape(group)}</title>{label}</text>'
        )
        for si, name in enumerate(series):
            value = drawable.get((group, name))
            if value is None:
                continue
            rate, lo, hi = value
            lo, hi = min(lo, hi), max(lo, hi)
            x = g_x + band * 0.1 + si * bar_w
            y = y_of(rate)
            tip = escape(rate_with_interval(f"{group}, {name}", rate, lo, hi))
            parts.append(
                f'<rect class="bar" x="{_f(x + 1)}" y="{_f(y)}" width="{_f(max(bar_w - 2, 1))}" '
                f'height="{_f(base - y)}" fill="{PALETTE[si % len(PALETTE)]}"><title>{tip}</title></rect>'
            )
            cx, cap = x + bar_w / 2, min(6.0, bar_w / 4)
            y_lo, y_hi = y_of(lo), y_of(hi)
            parts.append(
                f'<g class="errorbar" stroke="{INK}" stroke-width="1.5">'
                f'<line x1="{_f(cx)}" x2="{_f(cx)}" y1="{_f(y_hi)}" y2="{_f(y_lo)}"/>'
                f'<line x1="{_f(cx - cap)}" x2="{_f(cx + cap)}" y1="{_f(y_hi)}" y2="{_f(y_hi)}"/>'
                f'<line x1="{_f(cx - cap)}" x2="{_f(cx + cap)}" y1="{_f(y_lo)}" y2="{_f(y_lo)}"/></g>'
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text above went through escape()


def interval_chart(
    *,
    rows: Sequence[Mapping],
    title: str,
    x_min: float = 0.0,
    x_max: float = 1.0,
    width: int = 720,
    label_width: float = 160.0,
) -> SafeString:
    """Point estimates with horizontal interval bars, one line per row, as a safe SVG string.

    ``rows`` are ``{"label": str, "estimates": [(series_name, mean, lo, hi), ...]}``; every
    series (in order of first appearance) has its own colour and marker shape, so the chart
    reads without colour. The x axis runs from ``x_min`` to ``x_max`` with percent ticks;
    values outside are clipped; an estimate whose mean is None or not finite is skipped, and
    lo/hi of None draw the point alone. The height follows from the number of rows; the rows'
    labels take ``label_width`` pixels (cut with an ellipsis beyond), so that a chart drawn 360
    pixels wide for a phone keeps its plot and its 12-pixel text.
    """
    if x_max <= x_min:
        raise ValueError("x_max must be greater than x_min")
    series: list[str] = []
    for row in rows:
        for name, *_ in row.get("estimates", ()):
            if name not in series:
                series.append(name)
    drawable = any(
        mean is not None and is_finite(mean) for row in rows for _, mean, *_ in row.get("estimates", ())
    )
    row_h = max(26.0, 12.0 * len(series) + 12)
    label_w = label_width
    if not rows or not drawable:
        return _empty(width=width, height=140, title=title)

    left, right, bottom = label_w + 12, 24.0, 36.0  # room for the last tick, "100 %" in French
    legend = _legend_layout(names=series, width=width, x0=left, y0=30)
    top = legend[-1][1] + 26
    plot_w = max(10.0, width - left - right)
    height = int(top + row_h * len(rows) + bottom)
    base = top + row_h * len(rows)

    def x_of(v: float) -> float:
        return left + (min(max(v, x_min), x_max) - x_min) / (x_max - x_min) * plot_w

    parts = _open(width=width, height=height, title=title)
    for i, name in enumerate(series):
        x, y = legend[i]
        parts.append(
            '<g class="legend-item">'
            + _marker(MARKERS[i % len(MARKERS)], cx=x + 6, cy=y + 6, r=4.5, colour=PALETTE[i % len(PALETTE)])
            + f'<text x="{_f(x + 18)}" y="{_f(y + 10)}" fill="{INK}">{escape(_clip(name, 30))}</text></g>'
        )
    for i in range(5):
        v = x_min + (x_max - x_min) * i / 4
        x = x_of(v)
        parts.append(
            f'<line class="gridline" x1="{_f(x)}" x2="{_f(x)}" y1="{_f(top)}" y2="{_f(base)}" '
            f'stroke="{GRID}"/>'
            f'<text class="tick" x="{_f(x)}" y="{_f(base + 16)}" text-anchor="middle" fill="{MUTED}">'
            f"{_tick_label(v)}</text>"
        )
    parts.append(
        f'<line class="axis" x1="{_f(left)}" x2="{_f(left + plot_w)}" y1="{_f(base)}" y2="{_f(base)}" '
        f'stroke="{MUTED}"/>'
    )
    for ri, row in enumerate(rows):
        label = str(row.get("label", ""))
        row_top = top + ri * row_h
        # A few pixels short of the labels' width: CHAR_W is an average, and a long label of wide
        # letters must not run out of the chart's left edge.
        shown = _clip(label, int((label_w - 8) / CHAR_W))
        parts.append(
            f'<text class="row-label" x="{_f(label_w)}" y="{_f(row_top + row_h / 2 + 4)}" text-anchor="end" '
            f'fill="{INK}"><title>{escape(label)}</title>{escape(shown)}</text>'
        )
        for name, mean, lo, hi in row.get("estimates", ()):
            if mean is None or not is_finite(mean):
                continue
            si = series.index(name)
            colour = PALETTE[si % len(PALETTE)]
            y = row_top + (si + 1) * row_h / (len(series) + 1)
            has_interval = lo is not None and hi is not None and is_finite(lo, hi)
            tip = rate_with_interval(f"{label}, {name}", mean, lo, hi)
            g = [f'<g class="estimate"><title>{escape(tip)}</title>']
            if has_interval:
                g.append(
                    f'<line class="interval" x1="{_f(x_of(min(lo, hi)))}" x2="{_f(x_of(max(lo, hi)))}" '
                    f'y1="{_f(y)}" y2="{_f(y)}" stroke="{colour}" stroke-width="2.5"/>'
                )
            g.append(_marker(MARKERS[si % len(MARKERS)], cx=x_of(mean), cy=y, r=4.5, colour=colour))
            g.append("</g>")
            parts.append("".join(g))
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text above went through escape()


def reliability_chart(
    *, points: Sequence[tuple[float, float, int]], title: str, x_label: str, y_label: str, size: int = 320
) -> SafeString:
    """A reliability diagram as a safe SVG string: the diagonal (perfect calibration) and one
    marker per bin at (mean predicted probability, observed share), its area growing with the
    bin's count. ``points`` are ``(mean_probability, observed, count)``; both axes run 0-100%."""
    if not points:
        return _empty(width=size, height=size, title=title)
    left, top, right, bottom = 52.0, 34.0, 24.0, 44.0
    plot = size - left - right
    height = int(top + plot + bottom)
    base = top + plot

    def x_of(v: float) -> float:
        return left + min(max(v, 0.0), 1.0) * plot

    def y_of(v: float) -> float:
        return base - min(max(v, 0.0), 1.0) * plot

    parts = _open(width=size, height=height, title=title)
    for i in range(5):
        v = i / 4
        parts.append(
            f'<line class="gridline" x1="{_f(x_of(v))}" x2="{_f(x_of(v))}" y1="{_f(top)}" y2="{_f(base)}" '
            f'stroke="{GRID}"/><line class="gridline" x1="{_f(left)}" x2="{_f(left + plot)}" '
            f'y1="{_f(y_of(v))}" y2="{_f(y_of(v))}" stroke="{GRID}"/>'
            f'<text class="tick" x="{_f(x_of(v))}" y="{_f(base + 16)}" text-anchor="middle" fill="{MUTED}">'
            f"{_tick_label(v)}</text>"
            f'<text class="tick" x="{_f(left - 6)}" y="{_f(y_of(v) + 4)}" text-anchor="end" fill="{MUTED}">'
            f"{_tick_label(v)}</text>"
        )
    parts.append(
        f'<line class="diagonal" x1="{_f(x_of(0))}" y1="{_f(y_of(0))}" x2="{_f(x_of(1))}" y2="{_f(y_of(1))}" '
        f'stroke="{MUTED}" stroke-dasharray="4 3"/>'
        f'<text class="axis-label" x="{_f(left + plot / 2)}" y="{_f(base + 34)}" text-anchor="middle" '
        f'fill="{INK}">{escape(x_label)}</text>'
        f'<text class="axis-label" transform="translate(14 {_f(top + plot / 2)}) rotate(-90)" '
        f'text-anchor="middle" fill="{INK}">{escape(y_label)}</text>'
    )
    largest = max(count for _, _, count in points) or 1
    line = []
    for mean, observed, count in points:
        if not is_finite(mean, observed):
            continue
        r = 3.0 + 6.0 * math.sqrt(count / largest)
        line.append((x_of(mean), y_of(observed)))
        tip = f"{pct(mean)} → {pct(observed)} ({count})"
        parts.append(
            f'<g class="bin"><title>{escape(tip)}</title>'
            + _marker("circle", cx=x_of(mean), cy=y_of(observed), r=r, colour=PALETTE[0])
            + "</g>"
        )
    if len(line) > 1:
        parts.insert(
            -len(line),
            f'<polyline class="reliability" points="{_points(*line)}" fill="none" stroke="{PALETTE[0]}"/>',
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text above went through escape()


def line_chart(
    *,
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    title: str,
    x_label: str,
    y_label: str,
    width: int = 720,
    height: int = 320,
) -> SafeString:
    """Lines of (x, y) points as a safe SVG string: whole-number x (such as a number of
    repetitions) and y a width of rates, ticked in percentage points from 0 to the largest y.

    ``series`` are ``(name, [(x, y), ...])``; each has its colour, marker shape and dash pattern,
    so the chart reads without colour; a point whose y is not finite breaks its line. With no
    finite point the chart says "No data".
    """
    finite = [(x, y) for _, points in series for x, y in points if is_finite(x, y)]
    if not finite:
        return _empty(width=width, height=height, title=title)
    names = [name for name, _ in series]
    left, right, bottom = 58.0, 16.0, 48.0
    legend = _legend_layout(names=names, width=width, x0=left, y0=30)
    top = legend[-1][1] + 28
    plot_w = max(10.0, width - left - right)
    plot_h = max(10.0, height - top - bottom)
    base = top + plot_h
    x_lo, x_hi = min(x for x, _ in finite), max(x for x, _ in finite)
    span = x_hi - x_lo or 1.0
    # Four gridline steps of a whole number of points each.
    y_max = math.ceil(max(y for _, y in finite) * 100 / 4 - 1e-9) * 4 / 100 or 0.04

    def x_of(v: float) -> float:
        return left + (v - x_lo) / span * plot_w

    def y_of(v: float) -> float:
        return base - min(max(v, 0.0), y_max) / y_max * plot_h

    dashes = ("", ' stroke-dasharray="6 4"', ' stroke-dasharray="2 3"')
    parts = _open(width=width, height=height, title=title)
    for i, name in enumerate(names):
        x, y = legend[i]
        colour = PALETTE[i % len(PALETTE)]
        parts.append(
            f'<g class="legend-item"><line x1="{_f(x)}" x2="{_f(x + 14)}" y1="{_f(y + 6)}" y2="{_f(y + 6)}" '
            f'stroke="{colour}" stroke-width="2.5"{dashes[i % len(dashes)]}/>'
            + _marker(MARKERS[i % len(MARKERS)], cx=x + 7, cy=y + 6, r=3.5, colour=colour)
            + f'<text x="{_f(x + 20)}" y="{_f(y + 10)}" fill="{INK}">{escape(_clip(name, 30))}</text></g>'
        )
    parts.extend(
        _y_gridlines(left=left, plot_w=plot_w, y_max=y_max, y_of=y_of, label=lambda v: plain(v * 100))
    )
    xs = sorted({x for x, _ in finite})
    step = max(1, math.ceil(len(xs) / 12))
    for x in xs[::step]:
        parts.append(
            f'<text class="tick" x="{_f(x_of(x))}" y="{_f(base + 16)}" text-anchor="middle" fill="{MUTED}">'
            f"{plain(x)}</text>"
        )
    parts.append(
        f'<line class="axis" x1="{_f(left)}" x2="{_f(left)}" y1="{_f(top)}" y2="{_f(base)}" '
        f'stroke="{MUTED}"/>'
        f'<line class="axis" x1="{_f(left)}" x2="{_f(left + plot_w)}" y1="{_f(base)}" y2="{_f(base)}" '
        f'stroke="{MUTED}"/>'
        f'<text class="axis-label" x="{_f(left + plot_w / 2)}" y="{_f(base + 36)}" text-anchor="middle" '
        f'fill="{INK}">{escape(x_label)}</text>'
        f'<text class="axis-label" x="12" y="{_f(top + plot_h / 2)}" text-anchor="middle" fill="{INK}" '
        f'transform="rotate(-90 12 {_f(top + plot_h / 2)})">{escape(y_label)}</text>'
    )
    for i, (name, points) in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        runs: list[list[tuple[float, float]]] = [[]]
        for x, y in points:
            if is_finite(x, y):
                runs[-1].append((x_of(x), y_of(y)))
            elif runs[-1]:
                runs.append([])
        for run in runs:
            if len(run) > 1:
                parts.append(
                    f'<polyline class="line" points="{_points(*run)}" fill="none" stroke="{colour}" '
                    f'stroke-width="2"{dashes[i % len(dashes)]}/>'
                )
        for x, y in points:
            if is_finite(x, y):
                tip = escape(f"{name}, {plain(x)}: {number(y * 100, 1)}")
                parts.append(
                    f'<g class="point"><title>{tip}</title>'
                    + _marker(MARKERS[i % len(MARKERS)], cx=x_of(x), cy=y_of(y), r=3.5, colour=colour)
                    + "</g>"
                )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text above went through escape()
