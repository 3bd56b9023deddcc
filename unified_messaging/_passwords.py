"""Dashboard passwords (D31): argon2id hashes, made and checked in this one place.

argon2-cffi comes with the ``dashboard`` extra and is imported on first use, so the library
loads without it; a missing extra is one line naming it. The parameters are argon2-cffi's
defaults (RFC 9106's second recommended set: 64 MiB, 3 passes, 4 lanes), which it raises
over time; :func:`verify_password` reads them from the stored hash, so old hashes keep
working.
"""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, Final

from ._errors import RequestInvalid

if TYPE_CHECKING:
    from argon2 import PasswordHasher

__all__ = [
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
_EXTRA_HINT = (
    "Dashboard passwords need the 'dashboard' extra: pip install 'unified-messaging[dashboard]'"
)


@functools.cache
def _hasher() -> PasswordHasher:
    try:
        from argon2 import PasswordHasher
    except ImportError as exc:  # pragma: no cover - only without the extra
        raise ImportError(_EXTRA_HINT) from exc
    return PasswordHasher()  # argon2id by default


def check_new_password(password: str) -> None:
    """D31: a password a user may choose; :class:`RequestInvalid` naming ``password`` if not."""
    if not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
        raise RequestInvalid.for_field(
            "password", f"must be {MIN_PASSWORD_LENGTH}-{MAX_PASSWORD_LENGTH} characters"
        )


def hash_password(password: str) -> str:
    return _hasher().hash(password)


def verify_password(stored_hash: str, password: str) -> bool:
    """Whether ``password`` matches; any malformed or unusable hash is simply no match.

    Without a hash to compare against (an unknown e-mail), pass :data:`UNUSABLE_PASSWORD`:
    the check still spends the time of a real one, so timing does not tell which e-mails
    have accounts.
    """
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
