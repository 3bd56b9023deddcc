"""Identifiers: a prefix naming the kind, then a time-ordered random part (ULID layout).

Time-ordered ids keep B-tree inserts at the right edge of the index, so the SQL stores stay
fast as the message table grows; the 80 random bits make them unguessable.

Within one process ids are also strictly increasing (ULID's monotonic variant): two ids made
in the same millisecond, or after the system clock stepped back, still sort in the order they
were made. The stores break ``created_at`` ties by id (and a ``ManualClock`` makes every
``created_at`` tie), so "first added" must mean "smallest id". The step inside a millisecond
is random rather than ``+1``, so the next id is not guessable from the last one.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_RANDOM_LIMIT = 1 << _RANDOM_BITS

_lock = threading.Lock()
_last_millis = -1
_last_random = 0


# Every pair of Crockford characters, indexed by its 10 bits: 13 lookups make an id. (On
# Python 3.11 ``base64.b32encode`` is pure Python and several times slower than this.)
_PAIRS: tuple[str, ...] = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
_PAIR_SHIFTS = tuple(range(120, -1, -10))


def _encode(value: int) -> str:
    """The 128-bit ``value`` as 26 Crockford base32 characters (2 leading zero bits)."""
    pairs = _PAIRS
    return "".join([pairs[(value >> shift) & 0x3FF] for shift in _PAIR_SHIFTS])


def _next_parts() -> tuple[int, int]:
    """The (milliseconds, randomness) of the next id, strictly above the previous one."""
    global _last_millis, _last_random
    millis = time.time_ns() // 1_000_000
    with _lock:
        if millis > _last_millis:
            randomness = int.from_bytes(os.urandom(_RANDOM_BITS // 8), "big")
        else:
            # Same millisecond, or the clock went back: continue from the last id.
            millis = _last_millis
            randomness = _last_random + 1 + int.from_bytes(os.urandom(4), "big")
            if randomness >= _RANDOM_LIMIT:
                # The random part is used up (2**80 / 2**32 ids in one ms): borrow the next ms.
                millis += 1
                randomness = int.from_bytes(os.urandom(_RANDOM_BITS // 8), "big") >> 1
        _last_millis, _last_random = millis, randomness
    return millis, randomness


def new_id(prefix: str) -> str:
    """``prefix_`` + 26 characters: 48 bits of milliseconds, 80 random bits."""
    millis, randomness = _next_parts()
    return f"{prefix}_{_encode(millis << _RANDOM_BITS | randomness)}"
