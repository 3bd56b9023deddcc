"""The records of Verify (D34): a verification, the code messages it sent, its settings.

Plain frozen dataclasses, shared by the rules, the service and the stores. A verification
keeps its code only as a keyed digest (``code_digest``, never shown in a ``repr``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, TypeAlias

from .._errors import RequestInvalid
from .._escalation import ESCALATE_MAX, ESCALATE_MIN
from .._types import Channel, ProviderCode

__all__ = [
    "CodeSend",
    "Locale",
    "Verification",
    "VerificationSettings",
    "VerificationStatus",
]

VerificationStatus: TypeAlias = Literal["pending", "approved", "failed", "expired", "canceled"]
Locale: TypeAlias = Literal["tr", "en"]


@dataclass(frozen=True, slots=True)
class CodeSend:
    """One code message of a verification: a normal message with its ``job_id``."""

    job_id: str
    channel: Channel
    provider: ProviderCode
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Verification:
    """One verification (``ver_…``) of one recipient, in one workspace and mode.

    ``version`` is bumped by every change: a store replaces a verification only if it still
    has the version the change was computed from (compare-and-set), so two concurrent
    checks can never both approve it, nor two wrong codes count once.
    """

    id: str
    workspace_id: str
    livemode: bool
    to: str
    channel: Channel
    status: VerificationStatus
    #: ``<key id>.<HMAC>`` of the current code (``Vault.keyed_digest``); never the code.
    code_digest: str = field(repr=False)
    code_length: int
    locale: Locale
    created_at: datetime
    updated_at: datetime
    expires_at: datetime
    #: The wrong codes allowed before it is ``failed`` (the workspace's, when it started).
    max_checks: int
    wrong_checks: int = 0
    sends: tuple[CodeSend, ...] = ()
    version: int = 0

    @property
    def checks_remaining(self) -> int:
        return max(0, self.max_checks - self.wrong_checks) if self.status == "pending" else 0

    @property
    def last_sent_at(self) -> datetime:
        return self.sends[-1].created_at if self.sends else self.created_at


@dataclass(frozen=True, slots=True)
class VerificationSettings:
    """A workspace's Verify limits (D34); every field has the documented default."""

    #: The wrong code that makes a verification ``failed`` is this many-th.
    max_checks: int = 5
    #: Code messages one verification may send (the first and its re-sends).
    max_sends: int = 5
    #: A re-send within this time of the previous send is refused (429 + Retry-After).
    resend_cooldown: timedelta = timedelta(seconds=30)
    #: Verifications one recipient may start per rolling hour.
    hourly_limit: int = 10
    #: D36: the name of the workspace's approved WhatsApp authentication template (one
    #: body parameter, the code, and a copy-code button); ``None``: no ``bizchat`` codes.
    whatsapp_template: str | None = None
    #: D36: how long a code waits for ``delivered`` on one channel before the next sends it.
    escalate_after: timedelta = timedelta(seconds=30)

    def __post_init__(self) -> None:
        # RequestInvalid (400) naming the setting: the CLI and the library show it as is.
        if not 1 <= self.max_checks <= 100:
            raise RequestInvalid.for_field("max_checks", "must be 1-100")
        if not 1 <= self.max_sends <= 100:
            raise RequestInvalid.for_field("max_sends", "must be 1-100")
        if not timedelta(0) <= self.resend_cooldown <= timedelta(hours=1):
            raise RequestInvalid.for_field("resend_cooldown", "must be 0-3600 seconds")
        if not 1 <= self.hourly_limit <= 10_000:
            raise RequestInvalid.for_field("hourly_limit", "must be 1-10000")
        if self.whatsapp_template is not None and not 1 <= len(self.whatsapp_template) <= 512:
            raise RequestInvalid.for_field("whatsapp_template", "must be 1-512 characters")
        if not ESCALATE_MIN <= self.escalate_after <= ESCALATE_MAX:
            raise RequestInvalid.for_field("escalate_after", "must be 5-3600 seconds")
