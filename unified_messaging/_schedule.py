"""When a message may be handed over: ``send_at`` and a workspace's quiet hours.

Pure rules, no I/O, on an injected ``now``:

- :func:`check_send_at`: a ``send_at`` is from now up to :data:`MAX_SCHEDULE` (30 days)
  ahead, else :class:`SendAtOutOfRange` (422). Its shape (ISO 8601 with an offset) is the
  request model's rule (400); this one needs the clock.
- :class:`QuietHours`: a daily window in a time zone (default ``Europe/Istanbul``) during
  which sends in its ``scope`` (``commercial``: connections whose IYS mode is commercial;
  ``all``) wait. :meth:`QuietHours.opens_at` says when a send due at a moment may go:
  ``None`` when it may go then, else the end of the window it falls in.
- :func:`hand_over_at`: the one answer for a send, at acceptance and at hand-over alike:
  the later of its ``send_at`` (or now) and the end of the quiet window it falls in, unless
  the send opted out (an OTP must not wait for the morning).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Final, Literal, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ._errors import RequestInvalid, SendAtOutOfRange
from ._types import IysMode

__all__ = [
    "DEFAULT_QUIET_ZONE",
    "MAX_SCHEDULE",
    "QUIET_SCOPES",
    "QuietHours",
    "QuietScope",
    "check_send_at",
    "hand_over_at",
    "is_commercial",
    "parse_quiet_hours",
]

#: How far ahead a send may be scheduled (Twilio allows 35 days, we keep 30).
MAX_SCHEDULE: Final = timedelta(days=30)
DEFAULT_QUIET_ZONE: Final = "Europe/Istanbul"
QuietScope = Literal["commercial", "all"]
QUIET_SCOPES: Final[tuple[QuietScope, ...]] = get_args(QuietScope)
#: The field a bad setting is refused under (RequestInvalid).
_FIELD: Final = "quiet_hours"
_WINDOW: Final = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$")


def check_send_at(send_at: datetime, now: datetime) -> datetime:
    """``send_at`` if it is from ``now`` up to 30 days ahead, else :class:`SendAtOutOfRange`
    (the request model has made sure it carries an offset)."""
    if send_at < now:
        raise SendAtOutOfRange(
            f"send_at {send_at.isoformat()} is in the past (now is {now.isoformat()})."
        )
    if send_at > now + MAX_SCHEDULE:
        raise SendAtOutOfRange("send_at must be at most 30 days ahead.")
    return send_at


def is_commercial(iys_mode: IysMode) -> bool:
    """Is traffic of this IYS mode commercial (what ``scope: commercial`` quiet hours hold)?"""
    return iys_mode != "informational"


@dataclass(frozen=True, slots=True)
class QuietHours:
    """A workspace's daily quiet window, ``start`` (inclusive) to ``end`` (exclusive) in
    ``zone``; a window whose end is before its start runs over midnight (``21:00-09:00``).

    Checked when made: the zone must be a known IANA name and the window not empty, else
    :class:`RequestInvalid` naming ``quiet_hours``.
    """

    start: time
    end: time
    zone: str = DEFAULT_QUIET_ZONE
    scope: QuietScope = "commercial"

    def __post_init__(self) -> None:
        if not isinstance(self.start, time) or not isinstance(self.end, time):
            raise RequestInvalid.for_field(_FIELD, "start and end must be times of day")
        if self.start == self.end:
            raise RequestInvalid.for_field(_FIELD, "the window must not be empty")
        if self.scope not in QUIET_SCOPES:
            raise RequestInvalid.for_field(_FIELD, "scope must be commercial or all")
        _zone(self.zone)

    def applies_to(self, iys_mode: IysMode) -> bool:
        return self.scope == "all" or is_commercial(iys_mode)

    def opens_at(self, moment: datetime) -> datetime | None:
        """``None`` when ``moment`` is outside the window; else the end of the window it is
        in (an aware datetime, in the zone), when a send may go."""
        zone = _zone(self.zone)
        local = moment.astimezone(zone)
        now = local.time().replace(tzinfo=None)
        if self.start < self.end:
            if not self.start <= now < self.end:
                return None
            day = local.date()
        else:  # over midnight
            if self.end <= now < self.start:
                return None
            day = local.date() + timedelta(days=1) if now >= self.start else local.date()
        # The first instant after ``moment`` whose wall clock reads ``end`` on ``day``. On
        # a fall-back night that time of day comes twice (``fold`` 0, then 1): a moment in
        # the repeated hour is held to the second; in a spring-forward gap it never comes,
        # and the moment goes.
        for fold in (0, 1):
            opens = datetime.combine(day, self.end, tzinfo=zone).replace(fold=fold)
            if opens.astimezone(UTC) > moment.astimezone(UTC):
                return opens
        return moment

    @property
    def window(self) -> str:
        """The text form :func:`parse_quiet_hours` reads: ``21:00-09:00``."""
        return f"{self.start:%H:%M}-{self.end:%H:%M}"

    def to_json(self) -> dict[str, str]:
        return {"window": self.window, "zone": self.zone, "scope": self.scope}

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> QuietHours:
        return parse_quiet_hours(
            str(data.get("window", "")),
            zone=str(data.get("zone", DEFAULT_QUIET_ZONE)),
            scope=str(data.get("scope", "commercial")),
        )


def parse_quiet_hours(
    window: str, *, zone: str = DEFAULT_QUIET_ZONE, scope: str = "commercial"
) -> QuietHours:
    """Quiet hours from their text form: ``window`` ``HH:MM-HH:MM`` (24-hour clock)."""
    found = _WINDOW.match(window.strip()) if isinstance(window, str) else None
    if found is None:
        raise RequestInvalid.for_field(_FIELD, "the window must read HH:MM-HH:MM, e.g. 21:00-09:00")
    start = time(int(found[1]), int(found[2]))
    end = time(int(found[3]), int(found[4]))
    if scope not in QUIET_SCOPES:
        raise RequestInvalid.for_field(_FIELD, "scope must be commercial or all")
    return QuietHours(start, end, zone, scope)


def _zone(name: str) -> ZoneInfo:
    if not isinstance(name, str) or not 1 <= len(name) <= 64 or ".." in name:
        raise RequestInvalid.for_field(_FIELD, "the time zone must be an IANA name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise RequestInvalid.for_field(
            _FIELD, f"unknown time zone {name!r} (an IANA name, e.g. Europe/Istanbul)"
        ) from None


def hand_over_at(
    due: datetime,
    quiet: QuietHours | None,
    iys_mode: IysMode,
    *,
    ignore_quiet_hours: bool = False,
) -> datetime:
    """When a send due at ``due`` (its ``send_at``, or now) may be handed over: ``due``, or
    the end of the quiet window it falls in when the workspace's quiet hours hold it."""
    if quiet is None or ignore_quiet_hours or not quiet.applies_to(iys_mode):
        return due
    return quiet.opens_at(due) or due
