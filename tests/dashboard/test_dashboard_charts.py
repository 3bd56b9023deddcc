"""The chart geometry of ``dashboard._charts`` (pure), and the template that writes it down:
bars as tall as their counts, rates as wide as their share, times on a log scale, round axis
steps; and every label escaped, with no script or style attribute in the SVG."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from unified_messaging.dashboard._charts import (
    STATUS_COLOURS,
    STATUS_ORDER,
    BarGroup,
    Chart,
    Label,
    RateRow,
    TimeRow,
    _count_ticks,
    duration,
    rate_bars,
    status_bars,
    time_marks,
)
from unified_messaging.dashboard._ui import Templates


def render(chart: Chart) -> str:
    env = Templates()._env
    macro = env.from_string('{% from "_charts.html" import svg %}{{ svg(chart, "wide", "c") }}')
    return macro.render(chart=chart)


@given(st.lists(st.dictionaries(st.sampled_from(STATUS_ORDER), st.integers(0, 5000)), max_size=30))
def test_stacked_bars_are_as_tall_as_their_counts(counts: list[dict[str, int]]) -> None:
    groups = [BarGroup(None, f"bucket {i}", c) for i, c in enumerate(counts)]
    chart = status_bars(groups, width=960, height=300, x_title="Hour", title="t")
    base = 300 - 44
    for index, group in enumerate(groups):
        mine = [r for r in chart.rects if r.tip.startswith(f"bucket {index}:")]
        total = sum(group.counts.values())
        assert len(mine) == sum(1 for n in group.counts.values() if n > 0)
        # Stacked from the base up in STATUS_ORDER, without gaps.
        top = base
        for rect in mine:
            assert math.isclose(rect.y + rect.height, top, abs_tol=1e-6)
            top = rect.y
        if total:
            peak = max(sum(g.counts.values()) for g in groups)
            scale = (300 - 26 - 44) / _count_ticks(peak)[-1]
            assert math.isclose(base - top, total * scale, rel_tol=1e-9)
        fills = [r.fill for r in mine]
        assert fills == [STATUS_COLOURS[s] for s in STATUS_ORDER if group.counts.get(s, 0) > 0]


def test_an_empty_window_says_so_and_keeps_its_axis() -> None:
    chart = status_bars([BarGroup("09:00", "b", {})], width=360, height=260, x_title="x", title="t")
    texts = [label.text for label in chart.labels]
    assert "No messages in this window" in texts and "0" in texts and chart.rects == ()


@given(st.integers(0, 10**9))
def test_count_axis_steps_are_round_and_cover_the_peak(peak: int) -> None:
    ticks = _count_ticks(peak)
    step = ticks[1] - ticks[0]
    assert ticks[0] == 0 and ticks[-1] >= peak and len(ticks) <= 6
    assert all(b - a == step for a, b in itertools.pairwise(ticks))
    assert int(str(step)[0]) in (1, 2, 5) and set(str(step)[1:]) <= {"0"}


def test_a_rate_bar_is_as_wide_as_its_share_of_the_track() -> None:
    chart = rate_bars(
        [RateRow("sms_a", 0.75, 3, 4), RateRow("sms_b", None, 0, 0)], width=560, title="t"
    )
    track, filled, empty_track = chart.rects
    assert math.isclose(filled.width, track.width * 0.75)
    assert empty_track.fill == track.fill  # no rate: the empty track only
    texts = [label.text for label in chart.labels]
    assert "75.0%" in texts and "–" in texts and "of 4" in texts
    assert filled.tip == "sms_a: 75.0% delivered (3 of 4 settled)"


def test_delivery_times_sit_on_a_log_scale() -> None:
    chart = time_marks(
        [TimeRow("a", 1_000, 10_000, 5), TimeRow("b", 100, 100_000, 5)], width=560, title="t"
    )
    a95, a50, b95, b50 = (mark.x for mark in chart.marks)
    assert math.isclose(a95 - a50, a50 - b50)  # a decade is a decade
    assert b95 > a95 > a50 > b50
    assert [m.shape for m in chart.marks] == ["triangle", "round"] * 2


def test_a_median_in_the_same_bucket_as_the_95th_stays_visible_inside_it() -> None:
    triangle, circle = time_marks([TimeRow("a", 4_000, 4_000, 5)], width=560, title="t").marks
    assert (triangle.x, triangle.shape) == (circle.x, "triangle")
    assert circle.size < triangle.size  # drawn after, inside it


@pytest.mark.parametrize(
    ("ms", "text"),
    [(None, "–"), (100, "100 ms"), (700, "700 ms"), (1_000, "1 s"), (1_500, "1.5 s"),
     (60_000, "1 min"), (90_000, "1.5 min"), (3_600_000, "1 h"), (172_800_000, "48 h")],
)  # fmt: skip
def test_durations_read_as_people_say_them(ms: int | None, text: str) -> None:
    assert duration(ms) == text


def test_every_label_and_tooltip_is_escaped_in_the_svg() -> None:
    hostile = '<script>alert(1)</script>"&'
    chart = Chart(
        100,
        100,
        hostile,
        hostile,
        labels=(Label(1, 2, hostile),),
        rects=status_bars(
            [BarGroup(hostile, hostile, {"delivered": 1})], width=300, height=200,
            x_title=hostile, title=hostile,
        ).rects,
    )  # fmt: skip

    svg = render(chart)

    assert "<script" not in svg
    assert svg.count("&lt;script&gt;alert(1)&lt;/script&gt;&#34;&amp;") >= 4
    assert not re.search(r"\sstyle=|\son\w+=", svg)  # nothing the CSP would block or run
