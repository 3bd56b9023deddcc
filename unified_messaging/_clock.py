"""Time as a seam: production reads the system clock, tests move a manual one by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "ManualClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """Protocol: the source of "now" for everything that stamps or schedules."""

    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that only moves when told to, so lifecycle tests run in milliseconds."""

    def __init__(self, start: datetime | None = None) -> None:
        start = start or datetime(2026, 1, 1, tzinfo=UTC)
        if start.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start")
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | float) -> datetime:
        """Move forward by ``delta`` (a timedelta or seconds) and return the new time."""
        if isinstance(delta, int | float):
            delta = timedelta(seconds=delta)
        if delta < timedelta(0):
            raise ValueError("time does not run backwards")
        self._now += delta
        return self._now

    def set(self, when: datetime) -> None:
        if when.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware time")
        self._now = when.astimezone(UTC)

    def __repr__(self) -> str:
        return f"ManualClock({self._now.isoformat()})"
