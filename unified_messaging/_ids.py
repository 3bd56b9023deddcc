"""Identifiers: a prefix naming the kind, then a time-ordered random part (ULID layout).

Time-ordered ids keep B-tree inserts at the right edge of the index, so the SQL stores stay
fast as the message table grows; the 80 random bits make them unguessable. Within one
millisecond the random part counts up (ULID's monotonic mode), so ids made by one process
sort in the order they were made, which breaks ties between equal timestamps.
"""

from __future__ import annotations

import os
import threading
import time

__all__ = ["new_id"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_RANDOM_BITS = 80
_lock = threading.Lock()
_last_millis = -1
_last_random = 0


def _base32(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "".join(reversed(chars))


def _next() -> tuple[int, int]:
    global _last_millis, _last_random
    millis = time.time_ns() // 1_000_000
    with _lock:
        if millis <= _last_millis:
            millis = _last_millis
            # Add a random step rather than 1, so the next id stays unguessable.
            _last_random += 1 + int.from_bytes(os.urandom(4), "big")
            if _last_random >= 1 << _RANDOM_BITS:  # overflow: borrow the next millisecond
                millis += 1
                _last_random = int.from_bytes(os.urandom(9), "big")
        else:
            _last_random = int.from_bytes(os.urandom(9), "big")  # 72 bits: room to count up
        _last_millis = millis
        return millis, _last_random


def new_id(prefix: str) -> str:
    """``prefix_`` + 26 characters: 48 bits of milliseconds, 80 random bits."""
    millis, randomness = _next()
    return f"{prefix}_{_base32(millis, 10)}{_base32(randomness, 16)}"
