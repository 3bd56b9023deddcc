"""A connection's circuit-breaker thresholds (D26): when its breaker opens, how long it stays open.

The policy is a record of the core (:mod:`.._policies`, with the flood guard's limit), since
:mod:`.._domain` keeps one on each :class:`Connection`; its names stay importable from here,
where the routing code that applies it (:mod:`._breaker_state`) looks for them.
"""

from __future__ import annotations

from .._policies import (
    BREAKER_FIELDS,
    DEFAULT_BREAKER_POLICY,
    MAX_CALLS,
    MAX_SPAN,
    MIN_SPAN,
    BreakerPolicy,
)

__all__ = [
    "BREAKER_FIELDS",
    "DEFAULT_BREAKER_POLICY",
    "MAX_CALLS",
    "MAX_SPAN",
    "MIN_SPAN",
    "BreakerPolicy",
]
