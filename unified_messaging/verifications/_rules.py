"""The rules of Verify (D34), as pure functions: each rule lives here and only here.

- a code: ``secrets`` digits, 4–10 of them (:func:`new_code`);
- its record: an HMAC under a vault-held key, bound to the verification's id, compared in
  constant time (:func:`code_digest`, :func:`code_matches`);
- a check: approved once, the ``max_checks``-th wrong code ``failed``, nothing after
  ``expires_at`` (:func:`after_check`, :func:`settled`);
- a start: a pending verification is re-sent (at most ``max_sends`` sends, not within the
  cooldown), and at most ``hourly_limit`` verifications per recipient per hour
  (:func:`resend_refusal`, :func:`hourly_refusal`).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Final

from .._errors import VerificationRateLimited
from ..vault._core import Vault
from ._records import CodeSend, Verification, VerificationSettings

__all__ = [
    "CODE_LENGTHS",
    "DEFAULT_TTL",
    "MAX_TTL",
    "after_check",
    "canceled",
    "code_digest",
    "code_matches",
    "hourly_refusal",
    "new_code",
    "resend_refusal",
    "resent",
    "settled",
    "with_send",
]

CODE_LENGTHS: Final = range(4, 11)
DEFAULT_TTL: Final = timedelta(seconds=600)
MAX_TTL: Final = timedelta(seconds=3600)
#: The vault's digests are bound to a purpose: a code digest can pose as nothing else.
_PURPOSE: Final = "verification-code"
_HOUR: Final = timedelta(hours=1)


def new_code(length: int) -> str:
    """``length`` decimal digits from the operating system's CSPRNG (``secrets``)."""
    if length not in CODE_LENGTHS:
        raise ValueError("a code has 4-10 digits")
    return f"{secrets.randbelow(10**length):0{length}d}"


def code_digest(vault: Vault, verification_id: str, code: str) -> str:
    """What a verification stores of its code. Keyed by the vault (a copy of the database
    cannot test guesses) and bound to the verification (a code of one is not another's)."""
    return vault.keyed_digest(_message(verification_id, code), purpose=_PURPOSE)


def code_matches(vault: Vault, verification: Verification, code: str) -> bool:
    """Is ``code`` the verification's current code? Constant time (``hmac.compare_digest``)."""
    message = _message(verification.id, code)
    return vault.digest_matches(message, verification.code_digest, purpose=_PURPOSE)


def _message(verification_id: str, code: str) -> bytes:
    return f"{verification_id}\x00{code}".encode()


def settled(verification: Verification, now: datetime) -> Verification:
    """``verification`` as of ``now``: a pending one past its ``expires_at`` is ``expired``."""
    if verification.status == "pending" and now >= verification.expires_at:
        return _changed(verification, now, status="expired")
    return verification


def after_check(verification: Verification, matched: bool, now: datetime) -> Verification:
    """A pending, unexpired verification after one check: ``approved`` if the code matched,
    else one more wrong code, and ``failed`` at the ``max_checks``-th."""
    if matched:
        return _changed(verification, now, status="approved")
    wrong = verification.wrong_checks + 1
    status = "failed" if wrong >= verification.max_checks else "pending"
    return _changed(verification, now, status=status, wrong_checks=wrong)


def canceled(verification: Verification, now: datetime) -> Verification:
    """A pending verification canceled; any other is left as it is."""
    if verification.status != "pending":
        return verification
    return _changed(verification, now, status="canceled")


def resent(verification: Verification, digest: str, slot: CodeSend, now: datetime) -> Verification:
    """The verification with a new code (its ``digest``) and the slot of its next send: the
    previous code stops working, and the slot (taken before the send) is what a concurrent
    re-send's cooldown counts from."""
    return _changed(verification, now, code_digest=digest, sends=(*verification.sends, slot))


def with_send(verification: Verification, send: CodeSend) -> Verification:
    """The verification with the send slot taken for ``send`` (the last one still without a
    ``job_id``) filled by the message that went out."""
    slots = list(verification.sends)
    empty = [i for i, slot in enumerate(slots) if not slot.job_id]
    if empty:
        slots[empty[-1]] = send
    else:  # every slot filled meanwhile: the send is still one of its sends
        slots.append(send)
    return replace(verification, sends=tuple(slots), version=verification.version + 1)


def resend_refusal(
    verification: Verification, settings: VerificationSettings, now: datetime
) -> VerificationRateLimited | None:
    """Why a pending verification may not be sent again now, or ``None``."""
    if len(verification.sends) >= settings.max_sends:
        left = _seconds(verification.expires_at - now)
        return VerificationRateLimited(
            f"This verification's code was sent {len(verification.sends)} times, the most "
            "allowed; check it, or start a new one after it expires.",
            retry_after=left,
        )
    wait = verification.last_sent_at + settings.resend_cooldown - now
    if wait > timedelta(0):
        return VerificationRateLimited(
            "A code was sent to this recipient moments ago; try again later.",
            retry_after=_seconds(wait),
        )
    return None


def hourly_refusal(
    started: Sequence[datetime], settings: VerificationSettings, now: datetime
) -> VerificationRateLimited | None:
    """Why one more verification for a recipient who had those ``started`` in the last hour
    is refused, or ``None``; it may start again when the oldest that counts is an hour old."""
    recent = sorted(at for at in started if at > now - _HOUR)
    if len(recent) < settings.hourly_limit:
        return None
    frees_at = recent[len(recent) - settings.hourly_limit] + _HOUR
    return VerificationRateLimited(
        f"This recipient had {settings.hourly_limit} verifications in the last hour, the most "
        "allowed.",
        retry_after=_seconds(frees_at - now),
    )


def _seconds(delta: timedelta) -> float:
    return float(max(1, math.ceil(delta.total_seconds())))


def _changed(verification: Verification, now: datetime, **changes: object) -> Verification:
    return replace(verification, updated_at=now, version=verification.version + 1, **changes)  # type: ignore[arg-type]
