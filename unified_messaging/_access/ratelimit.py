"""Per-key request rate limiting (D16): the policy, the decision, and the in-process backend.

The algorithm is a token bucket with continuous refill: a bucket holds up to ``burst`` tokens,
gains ``rate`` tokens per second, and each request takes ``cost`` tokens (a bulk request is one
request, so the edge always passes 1). A request is allowed when the bucket holds enough tokens.
A bucket that has refilled completely is the same as no bucket at all, which is what lets both
backends forget keys: the in-process one lazily, the Redis one (:mod:`._redis_ratelimit`) by key
expiry.

:class:`RateLimitDecision` carries what the HTTP edge renders; see :meth:`RateLimitDecision.headers`
for the exact header syntax.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from .._clock import Clock, SystemClock

__all__ = [
    "DEFAULT_POLICY",
    "POLICY_NAME",
    "MemoryRateLimiter",
    "RateLimitDecision",
    "RateLimitPolicy",
    "RateLimiter",
    "retry_after_header",
    "retry_after_seconds",
]

#: The policy identifier shown in ``RateLimit-Policy`` and ``RateLimit``: one policy per key.
POLICY_NAME = "default"

# Refill arithmetic is floating point: 0.02 s at 50/s may come out as 0.9999999 tokens, and a
# client that waited exactly Retry-After must not be refused for that.
_EPSILON = 1e-9


def _ceil(seconds: float) -> int:
    return max(0, math.ceil(seconds - _EPSILON))


def retry_after_seconds(seconds: float) -> int:
    """The whole seconds a ``Retry-After`` says for a wait of ``seconds`` (D16, D28): rounded
    up, so a client that waits them is never early, and at least 1 (a 0 invites a retry at
    once). ``seconds`` a float-noise hair (``_EPSILON``) above a whole second rounds down to
    it: the limiter admits that hair too (``take_tokens``), and the flood guard's waits come
    from ``timedelta``, whole microseconds, so they are never within ``_EPSILON`` above one."""
    return max(1, _ceil(seconds))


def retry_after_header(seconds: float) -> str:
    """The ``Retry-After`` field value for a wait of ``seconds``: :func:`retry_after_seconds`."""
    return str(retry_after_seconds(seconds))


@dataclass(frozen=True, slots=True)
class RateLimitPolicy:
    """How fast one key may call: ``rate`` tokens per second refill a bucket of ``burst``."""

    rate: float = 50.0
    burst: int = 100
    #: Whole seconds an empty bucket takes to fill: the draft's ``w`` (at least 1).
    window: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.rate, bool) or not isinstance(self.rate, int | float):
            raise TypeError("rate must be a number of tokens per second")
        if not math.isfinite(self.rate) or self.rate <= 0:
            raise ValueError("rate must be a finite number > 0")
        if isinstance(self.burst, bool) or not isinstance(self.burst, int):
            raise TypeError("burst must be an int")
        if self.burst <= 0:
            raise ValueError("burst must be > 0")
        # One type inside, so equal policies look equal in reprs and in the Redis arguments.
        object.__setattr__(self, "rate", float(self.rate))
        # Computed once: it goes into every decision.
        object.__setattr__(self, "window", max(1, _ceil(self.burst / self.rate)))

    def check_cost(self, cost: int) -> None:
        """Refuse a cost that could never be paid, rather than refusing the request forever."""
        if isinstance(cost, bool) or not isinstance(cost, int):
            raise TypeError("cost must be an int")
        if not 1 <= cost <= self.burst:
            raise ValueError(f"cost must be between 1 and the burst ({self.burst})")


DEFAULT_POLICY = RateLimitPolicy()


@dataclass(frozen=True, slots=True)
class RateLimitDecision:
    """The answer to one :meth:`RateLimiter.hit`, with everything the HTTP edge renders.

    ``limit`` is the burst; ``remaining`` the whole tokens left after this request;
    ``reset_after`` the seconds until the bucket is full again; ``retry_after`` the seconds until
    this request's cost is available (0 when allowed); ``window`` the policy's ``w`` (seconds for
    an empty bucket to fill), or ``None`` to leave ``w`` out.
    """

    allowed: bool
    limit: int
    remaining: int
    reset_after: float
    retry_after: float
    window: int | None = None

    def headers(self) -> dict[str, str]:
        """Response header fields of D16, for every authenticated response.

        The current draft-ietf-httpapi-ratelimit-headers syntax (two fields since -08): Structured
        Field items, each a policy named by a quoted string::

            RateLimit-Policy: "default";q=100;w=2
            RateLimit: "default";r=57;t=1

        ``q`` is the burst and ``w`` the seconds an empty bucket takes to fill, so ``q/w`` is
        the sustained rate. The older fields that most clients still read::

            RateLimit-Limit: 100
            RateLimit-Remaining: 57
            RateLimit-Reset: 1

        and, on a refusal only, ``Retry-After: <seconds>``. All times are whole seconds rounded
        up (Retry-After at least 1), so a client that waits them is never early. ``t`` and
        ``RateLimit-Reset`` always mean "until the bucket is full", so ``r`` and ``t`` together
        never promise more than the bucket gives; on a refusal ``Retry-After`` (which the draft
        tells clients to prefer) is the sooner time at which this request would fit.
        """
        reset = str(_ceil(self.reset_after))
        policy = f'"{POLICY_NAME}";q={self.limit}'
        if self.window is not None:
            policy += f";w={self.window}"
        fields = {
            "RateLimit-Policy": policy,
            "RateLimit": f'"{POLICY_NAME}";r={self.remaining};t={reset}',
            "RateLimit-Limit": str(self.limit),
            "RateLimit-Remaining": str(self.remaining),
            "RateLimit-Reset": reset,
        }
        if not self.allowed:
            fields["Retry-After"] = retry_after_header(self.retry_after)
        return fields


@runtime_checkable
class RateLimiter(Protocol):
    """Protocol: a token bucket per key, shared by every caller that uses the same backend."""

    async def hit(self, key: str, policy: RateLimitPolicy, cost: int = 1) -> RateLimitDecision:
        """Take ``cost`` tokens from ``key``'s bucket if it holds them, and say what happened.

        A refused hit takes nothing. Raises ``StorageUnavailable`` when a shared backend cannot
        be reached, ``ValueError`` for a cost outside ``1..policy.burst``.
        """
        ...

    async def aclose(self) -> None:
        """Release what the limiter holds (connections, memory)."""
        ...


def take_tokens(tokens: float, policy: RateLimitPolicy, cost: int) -> tuple[float, bool]:
    """Spend ``cost`` of ``tokens`` (already refilled) if there are enough: (left, allowed)."""
    if tokens + _EPSILON >= cost:
        return max(0.0, tokens - cost), True
    return tokens, False


def decide(allowed: bool, tokens: float, policy: RateLimitPolicy, cost: int) -> RateLimitDecision:
    """The decision for a bucket that holds ``tokens`` after the hit; shared by both backends."""
    tokens = min(float(policy.burst), max(0.0, tokens))
    retry_after = 0.0 if allowed else max(0.0, (cost - tokens) / policy.rate)
    return RateLimitDecision(
        allowed=allowed,
        limit=policy.burst,
        remaining=math.floor(tokens + _EPSILON),
        reset_after=max(0.0, (policy.burst - tokens) / policy.rate),
        retry_after=retry_after,
        window=policy.window,
    )


def check_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise ValueError("key must be a non-empty string")


@dataclass(slots=True)
class _Bucket:
    tokens: float
    stamp: float  # seconds since the limiter's epoch, when ``tokens`` was measured
    full_at: float  # when the bucket will have refilled, i.e. can be forgotten


class MemoryRateLimiter:
    """Token buckets in this process: the library default, and the backend for one process.

    O(1) per hit. Memory stays bounded two ways: buckets are kept in least-recently-used order
    and every hit forgets a few of the oldest that have refilled (a full bucket equals none);
    past ``max_keys`` the least recently used bucket is dropped even if not yet full, which can
    only make the limiter more lenient for that one key, never stricter.
    """

    _SWEEP_PER_HIT = 8

    def __init__(self, clock: Clock | None = None, *, max_keys: int = 100_000) -> None:
        if max_keys < 1:
            raise ValueError("max_keys must be >= 1")
        self._clock = clock or SystemClock()
        self._max_keys = max_keys
        # Seconds are measured from an epoch near now: timedelta arithmetic is exact to the
        # microsecond, where Unix timestamps as floats lose sub-microsecond precision.
        self._epoch: datetime = self._clock.now()
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        # The sync façade may drive limiters from other threads; no await happens under it.
        self._lock = threading.Lock()

    async def hit(self, key: str, policy: RateLimitPolicy, cost: int = 1) -> RateLimitDecision:
        check_key(key)
        policy.check_cost(cost)
        now = (self._clock.now() - self._epoch).total_seconds()
        with self._lock:
            self._forget_refilled(now)
            tokens = self._tokens_now(key, policy, now)
            tokens, allowed = take_tokens(tokens, policy, cost)
            self._store(key, policy, tokens, now)
        return decide(allowed, tokens, policy, cost)

    def _tokens_now(self, key: str, policy: RateLimitPolicy, now: float) -> float:
        bucket = self._buckets.pop(key, None)
        if bucket is None:
            return float(policy.burst)
        # A clock set backwards must not drain the bucket.
        elapsed = max(0.0, now - bucket.stamp)
        return min(float(policy.burst), bucket.tokens + elapsed * policy.rate)

    def _store(self, key: str, policy: RateLimitPolicy, tokens: float, now: float) -> None:
        if tokens + _EPSILON >= policy.burst:
            return
        full_at = now + (policy.burst - tokens) / policy.rate
        self._buckets[key] = _Bucket(tokens, now, full_at)
        if len(self._buckets) > self._max_keys:
            self._buckets.popitem(last=False)

    def _forget_refilled(self, now: float) -> None:
        for _ in range(self._SWEEP_PER_HIT):
            if not self._buckets:
                return
            key, oldest = next(iter(self._buckets.items()))
            if oldest.full_at > now:
                return
            del self._buckets[key]

    def __len__(self) -> int:
        """How many buckets are held (keys not known to be full)."""
        return len(self._buckets)

    async def aclose(self) -> None:
        with self._lock:
            self._buckets.clear()

    def __repr__(self) -> str:
        return f"MemoryRateLimiter(clock={self._clock!r}, max_keys={self._max_keys})"
