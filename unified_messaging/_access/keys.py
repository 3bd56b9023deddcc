"""API keys (D1): ``um_live_`` / ``um_test_`` + 40 base62 characters; only a hash is kept."""

from __future__ import annotations

import hashlib
import re
import secrets
import string
from typing import Final

__all__ = [
    "LIVE_PREFIX",
    "TEST_PREFIX",
    "generate_api_key",
    "hash_api_key",
    "key_display_prefix",
    "parse_api_key",
]

LIVE_PREFIX: Final = "um_live_"
TEST_PREFIX: Final = "um_test_"
_ALPHABET = string.ascii_letters + string.digits
_SECRET_LENGTH = 40
# 32+ base62 characters after the prefix; an upper bound keeps hashing cheap for garbage.
_KEY_SHAPE = re.compile(r"um_(live|test)_[A-Za-z0-9]{32,128}")


def generate_api_key(*, livemode: bool) -> str:
    body = "".join(secrets.choice(_ALPHABET) for _ in range(_SECRET_LENGTH))
    return (LIVE_PREFIX if livemode else TEST_PREFIX) + body


def parse_api_key(candidate: str) -> bool | None:
    """``True`` for a well-formed live key, ``False`` for a test key, ``None`` if malformed."""
    match = _KEY_SHAPE.fullmatch(candidate)
    if match is None:
        return None
    return match.group(1) == "live"


def hash_api_key(key: str) -> str:
    # A plain SHA-256 is right here: keys carry 238 bits of randomness, so there is nothing
    # for a slow password hash to protect, and lookups must stay O(1) by hash.
    return hashlib.sha256(key.encode("ascii")).hexdigest()


def key_display_prefix(key: str) -> str:
    """What may be shown to identify a key: its mode prefix and four characters."""
    return key[: len(LIVE_PREFIX) + 4]
