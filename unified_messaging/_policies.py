"""The settings records that a workspace or a connection carries, and their checks: the
flood guard's :class:`RecipientLimit` (D28), the circuit breaker's :class:`BreakerPolicy`
(D26) and the commercial content hints' :class:`ContentRules` (D33).

They are records of the core (:mod:`._domain` keeps one on each workspace and connection), so
they live at the core's level: the core's records import no feature module, and the feature
modules that apply them (``_access.flood_guard``, ``_routing.breaker_state``) import them
from here (``_domain`` → ``_access.flood_guard`` → ``_errors`` was a
six-file import circle). No I/O, nothing imported from the package but the errors.

A limit or policy is checked when it is made, so a stored one is always usable: a bad value
(0, negative, huge, not a number) is :class:`RequestInvalid` naming the field
(``recipient_limit``; ``breaker_window``, ``breaker_min_calls``, ``breaker_failure_ratio``,
``breaker_consecutive``, ``breaker_cooldown``).
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from ._errors import RequestInvalid

__all__ = [
    "BREAKER_FIELDS",
    "DEFAULT_BREAKER_POLICY",
    "DEFAULT_RECIPIENT_LIMIT",
    "MAX_CALLS",
    "MAX_LIMIT",
    "MAX_SPAN",
    "MAX_WINDOW",
    "MIN_SPAN",
    "MIN_WINDOW",
    "RECIPIENT_LIMIT_FIELD",
    "WINDOW_UNITS",
    "BreakerPolicy",
    "ContentRules",
    "RecipientLimit",
    "window_text",
]

# --------------------------------------------------------------------------- D28 flood guard

#: More than this many messages to one person per window is no limit at all.
MAX_LIMIT: Final = 10_000
MIN_WINDOW: Final = timedelta(seconds=1)
#: A window beyond a week is almost surely a unit mistake (and weekly caps cover marketing).
MAX_WINDOW: Final = timedelta(days=7)

#: The field a bad limit is refused under (RequestInvalid).
RECIPIENT_LIMIT_FIELD: Final = "recipient_limit"
#: Seconds per unit of the text form (``10/1h``).
WINDOW_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True, slots=True)
class RecipientLimit:
    """At most ``limit`` messages to one recipient in any ``window`` (a sliding window).

    Checked when made: ``limit`` 1-10,000 and ``window`` 1 second to 7 days, else
    :class:`RequestInvalid` naming ``recipient_limit`` (to turn the guard off, a workspace
    has no limit: ``None``, not 0).
    """

    limit: int
    window: timedelta

    def __post_init__(self) -> None:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int):
            raise RequestInvalid.for_field(
                RECIPIENT_LIMIT_FIELD, "the limit must be a whole number"
            )
        if not 1 <= self.limit <= MAX_LIMIT:
            raise RequestInvalid.for_field(
                RECIPIENT_LIMIT_FIELD,
                f"the limit must be 1-{MAX_LIMIT:,} messages (to turn it off: off)",
            )
        if not isinstance(self.window, timedelta) or not MIN_WINDOW <= self.window <= MAX_WINDOW:
            raise RequestInvalid.for_field(
                RECIPIENT_LIMIT_FIELD, "the window must be 1 second to 7 days"
            )

    def __str__(self) -> str:
        """The text form :func:`parse_recipient_limit` reads: ``10/1h``, ``5/10m``, ``3/90s``."""
        return f"{self.limit}/{window_text(self.window)}"


#: D28's default, on for every workspace: 10 messages per recipient per hour. A login that
#: needs a code, a resend or two and a few notifications stays well inside it; a pumping bot
#: gets 10 messages an hour per number instead of as many as the API rate allows (50/s).
DEFAULT_RECIPIENT_LIMIT: Final = RecipientLimit(10, timedelta(hours=1))


def window_text(window: timedelta) -> str:
    """A window in the text form's units: ``1h``, ``10m``, ``90s``."""
    seconds = window.total_seconds()
    for unit in ("d", "h", "m"):
        size = WINDOW_UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


# --------------------------------------------------------------------------- D26 breaker

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


# ----------------------------------------------------------------------------- D33

#: The longest trade name or opt-out phrase a workspace sets (characters).
MAX_SETTING_LENGTH: Final = 160
#: A MERSİS number's digits.
MERSIS_DIGITS: Final = 16


@dataclass(frozen=True, slots=True)
class ContentRules:
    """A workspace's content settings (D33): its brand's ``trade_name`` and ``mersis``
    number (16 digits), its own ``opt_out`` phrase besides İYS's ``RET`` … ``3338``, and
    whether hints ``refuse`` a commercial SMS (default: they only warn). Turning ``refuse``
    on needs a trade name or a MERSİS number to check."""

    trade_name: str | None = None
    mersis: str | None = None
    opt_out: str | None = None
    refuse: bool = False

    def __post_init__(self) -> None:
        # RequestInvalid (400) naming the setting: the CLI and the library show it as is.
        _check_phrase("trade_name", self.trade_name)
        _check_phrase("opt_out", self.opt_out)
        mersis = self.mersis
        if mersis is not None and (len(mersis) != MERSIS_DIGITS or not mersis.isascii()
                                   or not mersis.isdigit()):  # fmt: skip
            raise RequestInvalid.for_field("mersis", f"must be {MERSIS_DIGITS} digits")
        if self.refuse and self.trade_name is None and self.mersis is None:
            raise RequestInvalid.for_field(
                "refuse", "needs the trade name or the MERSİS number to check texts against"
            )

    def to_json(self) -> dict[str, object] | None:
        """As a store keeps it: ``None`` for the defaults (nothing set, hints warn)."""
        if self == ContentRules():
            return None
        return {"trade_name": self.trade_name, "mersis": self.mersis, "opt_out": self.opt_out,
                "refuse": self.refuse}  # fmt: skip

    @classmethod
    def from_json(cls, document: Mapping[str, object] | None) -> ContentRules:
        if document is None:
            return cls()
        return cls(
            trade_name=_text_or_none(document.get("trade_name")),
            mersis=_text_or_none(document.get("mersis")),
            opt_out=_text_or_none(document.get("opt_out")),
            refuse=document.get("refuse") is True,
        )


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _check_phrase(name: str, value: str | None) -> None:
    if value is None:
        return
    if not 1 <= len(value) <= MAX_SETTING_LENGTH:
        raise RequestInvalid.for_field(name, f"must be 1-{MAX_SETTING_LENGTH} characters")
    if any(unicodedata.category(c) == "Cc" for c in value):
        raise RequestInvalid.for_field(name, "must not contain control characters")
    # The hints match words: a phrase of punctuation alone would match nothing, ever.
    if not any(c.isalnum() for c in value):
        raise RequestInvalid.for_field(name, "must contain a letter or a digit")
