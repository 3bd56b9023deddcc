"""The SMS-pumping guard's rules (D34), as data and pure functions: no I/O.

- :class:`Velocity`: at most ``limit`` starts per ``window``, and its text form (``20/10m``);
- :class:`GuardSettings`: a workspace's two velocities and the length of a number range,
  every field with its documented default;
- :func:`number_range` and :func:`address_range`: what a start is counted under.

The guard itself (the buckets, the refusal, its audit row and metric) is ``_guard``.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from .._errors import RequestInvalid
from .._policies import WINDOW_UNITS, window_text

__all__ = [
    "DEFAULT_ADDRESS_VELOCITY",
    "DEFAULT_PREFIX_DIGITS",
    "DEFAULT_PREFIX_VELOCITY",
    "PREFIX_DIGITS",
    "GuardSettings",
    "Velocity",
    "address_range",
    "number_range",
    "parse_velocity",
]

#: The digits of the national number that make a range: 6 is ``+90 5XX YYY`` (10,000
#: numbers), the block an operator hands out and a premium-rate range is sold in.
DEFAULT_PREFIX_DIGITS: Final = 6
PREFIX_DIGITS: Final = range(3, 10)
_MIN_WINDOW: Final = timedelta(seconds=1)
_MAX_WINDOW: Final = timedelta(days=1)
_MAX_LIMIT: Final = 100_000
_TEXT: Final = re.compile(r"\s*(\d{1,9})\s*/\s*(\d{1,9})\s*([smhd]?)\s*", re.IGNORECASE | re.ASCII)
#: Turkey's country code: its national numbers start after ``+90``.
_TURKEY: Final = "+90"
#: An IPv6 client is counted by its /64: one subscriber gets at least that many addresses.
_IPV6_PREFIX: Final = 64


@dataclass(frozen=True, slots=True)
class Velocity:
    """At most ``limit`` starts in a ``window``: a bucket of ``limit`` that refills evenly
    over ``window`` (a burst of ``limit``, then one more every ``window / limit``)."""

    limit: int
    window: timedelta
    #: The setting a bad value is refused under (RequestInvalid names it).
    name: str = field(default="velocity", compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int):
            raise RequestInvalid.for_field(self.name, "the limit must be a whole number")
        if not 1 <= self.limit <= _MAX_LIMIT:
            raise RequestInvalid.for_field(self.name, f"the limit must be 1-{_MAX_LIMIT}")
        if not isinstance(self.window, timedelta) or not (
            _MIN_WINDOW <= self.window <= _MAX_WINDOW
        ):
            raise RequestInvalid.for_field(self.name, "the window must be 1 second to 1 day")

    @property
    def rate(self) -> float:
        """Starts per second the bucket refills at."""
        return self.limit / self.window.total_seconds()

    def __str__(self) -> str:
        """The text form :func:`parse_velocity` reads: ``20/10m``."""
        return f"{self.limit}/{window_text(self.window)}"


DEFAULT_PREFIX_VELOCITY: Final = Velocity(20, timedelta(minutes=10), "prefix_limit")
DEFAULT_ADDRESS_VELOCITY: Final = Velocity(10, timedelta(minutes=10), "address_limit")


def parse_velocity(text: str, name: str) -> Velocity | None:
    """``N/WINDOW`` (``20/10m``, ``5/1h``, ``3/90s``; a bare window is seconds), or ``off``
    for none; anything else is :class:`RequestInvalid` naming ``name``."""
    if text.strip().lower() in {"off", "none"}:
        return None
    match = _TEXT.fullmatch(text)
    if match is None:
        raise RequestInvalid.for_field(name, f"{text!r} is not N/WINDOW (e.g. 20/10m) or off")
    count, amount, unit = match.groups()
    seconds = int(amount) * WINDOW_UNITS[(unit or "s").lower()]
    return Velocity(int(count), timedelta(seconds=seconds), name)


@dataclass(frozen=True, slots=True)
class GuardSettings:
    """A workspace's SMS-pumping guard (D34); ``None`` turns a rule off."""

    #: Starts to numbers of one range (the first ``prefix_digits`` of the national number).
    prefix_limit: Velocity | None = DEFAULT_PREFIX_VELOCITY
    prefix_digits: int = DEFAULT_PREFIX_DIGITS
    #: Starts for one end-user address (the request's ``client_ip``).
    address_limit: Velocity | None = DEFAULT_ADDRESS_VELOCITY

    def __post_init__(self) -> None:
        digits = self.prefix_digits
        if isinstance(digits, bool) or not isinstance(digits, int) or digits not in PREFIX_DIGITS:
            raise RequestInvalid.for_field("prefix_digits", "must be 3-9")
        for name in ("prefix_limit", "address_limit"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, Velocity):
                raise RequestInvalid.for_field(name, "must be N/WINDOW (e.g. 20/10m) or off")
            if value is not None and value.name != name:
                object.__setattr__(self, name, Velocity(value.limit, value.window, name))


def number_range(to: str, digits: int) -> str | None:
    """The range ``to`` is counted in: ``+90`` and the first ``digits`` digits of a Turkish
    national number (``+90555123``); another country's number, its first ``2 + digits``
    digits after the ``+`` (the country code is not split out); ``None`` for a recipient
    that is no phone number (a Telegram chat), which this rule does not count."""
    if not to.startswith("+") or not to[1:].isdigit():
        return None
    if to.startswith(_TURKEY):
        return to[: len(_TURKEY) + digits]
    return to[: 1 + 2 + digits]


def address_range(client_ip: str | None) -> str | None:
    """What an end user's address is counted under: an IPv4 address itself, an IPv6
    address by its /64 (``2001:db8:1:2::/64``); ``None`` without one."""
    if client_ip is None:
        return None
    address = ipaddress.ip_address(client_ip)
    if address.version == 6:
        mapped = address.ipv4_mapped
        if mapped is not None:
            return str(mapped)
        network = ipaddress.ip_network(f"{address}/{_IPV6_PREFIX}", strict=False)
        return str(network)
    return str(address)
