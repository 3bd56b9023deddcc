"""A connection's circuit-breaker thresholds (D26): when its breaker opens, how long it stays open.

Every connection has one; :data:`DEFAULT_BREAKER_POLICY` unless it was set
(``Messenger.set_breaker_policy``, ``connections add|update --breaker-...``). Each value is
checked when a policy is made, so a stored policy is always a usable one: a bad value (0,
negative, huge, not a number) is :class:`RequestInvalid` naming the field
(``breaker_window``, ``breaker_min_calls``, ``breaker_failure_ratio``,
``breaker_consecutive``, ``breaker_cooldown``).

No I/O, nothing imported from the rest of the package but the errors: :mod:`._domain` keeps
a policy on each :class:`Connection`, the state machine (:mod:`._breaker_state`) reads it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from .._errors import RequestInvalid

__all__ = [
    "BREAKER_FIELDS",
    "DEFAULT_BREAKER_POLICY",
    "MAX_CALLS",
    "MAX_SPAN",
    "MIN_SPAN",
    "BreakerPolicy",
]

#: Below a second, a window holds too few calls to mean anything and a cool-down is no pause.
MIN_SPAN: Final = timedelta(seconds=1)
#: Past an hour, a window remembers outages long over and a cool-down outlives the outage.
MAX_SPAN: Final = timedelta(hours=1)
#: More calls than this before deciding is no breaker at all.
MAX_CALLS: Final = 10_000
#: The settable fields, as the CLI flags and errors name them (``breaker_`` + the attribute).
BREAKER_FIELDS: Final = ("window", "min_calls", "failure_ratio", "consecutive", "cooldown")


@dataclass(frozen=True, slots=True)
class BreakerPolicy:
    """When a connection's breaker opens, and for how long.

    It opens when, within the last ``window``, at least ``min_calls`` calls were made and at
    least ``failure_ratio`` of them were ``unavailable`` (time-out, transport error, 5xx,
    throttling), or when ``consecutive`` calls in a row were. It stays open ``cooldown``,
    then lets one probe call through.
    """

    window: timedelta = timedelta(seconds=30)
    min_calls: int = 5
    failure_ratio: float = 0.5
    consecutive: int = 5
    cooldown: timedelta = timedelta(seconds=30)

    def __post_init__(self) -> None:
        _check_span("window", self.window)
        _check_count("min_calls", self.min_calls)
        _check_ratio(self.failure_ratio)
        _check_count("consecutive", self.consecutive)
        _check_span("cooldown", self.cooldown)

    @classmethod
    def build(cls, base: BreakerPolicy | None = None, **changes: object) -> BreakerPolicy:
        """``base`` (default: the defaults) with ``changes``, given as they come from JSON or a
        command line: seconds as numbers for the spans. An unknown name is refused too."""
        base = base or DEFAULT_BREAKER_POLICY
        values: dict[str, object] = {name: getattr(base, name) for name in BREAKER_FIELDS}
        for name, value in changes.items():
            if name not in BREAKER_FIELDS:
                raise RequestInvalid.for_field(f"breaker_{name}", "is not a breaker setting")
            if name in ("window", "cooldown") and not isinstance(value, timedelta):
                value = timedelta(seconds=_seconds(name, value))
            values[name] = value
        return cls(**values)  # type: ignore[arg-type]

    def to_json(self) -> dict[str, float | int]:
        return {
            "window": self.window.total_seconds(),
            "min_calls": self.min_calls,
            "failure_ratio": self.failure_ratio,
            "consecutive": self.consecutive,
            "cooldown": self.cooldown.total_seconds(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> BreakerPolicy:
        """The policy :meth:`to_json` wrote; missing names keep their defaults."""
        return cls.build(None, **{k: v for k, v in data.items() if k in BREAKER_FIELDS})


_SPAN_SECONDS: Final = (MIN_SPAN.total_seconds(), MAX_SPAN.total_seconds())
_SPAN_TEXT: Final = "must be 1 to 3600 seconds"


def _seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestInvalid.for_field(f"breaker_{name}", "must be a number of seconds")
    if not math.isfinite(value) or not _SPAN_SECONDS[0] <= value <= _SPAN_SECONDS[1]:
        # Checked before a timedelta is made: NaN and 1e300 would make it raise its own error.
        raise RequestInvalid.for_field(f"breaker_{name}", _SPAN_TEXT)
    return float(value)


def _check_span(name: str, value: object) -> None:
    if not isinstance(value, timedelta) or not MIN_SPAN <= value <= MAX_SPAN:
        raise RequestInvalid.for_field(f"breaker_{name}", _SPAN_TEXT)


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestInvalid.for_field(f"breaker_{name}", "must be a whole number")
    if not 1 <= value <= MAX_CALLS:
        raise RequestInvalid.for_field(f"breaker_{name}", f"must be 1 to {MAX_CALLS:,}")


def _check_ratio(value: object) -> None:
    field = "breaker_failure_ratio"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RequestInvalid.for_field(field, "must be a number")
    if not math.isfinite(value) or not 0 < value <= 1:
        raise RequestInvalid.for_field(field, "must be more than 0 and at most 1 (0.5: half)")


#: D26's defaults: open after 5 unavailable calls in a row, or half of at least 5 calls in
#: 30 s; stay open 30 s, then probe once.
DEFAULT_BREAKER_POLICY: Final = BreakerPolicy()
