"""What one ``serve`` process allows its clients, and how a refusal is reported.

Kept apart from the protocol that enforces it (``_serve_http``) so the command line can show
the defaults without importing uvicorn, which is an optional extra.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_KEEP_ALIVE_TIMEOUT",
    "REPORT_EVERY",
    "LogThrottle",
    "ServeLimits",
    "default_max_connections",
]

DEFAULT_KEEP_ALIVE_TIMEOUT: Final = 5.0
DEFAULT_HEADER_TIMEOUT: Final = 10.0
DEFAULT_BODY_TIMEOUT: Final = 30.0
#: How often a refusal or cut-off that keeps happening is logged again (with its count).
REPORT_EVERY: Final = 10.0

_DEFAULT_MAX_CONNECTIONS: Final = 1000
# Descriptors kept for everything that is not a client: the database pool, Redis, logs.
_RESERVED_FDS: Final = 100

logger = logging.getLogger("unified_messaging.serve")


@dataclass(frozen=True)
class ServeLimits:
    """What one ``serve`` process allows its clients (seconds, and connections)."""

    max_connections: int
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE_TIMEOUT
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    report_every: float = REPORT_EVERY


def default_max_connections() -> int:
    """1000, or fewer when the descriptor limit (``ulimit -n``) would run out first."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return _DEFAULT_MAX_CONNECTIONS
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _DEFAULT_MAX_CONNECTIONS
    return max(1, min(_DEFAULT_MAX_CONNECTIONS, soft - _RESERVED_FDS))


class LogThrottle:
    """A warning for an event that may happen thousands of times a second: logged when it
    first happens, then at most once per ``every`` seconds with how often it happened."""

    def __init__(
        self,
        message: str,
        every: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        log: logging.Logger = logger,
    ) -> None:
        self._message = message
        self._every = every
        self._clock = clock
        self._log = log
        self._count = 0
        self._last: float | None = None

    def hit(self) -> None:
        self._count += 1
        now = self._clock()
        if self._last is None:
            self._log.warning(
                "%s (repeats are counted, one line per %g s)", self._message, self._every
            )
        elif now - self._last >= self._every:
            self._log.warning(
                "%s (%d times in the last %.0f s)", self._message, self._count, now - self._last
            )
        else:
            return
        self._count = 0
        self._last = now
