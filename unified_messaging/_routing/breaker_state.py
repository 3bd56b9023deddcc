"""The circuit breaker's state machine (D26), as pure functions of a state, a time and a policy.

::

                 window crosses the policy            cool-down over: the next call
                 (ratio or consecutive)                claims the one probe (a lease)
      ┌────────┐ ─────────────────────────▶ ┌──────┐ ───────────────────────────▶ ┌───────────┐
      │ closed │                            │ open │                              │ half_open │
      └────────┘ ◀─────────────────────┐    └──────┘ ◀─────────────────────────── └───────────┘
                                       │                  the probe failed              │
                                       └────────────────────────────────────────────────┘
                                                          the probe succeeded

A provider that asks us to wait (429 ``Retry-After``, Telegram's ``retry_after``, NetGSM code
80) also *pauses* the connection until then, whatever the phase: no call goes out meanwhile.

The runtime (:mod:`._breaker`) keeps one :class:`BreakerState` per connection in a shared
place (Redis or the store) and changes it with compare-and-set, so the rules live here once
for every backend. Times are the injected clock's; a clock that jumps back (an NTP step, a
VM restored) must neither open nor close anything, so :func:`settle` slides a state whose
own time is ahead of "now" back by the jump: every remaining span (cool-down, pause, lease,
window) is kept as it was, as if no time had passed. Small differences (a second, the skew
between hosts) are clamped instead.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

from ..providers.base import SubmitOutcome
from .breaker_policy import BreakerPolicy

__all__ = [
    "CIRCUIT_OPEN",
    "JUMP_TOLERANCE",
    "MAX_PAUSE",
    "NEUTRAL_CODES",
    "BreakerState",
    "Bucket",
    "Phase",
    "StoredBreaker",
    "Tally",
    "Verdict",
    "admit",
    "give_back_probe",
    "observe",
    "settle",
    "tally",
]

Phase = Literal["closed", "open", "half_open"]

#: The attempt error code of a hop skipped because its breaker is open or it is paused.
CIRCUIT_OPEN: Final = "PROVIDER_CIRCUIT_OPEN"
#: Outcomes that say nothing about the connection's health: our own skip, and a provider's
#: per-recipient throttle (one hot number must not stop everybody's messages).
NEUTRAL_CODES: Final = frozenset({CIRCUIT_OPEN, "PROVIDER_RECIPIENT_THROTTLED"})
#: The longest pause a provider's ``Retry-After`` can cause: a broken header of days must not
#: stop a connection for days; the breaker's probe still guards it afterwards.
MAX_PAUSE: Final = timedelta(hours=1)
#: A clock this much behind the state's own time jumped back: the state slides with it.
JUMP_TOLERANCE: Final = timedelta(seconds=1)
#: Buckets per window: a sliding window in tenths, so one write per failure stays small.
_BUCKETS: Final = 10
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Bucket:
    """Calls and unavailable calls that ended within ``[start, start + window / 10)``."""

    start: datetime
    calls: int
    failures: int


@dataclass(frozen=True, slots=True)
class StoredBreaker:
    """A breaker state as a backend keeps it: its JSON text and its compare-and-set version
    (``0`` is never stored: it means "no row yet")."""

    data: str
    version: int


@dataclass(frozen=True, slots=True)
class BreakerState:
    phase: Phase = "closed"
    buckets: tuple[Bucket, ...] = ()
    #: Unavailable calls in a row, across every process.
    consecutive: int = 0
    #: ``open``: when the cool-down ends; ``half_open``: when the probe's lease runs out.
    until: datetime | None = None
    #: No call before this: the provider asked us to wait.
    paused_until: datetime | None = None
    #: When it last opened (kept through half-open, for the operator).
    opened_at: datetime | None = None
    #: Why it opened or paused, in words for the operator (no secrets: codes and counts).
    reason: str | None = None
    #: The latest time this state was computed at: a clock reading earlier jumped back.
    at: datetime | None = None
    #: The backend's compare-and-set version this state was read at (not stored in it).
    version: int = 0

    def window_counts(self, now: datetime, window: timedelta) -> tuple[int, int]:
        """``(calls, failures)`` within ``window`` before ``now``."""
        live = _prune(self.buckets, now, window)
        return sum(b.calls for b in live), sum(b.failures for b in live)

    def paused(self, now: datetime) -> bool:
        return self.paused_until is not None and now < self.paused_until

    def to_json(self) -> str:
        document = {
            "phase": self.phase,
            "buckets": [[_ms(b.start), b.calls, b.failures] for b in self.buckets],
            "consecutive": self.consecutive,
            "until": _ms_or_none(self.until),
            "paused_until": _ms_or_none(self.paused_until),
            "opened_at": _ms_or_none(self.opened_at),
            "reason": self.reason,
            "at": _ms_or_none(self.at),
        }
        return json.dumps(document, separators=(",", ":"))

    @classmethod
    def from_stored(cls, stored: StoredBreaker | None) -> BreakerState:
        """The state a backend holds; a fresh (closed) one for none, or for one this version
        of the library cannot read (a breaker forgets, it never blocks sends)."""
        if stored is None:
            return cls()
        try:
            document = json.loads(stored.data)
            return cls._from_document(document, stored.version)
        except (ValueError, TypeError, KeyError, OverflowError):
            return cls(version=stored.version)

    @classmethod
    def _from_document(cls, document: Mapping[str, object], version: int) -> BreakerState:
        phase = document["phase"]
        if phase not in ("closed", "open", "half_open"):
            raise ValueError(phase)
        raw = document.get("buckets") or []
        if not isinstance(raw, list):
            raise TypeError("buckets")
        buckets = tuple(Bucket(_time(int(s)), int(c), int(f)) for s, c, f in raw)
        reason = document.get("reason")
        return cls(
            phase=phase,
            buckets=buckets,
            consecutive=int(str(document.get("consecutive") or 0)),
            until=_time_or_none(document.get("until")),
            paused_until=_time_or_none(document.get("paused_until")),
            opened_at=_time_or_none(document.get("opened_at")),
            reason=reason if isinstance(reason, str) else None,
            at=_time_or_none(document.get("at")),
            version=version,
        )


@dataclass(frozen=True, slots=True)
class Tally:
    """What one hop's calls said about the connection (neutral outcomes left out)."""

    calls: int
    failures: int
    #: Unavailable calls after the last available one (all of them when none was).
    trailing: int
    #: The longest wait a provider asked for, in seconds.
    pause: float | None
    #: The error code of the last unavailable call.
    code: str | None


def tally(outcomes: Iterable[SubmitOutcome]) -> Tally:
    calls = failures = trailing = 0
    pause: float | None = None
    code: str | None = None
    for outcome in outcomes:
        if outcome.error is not None and outcome.error.code in NEUTRAL_CODES:
            continue
        calls += 1
        # A call whose answer never came or could not be read (``unknown``) says
        # as much about the provider's health as an unavailable one.
        if outcome.kind not in ("unavailable", "unknown"):
            trailing = 0
            continue
        failures += 1
        trailing += 1
        code = outcome.error.code if outcome.error is not None else code
        wait = outcome.retry_after
        if wait is not None and wait > 0 and (pause is None or wait > pause):
            pause = wait
    return Tally(calls, failures, trailing, pause, code)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What :func:`admit` decided: ``allowed`` (``probe``: as the one half-open call), or
    not, until when and why; ``claim`` is the state to store first (the probe's lease)."""

    allowed: bool
    probe: bool = False
    until: datetime | None = None
    why: Literal["open", "probing", "paused"] | None = None
    claim: BreakerState | None = None


def settle(state: BreakerState, now: datetime) -> tuple[BreakerState, datetime]:
    """``state`` and ``now`` on one timeline: a clock behind the state's own time by more
    than :data:`JUMP_TOLERANCE` jumped back, and the state slides back with it (every span
    kept); a smaller lag (hosts' skew) is clamped to the state's time."""
    if state.at is None or now >= state.at:
        return state, now
    if state.at - now <= JUMP_TOLERANCE:
        return state, state.at
    shift = state.at - now
    return (
        replace(
            state,
            buckets=tuple(replace(b, start=b.start - shift) for b in state.buckets),
            until=_minus(state.until, shift),
            paused_until=_minus(state.paused_until, shift),
            opened_at=_minus(state.opened_at, shift),
            at=now,
        ),
        now,
    )


def admit(
    state: BreakerState, now: datetime, policy: BreakerPolicy, *, lease: timedelta
) -> Verdict:
    """May a call go to the connection now? Open past its cool-down (or half-open past its
    probe's lease: the prober died) lets exactly one through, by claiming the lease."""
    state, now = settle(state, now)
    blocked_until: datetime | None = None
    why: Literal["open", "probing", "paused"] | None = None
    if state.phase != "closed":
        assert state.until is not None
        if now < state.until:
            blocked_until, why = state.until, "open" if state.phase == "open" else "probing"
    paused = state.paused_until if state.paused(now) else None
    if paused is not None and (blocked_until is None or paused > blocked_until):
        blocked_until, why = paused, "paused"
    if why is not None:
        return Verdict(False, until=blocked_until, why=why)
    if state.phase == "closed":
        return Verdict(True)
    claim = replace(state, phase="half_open", until=now + lease, at=now)
    return Verdict(True, probe=True, claim=claim)


def observe(
    state: BreakerState,
    now: datetime,
    policy: BreakerPolicy,
    calls: Tally,
    *,
    probe: bool,
    earlier_successes: int = 0,
) -> BreakerState | None:
    """The state after ``calls`` ended, or ``None`` when nothing worth a write happened
    (successes while all is well: the caller keeps them, as ``earlier_successes`` of a
    later write). ``probe``: the calls were the half-open probe this process claimed."""
    state, now = settle(state, now)
    if probe and state.phase == "half_open" and not calls.calls:
        return give_back_probe(state, now)
    if probe and state.phase == "half_open":
        if calls.failures:
            return _opened(state, now, policy, calls, "the probe call was unavailable")
        return _paused(BreakerState(at=now), now, calls.pause)
    if state.phase != "closed":
        # Calls that were in flight when it opened: the probe alone decides. A provider's
        # request to wait still counts.
        return _paused(replace(state, at=now), now, calls.pause) if calls.pause else None
    if not calls.failures and not calls.pause and _clean(state, now, policy.window):
        return None
    start = _bucket_start(now, policy.window)
    buckets = _add(
        _prune(state.buckets, now, policy.window),
        Bucket(start, calls.calls + earlier_successes, calls.failures),
    )
    consecutive = (
        state.consecutive + calls.failures if calls.trailing == calls.calls else calls.trailing
    )
    counted = replace(state, buckets=buckets, consecutive=consecutive, at=now)
    in_window = sum(b.calls for b in buckets)
    failed = sum(b.failures for b in buckets)
    if consecutive >= policy.consecutive:
        return _opened(counted, now, policy, calls, f"{consecutive} calls in a row unavailable")
    if in_window >= policy.min_calls and failed >= policy.failure_ratio * in_window:
        why = f"{failed} of {in_window} calls unavailable in {_span(policy.window)}"
        return _opened(counted, now, policy, calls, why)
    return _paused(counted, now, calls.pause)


def give_back_probe(state: BreakerState, now: datetime) -> BreakerState:
    """The half-open probe that said nothing about the connection: routing never called it
    (our own send rate kept its message back, D27) or its one answer was neutral. Its lease
    goes back at once: open with the cool-down over, so the next call (that message when
    its slot comes, or any other) is the probe. Held to the end of its lease instead, it
    would keep the connection shut for the whole submit time-out and refuse the probe's own
    message with ``PROVIDER_CIRCUIT_OPEN``."""
    return replace(state, phase="open", until=now, at=now)


def _opened(
    state: BreakerState, now: datetime, policy: BreakerPolicy, calls: Tally, why: str
) -> BreakerState:
    opened = replace(
        state,
        phase="open",
        until=now + policy.cooldown,
        opened_at=now,
        reason=f"{why} (last error {calls.code})" if calls.code else why,
        at=now,
    )
    return _paused(opened, now, calls.pause)


def _paused(state: BreakerState, now: datetime, seconds: float | None) -> BreakerState:
    if not seconds:
        return state
    wait = min(timedelta(seconds=seconds), MAX_PAUSE)
    until = now + wait
    if state.paused_until is not None and state.paused_until > until:
        return state
    return replace(state, paused_until=until, at=now)


def _clean(state: BreakerState, now: datetime, window: timedelta) -> bool:
    """Nothing to remember: no failure in the window, none in a row, no pause."""
    if state.consecutive or state.paused(now):
        return False
    return not any(b.failures for b in _prune(state.buckets, now, window))


def _prune(buckets: Sequence[Bucket], now: datetime, window: timedelta) -> tuple[Bucket, ...]:
    return tuple(b for b in buckets if b.start > now - window)


def _add(buckets: tuple[Bucket, ...], new: Bucket) -> tuple[Bucket, ...]:
    if buckets and buckets[-1].start == new.start:
        last = buckets[-1]
        merged = Bucket(last.start, last.calls + new.calls, last.failures + new.failures)
        return (*buckets[:-1], merged)
    return (*buckets, new)[-(_BUCKETS + 1) :]


def _bucket_start(now: datetime, window: timedelta) -> datetime:
    width = max(1, _ms_of(window) // _BUCKETS)
    return _time(_ms(now) // width * width)


def _span(window: timedelta) -> str:
    return f"{window.total_seconds():g} s"


def _minus(value: datetime | None, shift: timedelta) -> datetime | None:
    return None if value is None else value - shift


def _ms_of(delta: timedelta) -> int:
    return delta // timedelta(milliseconds=1)


def _ms(moment: datetime) -> int:
    return _ms_of(moment - _EPOCH)


def _ms_or_none(moment: datetime | None) -> int | None:
    return None if moment is None else _ms(moment)


def _time(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def _time_or_none(value: object) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("a time")
    return _time(value)
