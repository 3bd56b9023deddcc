"""What the store counts for the delivery figures, and what it answers with.

A message or a verification counts as a few :class:`StatKey` at once (what each ``kind``
means is in :mod:`._contributions`); the store answers a window with :class:`StatCount`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

__all__ = ["KINDS", "StatCount", "StatKey", "StatKind"]

#: ``status``: a message by its status; ``attempt``: each attempt by provider and state;
#: ``latency``: a delivered message's delivery-time bucket; ``verification``: by status.
StatKind: TypeAlias = Literal["status", "attempt", "latency", "verification"]
KINDS: Final[tuple[StatKind, ...]] = ("status", "attempt", "latency", "verification")


@dataclass(frozen=True, slots=True, order=True)
class StatKey:
    """One thing counted: ``kind``, the UTC ``hour`` (hours since the epoch) of the row's
    ``created_at``, and the key within the kind (``provider``, ``status``, ``detail``)."""

    kind: StatKind
    hour: int
    provider: str
    status: str
    detail: int


@dataclass(frozen=True, slots=True, order=True)
class StatCount:
    """A count of :meth:`StatsStore.stat_counts`: ``status`` rows per ``hour``; the other
    kinds summed over the window asked for (``hour`` ``None``)."""

    kind: StatKind
    hour: int | None
    provider: str
    status: str
    detail: int
    n: int
