"""Identifiers: a prefix naming the kind, then a time-ordered random part (ULID layout).

Time-ordered ids keep B-tree inserts at the right edge of the index, so the SQL stores stay
fast as the message table grows; the 80 random bits make them unguessable.
"""

from __future__ import annotations

import os
import time

__all__ = ["new_id"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _base32(value: int, length: int) -> str:
    chars = []
    for _ in range(length):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    """``prefix_`` + 26 characters: 48 bits of milliseconds, 80 random bits."""
    millis = time.time_ns() // 1_000_000
    randomness = int.from_bytes(os.urandom(10), "big")
    return f"{prefix}_{_base32(millis, 10)}{_base32(randomness, 16)}"
