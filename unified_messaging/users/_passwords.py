"""Dashboard passwords (D31): argon2id hashes, made and checked in this one place, and the
rules a new password must meet.

argon2-cffi comes with the ``dashboard`` extra and is imported on first use, so the library
loads without it; a missing extra is one line naming it. The parameters are argon2-cffi's
defaults (RFC 9106's second recommended set: 64 MiB, 3 passes, 4 lanes), which it raises
over time; :func:`verify_password` reads them from the stored hash, so old hashes keep
working.

One hash or check costs a quarter of a second of CPU. It never runs on the event loop: a
dedicated pool of :data:`HASHING_THREADS` threads does it (argon2-cffi releases the GIL), so
the server keeps answering while sign-ins are checked, and at most that many run at once
however many arrive (the sign-in throttle bounds how many may queue).

A new password must be :data:`MIN_PASSWORD_LENGTH` to :data:`MAX_PASSWORD_LENGTH`
characters, not one character or a short group repeated, and not one of the commonest
passwords (``_common_passwords.txt``: the first 5,000 of the 20,000 most common passwords
by Royce Williams, as Django ships them in ``django/contrib/auth/common-passwords.txt.gz``,
lower-cased), nor one of them with digits or symbols added at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import string
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

from .._errors import RequestInvalid

if TYPE_CHECKING:
    from argon2 import PasswordHasher

__all__ = [
    "HASHING_THREADS",
    "MAX_PASSWORD_LENGTH",
    "MIN_PASSWORD_LENGTH",
    "UNUSABLE_PASSWORD",
    "check_new_password",
    "hash_password",
    "verify_password",
]

#: NIST SP 800-63B asks for at least 8; a console that can send paid SMS asks for more.
MIN_PASSWORD_LENGTH: Final = 12
#: A bound on the work one login attempt can ask of the server.
MAX_PASSWORD_LENGTH: Final = 1024
#: Stored for a user who signs in by link only (the demo operator): no password matches it.
UNUSABLE_PASSWORD: Final = "!"  # noqa: S105 - a marker, not a password
#: Hashes computed at once per process: each takes 64 MiB and a core for a quarter second.
HASHING_THREADS: Final = 2
T = TypeVar("T")
_EXTRA_HINT = (
    "Dashboard passwords need the 'dashboard' extra: pip install 'unified-messaging[dashboard]'"
)
_COMMON_FILE: Final = Path(__file__).with_name("_common_passwords.txt")
#: A repeated group this short is no stronger than the group ("abcabcabcabc").
_LONGEST_REPEATED_GROUP: Final = 3
#: What people add at the end of a common password to pass a length rule.
_SUFFIX_CHARACTERS: Final = string.digits + string.punctuation + " "
#: A common password's stem shorter than this ("a", "12") says nothing about the rest.
_SHORTEST_STEM: Final = 4


@functools.cache
def _hasher() -> PasswordHasher:
    try:
        from argon2 import PasswordHasher
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise ImportError(_EXTRA_HINT) from exc
    return PasswordHasher()  # argon2id by default


@functools.cache
def _pool() -> ThreadPoolExecutor:
    # One pool per process, never shut down: its threads are daemon-like workers that
    # exit with the interpreter, and a pool per event loop would multiply the bound.
    return ThreadPoolExecutor(max_workers=HASHING_THREADS, thread_name_prefix="um-argon2")


@functools.cache
def _common_passwords() -> frozenset[str]:
    return frozenset(_COMMON_FILE.read_text(encoding="utf-8").split("\n")) - {""}


def check_new_password(password: str) -> None:
    """D31: a password a user may choose; :class:`RequestInvalid` naming ``password`` and
    the rule it breaks (never the password) if not."""
    if not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
        raise RequestInvalid.for_field(
            "password", f"must be {MIN_PASSWORD_LENGTH}-{MAX_PASSWORD_LENGTH} characters"
        )
    if _repeats_a_short_group(password):
        raise RequestInvalid.for_field(
            "password", "must not be one character or a short group of characters repeated"
        )
    if _is_common(password):
        raise RequestInvalid.for_field(
            "password",
            "is one of the most common passwords (or one with digits or symbols added); "
            "choose another",
        )


def _repeats_a_short_group(password: str) -> bool:
    folded = password.casefold()
    return any(
        len(folded) % size == 0 and folded == folded[:size] * (len(folded) // size)
        for size in range(1, _LONGEST_REPEATED_GROUP + 1)
    )


def _is_common(password: str) -> bool:
    common = _common_passwords()
    folded = password.strip().casefold()
    stem = folded.rstrip(_SUFFIX_CHARACTERS)
    return folded in common or (len(stem) >= _SHORTEST_STEM and stem in common)


async def hash_password(password: str) -> str:
    """The argon2id hash of ``password``, computed in the hashing pool."""
    return await _in_pool(functools.partial(_hasher().hash, password))


async def verify_password(stored_hash: str, password: str) -> bool:
    """Whether ``password`` matches; any malformed or unusable hash is simply no match.
    Computed in the hashing pool.

    Without a hash to compare against (an unknown e-mail), pass :data:`UNUSABLE_PASSWORD`:
    the check still spends the time of a real one, so timing does not tell which e-mails
    have accounts.
    """
    return await _in_pool(functools.partial(_verify, stored_hash, password))


async def _in_pool(work: functools.partial[T]) -> T:
    return await asyncio.get_running_loop().run_in_executor(_pool(), work)


def _verify(stored_hash: str, password: str) -> bool:
    from argon2.exceptions import InvalidHashError, VerificationError

    hasher = _hasher()
    if stored_hash == UNUSABLE_PASSWORD or len(password) > MAX_PASSWORD_LENGTH:
        _burn(hasher)
        return False
    try:
        return hasher.verify(stored_hash, password)
    except (VerificationError, InvalidHashError):
        return False


@functools.cache
def _dummy_hash() -> str:
    return _hasher().hash("unified-messaging: no such user")


def _burn(hasher: PasswordHasher) -> None:
    # A mismatch is the point: only the time it takes matters.
    with contextlib.suppress(Exception):
        hasher.verify(_dummy_hash(), "not the password")
