"""The shapes of ``GET /v1/stats``: its query and its answer (REST, Client, library, OpenAPI)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import Field, JsonValue, field_validator

from .._models import _Request, _Response
from .._types import ProviderCode
from ._windows import Window

__all__ = [
    "DeliveryTimes",
    "FallbackFigures",
    "HistogramBucket",
    "ProviderFigures",
    "SeriesBucket",
    "StatsOverview",
    "StatsQuery",
    "StatusCounts",
    "VerificationFigures",
    "zone_named",
]


def zone_named(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; :class:`ValueError` (a 400 through the request model)
    for anything else."""
    if not 1 <= len(name) <= 64:
        raise ValueError("must be an IANA time zone name, e.g. Europe/Istanbul")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {name!r} (an IANA name, e.g. Europe/Istanbul)"
        ) from None


def known_zones() -> list[str]:
    """Every IANA zone name :func:`zone_named` accepts on this machine, sorted."""
    return sorted(name for name in available_timezones() if 1 <= len(name) <= 64)


def _list_known_zones(schema: dict[str, JsonValue]) -> None:
    schema["enum"] = list[JsonValue](known_zones())


class StatsQuery(_Request):
    """The query of ``GET /v1/stats``."""

    window: Window = Field(
        default="24h",
        description="The last 24 hours by hour, or the last 7 or 30 days by day.",
    )
    time_zone: str = Field(
        default="UTC",
        description=(
            "The IANA time zone whose calendar days the 7d and 30d buckets follow (e.g. "
            "Europe/Istanbul). Every time in the answer is UTC whatever it is."
        ),
        examples=["Europe/Istanbul"],
        # The document names every zone the server knows, so a client (or a fuzzer) can tell
        # a zone from a string before it asks; generated when the schema is, not on import.
        json_schema_extra=_list_known_zones,
    )

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        zone_named(value)
        return value


class StatusCounts(_Response):
    """Messages by their status now."""

    queued: int = 0
    sent: int = 0
    delivered: int = 0
    expired: int = 0
    rejected: int = 0
    failed: int = 0
    unknown: int = 0


class SeriesBucket(_Response):
    """The messages created in one hour or day of the window, by their status now."""

    start: datetime = Field(description="The bucket's start (UTC).")
    end: datetime = Field(description="The bucket's end (UTC, exclusive).")
    total: int
    counts: StatusCounts


class HistogramBucket(_Response):
    """Delivered messages whose delivery took less than ``le_ms`` (and at least the bucket
    before's); ``le_ms`` ``null``: 48 hours or more."""

    _omit_none: ClassVar[bool] = False

    le_ms: int | None
    count: int


class DeliveryTimes(_Response):
    """Delivery times (the delivery report's time minus the provider's acceptance) of the
    messages a provider delivered, counted in buckets from 100 ms to 48 h. A percentile is
    given as the upper bound of the bucket that holds it: never below the true value, and
    at most one bucket (1.5 times, from 1 s up) above it."""

    _omit_none: ClassVar[bool] = False

    delivered: int
    p50_ms: int | None = Field(description="Median, as the bound of its bucket; null: none.")
    p95_ms: int | None = Field(description="95th percentile, as the bound of its bucket.")
    histogram: list[HistogramBucket] = Field(description="The buckets with a count, in order.")


class ProviderFigures(_Response):
    """How one provider fared with the window's messages, counted per attempt: a message
    that fell back from ``sms_a`` to ``sms_b`` counts for both."""

    _omit_none: ClassVar[bool] = False

    provider: ProviderCode
    attempts: int = Field(description="Attempts handed to it.")
    taken: int = Field(description="Attempts it took (it answered with its message id).")
    delivered: int
    failed: int = Field(description="Refused at submit, unreachable, or reported failed.")
    expired: int
    unknown: int = Field(description="No report in time, or the hand-over's outcome lost.")
    pending: int = Field(description="Taken, no final report yet.")
    fallbacks: int = Field(description="Attempts after which the message went on elsewhere.")
    delivery_rate: float | None = Field(
        description="delivered / (delivered + failed + expired + unknown), 0-1; null: none."
    )
    delivery_times: DeliveryTimes


class FallbackFigures(_Response):
    """Of the messages handed to at least one provider, those that went on to another."""

    _omit_none: ClassVar[bool] = False

    messages: int
    fell_back: int
    rate: float | None = Field(description="fell_back / messages, 0-1; null: no messages.")


class VerificationFigures(_Response):
    """One-time codes (``/v1/verifications``) started in the window, and those approved."""

    _omit_none: ClassVar[bool] = False

    started: int
    approved: int
    conversion: float | None = Field(description="approved / started, 0-1; null: none.")


class StatsOverview(_Response):
    """200 body of ``GET /v1/stats``: the caller's workspace and mode (test or live, by the
    key), messages counted under the hour they were created, each by its state now."""

    _omit_none: ClassVar[bool] = False

    window: Window
    time_zone: str
    unit: Literal["hour", "day"] = Field(description="What each bucket of series spans.")
    start: datetime = Field(description="The window's start (UTC).")
    end: datetime = Field(description="The window's end (UTC, exclusive): the current hour's end.")
    livemode: bool
    messages: int = Field(description="Messages created in the window.")
    by_status: StatusCounts
    series: list[SeriesBucket] = Field(description="One bucket per hour or day, oldest first.")
    providers: list[ProviderFigures] = Field(description="Providers tried, by code.")
    fallback: FallbackFigures
    verifications: VerificationFigures
