"""What the hand-over gate (D35) says of one message at one hop: go, stop, or hold; and
the ends a message that never reached a provider is given. Light: the lifecycle's rules,
which the public webhook verifier imports, take these from here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from .._domain import Attempt, ErrorInfo

__all__ = [
    "CANCELED",
    "GO",
    "NO_PROVIDER_REACHED",
    "QUEUE_EXPIRED",
    "Go",
    "HoldUntil",
    "Stop",
    "Verdict",
    "no_provider_reached",
]


@dataclass(frozen=True, slots=True)
class Go:
    """Hand it over now."""


@dataclass(frozen=True, slots=True)
class Stop:
    """Never hand it over: it ends ``failed`` with ``error``, no provider attempt made."""

    error: ErrorInfo


@dataclass(frozen=True, slots=True)
class HoldUntil:
    """Not now: hand it over at ``until``, when the gate is asked again."""

    until: datetime


Verdict = Go | Stop | HoldUntil
GO: Final = Go()

#: The end of a message canceled before it was handed to a provider.
CANCELED: Final = ErrorInfo("CANCELED", "Canceled before it was handed to a provider.")
#: The end of a message no provider could be handed within the workspace's queue TTL
#: (D7), that no provider ever answered as unavailable (the D7 retries end with
#: ``PROVIDER_UNAVAILABLE`` naming each cause instead).
QUEUE_EXPIRED: Final = ErrorInfo(
    "QUEUE_EXPIRED", "Not handed to a provider within the workspace's queue TTL."
)

#: Why a message failed when no provider of its chain took it (each attempt says why).
NO_PROVIDER_REACHED: Final = ErrorInfo("PROVIDER_UNAVAILABLE", "No provider could be reached.")
#: How much of each provider's cause :func:`no_provider_reached` repeats.
_CAUSE_CHARS: Final = 300


def no_provider_reached(attempts: Sequence[Attempt]) -> ErrorInfo:
    """D7's error, saying why each provider of the round failed: the message
    of a single send's 502 and of the record, where ``attempts[]`` may not be shown; also
    the end of a message D7's retries could not hand over within its queue TTL."""
    causes: list[str] = []
    for attempt in attempts:
        if attempt.error is not None and attempt.status in ("rejected", "unavailable"):
            cause = attempt.error.message
            if len(cause) > _CAUSE_CHARS:
                cause = cause[: _CAUSE_CHARS - 1] + "…"
            causes.append(f"{attempt.provider}: {cause}")
    if not causes:
        return NO_PROVIDER_REACHED
    return replace(NO_PROVIDER_REACHED, message="No provider could be reached. " + " ".join(causes))
