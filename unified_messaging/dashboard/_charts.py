"""The Overview's charts as plain shapes: where each bar, line, mark and label goes.

Pure geometry, no markup: ``templates/_charts.html`` writes each :class:`Chart` out as an
inline SVG, and Jinja2 escapes every label there (nothing here is marked safe). No script
and no style attribute either: colours are SVG presentation attributes, which the
dashboard's Content-Security-Policy allows. Each chart is drawn at two widths, and the page
shows the one that fits (a phone gets the narrow one, with fewer labels, not a shrunken
wide one).

The colours are the Okabe-Ito palette (Okabe and Ito, "Color Universal Design", 2008),
told apart with every common colour-vision deficiency; each status also has its name in the
legend and in every bar's tooltip, so no figure rests on colour alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from .._figures import percent

__all__ = [
    "STATUS_COLOURS",
    "STATUS_ORDER",
    "BarGroup",
    "Chart",
    "RateRow",
    "TimeRow",
    "duration",
    "rate_bars",
    "status_bars",
    "time_marks",
]

#: Okabe-Ito, by message status; ``unknown`` a neutral grey (no hue to mistake).
STATUS_COLOURS: Final = {
    "delivered": "#009E73",
    "sent": "#56B4E9",
    "queued": "#0072B2",
    "expired": "#E69F00",
    "unknown": "#999999",
    "rejected": "#CC79A7",
    "failed": "#D55E00",
}
#: Bottom to top in a bar: the good news at the base, where it reads against the axis.
STATUS_ORDER: Final = ("delivered", "sent", "queued", "expired", "unknown", "rejected", "failed")
_P50: Final = "#0072B2"
_P95: Final = "#D55E00"
_DELIVERED: Final = "#009E73"
_TRACK: Final = "#E4E8EE"
_GRID: Final = "#DDE2EA"
_AXIS: Final = "#5B6475"
_INK: Final = "#1D2330"
_FONT: Final = 13

Anchor = Literal["start", "middle", "end"]


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    fill: str
    #: The tooltip (an SVG ``<title>``): what the shape stands for, in words.
    tip: str = ""


@dataclass(frozen=True, slots=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    stroke: str = _GRID
    width: float = 1.0


@dataclass(frozen=True, slots=True)
class Label:
    x: float
    y: float
    text: str
    anchor: Anchor = "start"
    size: int = _FONT
    fill: str = _AXIS
    bold: bool = False


@dataclass(frozen=True, slots=True)
class Mark:
    """A point: a circle (``round``) or a triangle, with its tooltip."""

    x: float
    y: float
    shape: Literal["round", "triangle"]
    fill: str
    tip: str
    size: float = 6.0

    @property
    def points(self) -> str:
        """The triangle's corners, for ``<polygon points=…>``."""
        s = self.size * 1.2
        corners = (
            (self.x, self.y - s),
            (self.x - s, self.y + s * 0.8),
            (self.x + s, self.y + s * 0.8),
        )
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in corners)


@dataclass(frozen=True, slots=True)
class Chart:
    """One SVG: its size (the ``viewBox``), a title and a description for screen readers
    (``role="img"``), and its shapes, drawn in the order grid, rects, lines, marks, labels."""

    width: int
    height: int
    title: str
    description: str
    grid: tuple[Line, ...] = ()
    rects: tuple[Rect, ...] = ()
    lines: tuple[Line, ...] = ()
    marks: tuple[Mark, ...] = ()
    labels: tuple[Label, ...] = ()


# --------------------------------------------------------------------------- messages by status


@dataclass(frozen=True, slots=True)
class BarGroup:
    """One bucket of the stacked bars: its axis label (``None``: none under this bar), its
    name in tooltips (``"Tue 3 Mar, 14:00-15:00"``) and its count per status."""

    label: str | None
    name: str
    counts: dict[str, int] = field(default_factory=dict)


def status_bars(
    groups: Sequence[BarGroup], *, width: int, height: int, x_title: str, title: str
) -> Chart:
    """Stacked bars of messages per bucket by status, with a count axis and gridlines."""
    left, right, top, bottom = 46, 22, 26, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    totals = [sum(g.counts.values()) for g in groups]
    ticks = _count_ticks(max(totals, default=0))
    scale = plot_h / ticks[-1]
    slot = plot_w / max(len(groups), 1)
    bar = max(slot * 0.72, 1.0)
    grid, labels, rects = [], [Label(4, 14, "Messages", size=_FONT, fill=_INK, bold=True)], []
    for tick in ticks:
        y = top + plot_h - tick * scale
        grid.append(Line(left, y, width - right, y))
        labels.append(Label(left - 6, y + 4, _thousands(tick), anchor="end"))
    base = top + plot_h
    for index, (group, total) in enumerate(zip(groups, totals, strict=True)):
        x = left + index * slot + (slot - bar) / 2
        y = base
        for status in STATUS_ORDER:
            n = group.counts.get(status, 0)
            if n <= 0:
                continue
            h = n * scale
            y -= h
            tip = f"{group.name}: {_thousands(n)} {status} of {_thousands(total)}"
            rects.append(Rect(x, y, bar, h, STATUS_COLOURS[status], tip))
        if group.label is not None:
            labels.append(Label(x + bar / 2, base + 16, group.label, anchor="middle"))
    labels.append(Label(left + plot_w / 2, height - 6, x_title, anchor="middle"))
    lines = [Line(left, base, width - right, base, stroke=_AXIS)]
    if not any(totals):
        labels.append(
            Label(left + plot_w / 2, top + plot_h / 2, "No messages in this window", "middle")
        )
    total = sum(totals)
    description = f"{_thousands(total)} messages in {len(groups)} bars; " + ", ".join(
        f"{_thousands(sum(g.counts.get(s, 0) for g in groups))} {s}"
        for s in STATUS_ORDER
        if any(g.counts.get(s, 0) for g in groups)
    )
    return Chart(
        width,
        height,
        title,
        description,
        tuple(grid),
        tuple(rects),
        tuple(lines),
        (),
        tuple(labels),
    )


# --------------------------------------------------------------------------- delivery rate


@dataclass(frozen=True, slots=True)
class RateRow:
    """One provider: its label, delivered out of settled attempts (``None``: none settled)."""

    label: str
    rate: float | None
    delivered: int
    settled: int


def rate_bars(rows: Sequence[RateRow], *, width: int, title: str) -> Chart:
    """Horizontal bars, 0-100 %, one per provider, the figure written beside each."""
    narrow = width < 500
    label_w = 0 if narrow else 190
    row_h = 44 if narrow else 34
    top, right = 24, 8
    left = 16 + label_w
    value_w = 132
    plot_w = width - left - right - value_w
    height = top + row_h * max(len(rows), 1) + 26
    grid, labels, rects = [], [], []
    for tick in (0, 25, 50, 75, 100):
        x = left + plot_w * tick / 100
        grid.append(Line(x, top - 6, x, height - 24))
        labels.append(Label(x, height - 8, f"{tick}%", anchor="middle"))
    for index, row in enumerate(rows):
        y = top + index * row_h + (18 if narrow else 6)
        if narrow:
            labels.append(Label(left, y - 5, row.label, fill=_INK, bold=True))
        else:
            labels.append(Label(left - 10, y + 15, row.label, anchor="end", fill=_INK, bold=True))
        rects.append(Rect(left, y, plot_w, 20, _TRACK, f"{row.label}: {_settled(row)}"))
        if row.rate is not None:
            shown = plot_w * row.rate
            rects.append(Rect(left, y, shown, 20, _DELIVERED, f"{row.label}: {_settled(row)}"))
        value = "–" if row.rate is None else _percent(row.rate)
        labels.append(Label(left + plot_w + 8, y + 15, value, fill=_INK, bold=True))
        labels.append(Label(left + plot_w + 66, y + 15, f"of {_thousands(row.settled)}"))
    if not rows:
        labels.append(Label(left + plot_w / 2, top + 22, "No attempts in this window", "middle"))
    description = "; ".join(f"{row.label}: {_settled(row)}" for row in rows) or "No attempts."
    return Chart(
        width, height, title, description, tuple(grid), tuple(rects), (), (), tuple(labels)
    )


def _settled(row: RateRow) -> str:
    if row.rate is None:
        return "no attempt settled yet"
    counted = f"{_thousands(row.delivered)} of {_thousands(row.settled)} settled"
    return f"{_percent(row.rate)} delivered ({counted})"


# --------------------------------------------------------------------------- delivery times

#: Tick marks of the time axis (milliseconds, label): a log scale.
_TIME_TICKS: Final = (
    (100, "100 ms"), (1_000, "1 s"), (10_000, "10 s"), (60_000, "1 min"), (600_000, "10 min"),
    (3_600_000, "1 h"), (21_600_000, "6 h"), (86_400_000, "24 h"), (172_800_000, "48 h"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TimeRow:
    """One provider's delivery times: the bounds of its p50 and p95 buckets (ms)."""

    label: str
    p50: int | None
    p95: int | None
    delivered: int


def time_marks(rows: Sequence[TimeRow], *, width: int, title: str) -> Chart:
    """p50 (circle) and p95 (triangle) per provider on a log time axis, joined by a line."""
    narrow = width < 500
    label_w = 0 if narrow else 190
    row_h = 46 if narrow else 36
    top, right = 20, 28
    left = 26 + label_w
    plot_w = width - left - right
    height = top + row_h * max(len(rows), 1) + 30
    known = [v for row in rows for v in (row.p50, row.p95) if v is not None]
    ticks = _time_range(min(known, default=1_000), max(known, default=60_000))
    # A phone's narrow chart labels every other tick (the last always), the scale unchanged.
    shown = ticks[::-2][::-1] if narrow and len(ticks) > 4 else ticks
    lo, hi = math.log10(ticks[0][0]), math.log10(ticks[-1][0])

    def at(ms: int) -> float:
        return left + plot_w * (math.log10(max(ms, ticks[0][0])) - lo) / (hi - lo)

    grid, labels, lines, marks = [], [], [], []
    for ms, _ in ticks:
        grid.append(Line(at(ms), top - 8, at(ms), height - 26))
    for ms, text in shown:
        labels.append(Label(at(ms), height - 10, text, anchor="middle"))
    for index, row in enumerate(rows):
        y = top + index * row_h + (24 if narrow else 12)
        if narrow:
            labels.append(Label(left, y - 12, row.label, fill=_INK, bold=True))
        else:
            labels.append(Label(left - 12, y + 4, row.label, anchor="end", fill=_INK, bold=True))
        if row.p50 is None or row.p95 is None:
            labels.append(Label(left + 4, y + 4, "no delivery in this window"))
            continue
        lines.append(Line(at(row.p50), y, at(row.p95), y, stroke=_AXIS, width=2))
        tip = f"{row.label}: half within {duration(row.p50)}, 95% within {duration(row.p95)}"
        # The triangle first: where both fall in one bucket, the smaller circle sits inside
        # it, and both stay visible.
        same = row.p50 == row.p95
        marks.append(Mark(at(row.p95), y, "triangle", _P95, tip, size=7.5 if same else 6.0))
        marks.append(Mark(at(row.p50), y, "round", _P50, tip, size=4.0 if same else 6.0))
    if not rows:
        labels.append(Label(left + plot_w / 2, top + 20, "No deliveries in this window", "middle"))
    description = "; ".join(
        f"{row.label}: median within {duration(row.p50)}, "
        f"95th percentile within {duration(row.p95)}"
        for row in rows
        if row.p50 is not None and row.p95 is not None
    )
    return Chart(
        width,
        height,
        title,
        description or "No deliveries.",
        tuple(grid),
        (),
        tuple(lines),
        tuple(marks),
        tuple(labels),
    )


def _time_range(low: int, high: int) -> tuple[tuple[int, str], ...]:
    """The ticks from the last at or below ``low`` to the first at or above ``high``, at
    least two of them."""
    first = max((i for i, (ms, _) in enumerate(_TIME_TICKS) if ms <= low), default=0)
    last = min(
        (i for i, (ms, _) in enumerate(_TIME_TICKS) if ms >= high), default=len(_TIME_TICKS) - 1
    )
    last = max(last, first + 1)
    return _TIME_TICKS[first : last + 1]


# --------------------------------------------------------------------------- words and numbers


def duration(ms: int | None) -> str:
    """A bucket bound as a person reads it: ``700 ms``, ``1.5 s``, ``4 min``, ``1.5 h``."""
    if ms is None:
        return "–"
    for unit, size in (("h", 3_600_000), ("min", 60_000), ("s", 1_000)):
        if ms >= size:
            value = ms / size
            return f"{value:.1f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{ms} ms"


def _count_ticks(peak: int) -> list[int]:
    """0 and up to five round steps (1, 2 or 5 times a power of ten) covering ``peak``."""
    if peak <= 0:
        return [0, 1]
    raw = peak / 4
    power = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(s * power for s in (1, 2, 5, 10) if s * power >= raw)
    step = max(int(step), 1)
    top = math.ceil(peak / step) * step
    return list(range(0, top + 1, step))


def _thousands(n: int) -> str:
    return f"{n:,}"


def _percent(rate: float) -> str:
    return percent(rate)
