"""Conversion (D34): of the verifications started in each hour, how many are approved.

A falling conversion is the signal of SMS pumping that operators watch: the codes a bot
asks for are never checked. ``GET /v1/verifications/stats`` and
``messenger.verifications.stats`` answer it per hour and channel, for the caller's
workspace and mode, counted in the store (one row per hour and channel).

A verification counts in the hour it started, approved or not yet; so the newest hour's
conversion still grows while its codes are checked. Hours without a start are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from pydantic import Field

from .._models import _Request, _Response, parse_model
from .._types import Channel

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._clock import Clock
    from ..store.base import Store
    from ._ops_store import VerificationCount

__all__ = [
    "DEFAULT_STATS_HOURS",
    "MAX_STATS_HOURS",
    "ConversionHour",
    "ConversionTotal",
    "StatsQuery",
    "VerificationStats",
    "conversion_stats",
]

DEFAULT_STATS_HOURS: Final = 24
#: A week: hourly rows beyond it belong in a metrics system (``um_verifications_total``).
MAX_STATS_HOURS: Final = 168


class StatsQuery(_Request):
    """The query of ``GET /v1/verifications/stats``."""

    hours: int = Field(
        default=DEFAULT_STATS_HOURS,
        ge=1,
        le=MAX_STATS_HOURS,
        description="How many hours back, this one included (1-168).",
    )


class ConversionHour(_Response):
    """The verifications of one channel started in one hour."""

    hour: datetime = Field(description="The hour's start (UTC).")
    channel: Channel
    started: int
    approved: int = Field(description="How many of them are approved by now.")
    conversion: float = Field(description="approved / started, 0-1.")


class ConversionTotal(_Response):
    """One channel over the whole period."""

    channel: Channel
    started: int
    approved: int
    conversion: float


class VerificationStats(_Response):
    """200 body of ``GET /v1/verifications/stats``."""

    since: datetime = Field(description="The first hour counted (UTC).")
    hours: int
    data: list[ConversionHour] = Field(description="Per hour and channel, oldest first.")
    totals: list[ConversionTotal] = Field(description="Per channel over the period.")
    livemode: bool


def _ratio(approved: int, started: int) -> float:
    return round(approved / started, 4) if started else 0.0


def _totals(counts: Iterable[VerificationCount]) -> list[ConversionTotal]:
    started: dict[Channel, int] = {}
    approved: dict[Channel, int] = {}
    for count in counts:
        started[count.channel] = started.get(count.channel, 0) + count.started
        approved[count.channel] = approved.get(count.channel, 0) + count.approved
    return [
        ConversionTotal(
            channel=channel,
            started=started[channel],
            approved=approved[channel],
            conversion=_ratio(approved[channel], started[channel]),
        )
        for channel in sorted(started)
    ]


async def conversion_stats(
    store: Store, clock: Clock, auth: Principal, query: StatsQuery | Mapping[str, object]
) -> VerificationStats:
    """The caller's conversion per hour and channel over ``query.hours`` hours."""
    parsed = parse_model(StatsQuery, query)
    now = clock.now()
    this_hour = now.replace(minute=0, second=0, microsecond=0)
    since = this_hour - timedelta(hours=parsed.hours - 1)
    counts = await store.verification_counts(
        since, workspace_id=auth.workspace_id, livemode=auth.livemode
    )
    return VerificationStats(
        since=since,
        hours=parsed.hours,
        data=[
            ConversionHour(
                hour=count.hour,
                channel=count.channel,
                started=count.started,
                approved=count.approved,
                conversion=_ratio(count.approved, count.started),
            )
            for count in counts
        ],
        totals=_totals(counts),
        livemode=auth.livemode,
    )
