"""What the Overview shows of ``messenger.stats``: its charts at both widths, the axis and
tooltip words in the viewer's time zone, and the provider table. Pure: figures in, shapes
and words out (the template only writes them down).

The workspace has no time zone setting yet, so the dashboard shows Europe/Istanbul's
(:data:`DEFAULT_ZONE`), and says so beside every chart: the API stays in UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final
from zoneinfo import ZoneInfo

from ..providers.base import PROFILES
from ..stats._models import ProviderFigures, SeriesBucket, StatsOverview
from ._charts import (
    STATUS_COLOURS,
    STATUS_ORDER,
    BarGroup,
    Chart,
    RateRow,
    TimeRow,
    duration,
    rate_bars,
    status_bars,
    time_marks,
)

__all__ = ["DEFAULT_ZONE", "WINDOW_NAMES", "OverviewView", "overview_view"]

DEFAULT_ZONE: Final = "Europe/Istanbul"
#: The window switch, in order: (window, what the link says).
WINDOW_NAMES: Final = (("24h", "Last 24 hours"), ("7d", "Last 7 days"), ("30d", "Last 30 days"))
#: Label every n-th bar (the newest always labelled): (wide, narrow) per window.
_LABEL_EVERY: Final = {"24h": (3, 6), "7d": (1, 2), "30d": (3, 7)}
_WIDE: Final = 960
_NARROW: Final = 320
_SIDE: Final = 560  # each of the two provider charts, side by side on a laptop


@dataclass(frozen=True, slots=True)
class ChartPair:
    """One chart drawn for a laptop (``wide``) and a phone (``narrow``)."""

    wide: Chart
    narrow: Chart


@dataclass(frozen=True, slots=True)
class ProviderLine:
    """One row of the provider table: the figures behind the two provider charts."""

    label: str
    figures: ProviderFigures
    p50: str
    p95: str


@dataclass(frozen=True, slots=True)
class OverviewView:
    window: str
    zone_label: str
    #: The statuses the window has, in the bars' order, with their colours: the legend.
    legend: tuple[tuple[str, str], ...]
    volume: ChartPair
    rates: ChartPair
    times: ChartPair
    providers: tuple[ProviderLine, ...]
    #: Buckets with messages, newest first, named in the zone: the chart as a table.
    busy: tuple[tuple[str, SeriesBucket], ...]


def provider_label(code: str) -> str:
    """``sms_c · Verimor``: the code the API uses and the name a person knows."""
    profile = PROFILES.get(code)  # type: ignore[call-overload]
    return code if profile is None else f"{code} · {profile.name}"


def overview_view(figures: StatsOverview, zone: ZoneInfo, now: datetime) -> OverviewView:
    """The Overview's charts and table for ``figures``, times shown in ``zone``."""
    offset = now.astimezone(zone).strftime("%z")
    zone_label = f"{zone.key} (UTC{offset[:3]}:{offset[3:]})"
    unit = "Hour" if figures.unit == "hour" else "Day"
    every_wide, every_narrow = _LABEL_EVERY[figures.window]

    def volume(width: int, height: int, every: int) -> Chart:
        count = len(figures.series)
        groups = [
            BarGroup(
                _tick(bucket, zone, figures.unit) if (count - 1 - i) % every == 0 else None,
                _name(bucket, zone, figures.unit),
                bucket.counts.model_dump(),
            )
            for i, bucket in enumerate(figures.series)
        ]
        title = f"Messages per {figures.unit} by status"
        return status_bars(
            groups, width=width, height=height, x_title=f"{unit} ({zone.key})", title=title
        )

    rows = [
        RateRow(
            provider_label(p.provider),
            p.delivery_rate,
            p.delivered,
            p.delivered + p.failed + p.expired + p.unknown,
        )
        for p in figures.providers
    ]
    times = [
        TimeRow(
            provider_label(p.provider),
            p.delivery_times.p50_ms,
            p.delivery_times.p95_ms,
            p.delivery_times.delivered,
        )
        for p in figures.providers
    ]
    present = {s for bucket in figures.series for s, n in bucket.counts.model_dump().items() if n}
    return OverviewView(
        window=figures.window,
        zone_label=zone_label,
        legend=tuple((s, STATUS_COLOURS[s]) for s in STATUS_ORDER if s in present),
        volume=ChartPair(volume(_WIDE, 300, every_wide), volume(_NARROW, 260, every_narrow)),
        rates=ChartPair(
            rate_bars(rows, width=_SIDE, title="Delivery rate per provider"),
            rate_bars(rows, width=_NARROW, title="Delivery rate per provider"),
        ),
        times=ChartPair(
            time_marks(times, width=_SIDE, title="Delivery time per provider"),
            time_marks(times, width=_NARROW, title="Delivery time per provider"),
        ),
        providers=tuple(
            ProviderLine(
                provider_label(p.provider),
                p,
                duration(p.delivery_times.p50_ms),
                duration(p.delivery_times.p95_ms),
            )
            for p in figures.providers
        ),
        busy=tuple(
            (_name(bucket, zone, figures.unit), bucket)
            for bucket in reversed(figures.series)
            if bucket.total
        ),
    )


def _tick(bucket: SeriesBucket, zone: ZoneInfo, unit: str) -> str:
    local = bucket.start.astimezone(zone)
    return local.strftime("%H:00") if unit == "hour" else f"{local.day} {local:%b}"


def _name(bucket: SeriesBucket, zone: ZoneInfo, unit: str) -> str:
    start, end = bucket.start.astimezone(zone), bucket.end.astimezone(zone)
    day = f"{start:%a} {start.day} {start:%b}"
    return f"{day}, {start:%H:%M}–{end:%H:%M}" if unit == "hour" else day
