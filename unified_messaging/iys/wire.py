"""İYS's records on the wire (D33): what the API client and the simulated İYS hand the
registration, the pull and the gate. Plain dataclasses: loading them loads no HTTP client.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .errors import IysError

__all__ = [
    "BulkAccepted",
    "BulkResult",
    "ChangesPage",
    "IysChange",
    "IysRecord",
    "Registered",
    "TokenGrant",
    "WireConsent",
    "parse_iys_date",
]


@dataclass(frozen=True, slots=True)
class TokenGrant:
    access_token: str
    refresh_token: str | None
    expires_in: float
    refresh_expires_in: float | None

    def __repr__(self) -> str:  # never the tokens
        return f"TokenGrant(expires_in={self.expires_in})"


@dataclass(frozen=True, slots=True)
class WireConsent:
    """One consent as İYS takes it (dates in GMT+3, ``YYYY-MM-DD HH:MM:SS``)."""

    recipient: str
    recipient_type: str
    type: str
    status: str
    source: str | None
    consent_date: str | None

    def body(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "recipient": self.recipient,
            "recipientType": self.recipient_type,
            "type": self.type,
            "status": self.status,
        }
        if self.source is not None:
            fields["source"] = self.source
        if self.consent_date is not None:
            fields["consentDate"] = self.consent_date
        return fields


@dataclass(frozen=True, slots=True)
class Registered:
    transaction_id: str | None
    creation_date: str | None


@dataclass(frozen=True, slots=True)
class IysRecord:
    """A recipient's consent as İYS holds it (the status lookup)."""

    status: str
    consent_date: str | None
    source: str | None


@dataclass(frozen=True, slots=True)
class BulkAccepted:
    request_id: str
    #: The subrequest id of each consent sent, in the order sent.
    subrequest_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BulkResult:
    subrequest_id: str
    status: Literal["success", "failure", "enqueue"]
    transaction_id: str | None
    error: IysError | None


@dataclass(frozen=True, slots=True)
class IysChange:
    """One change İYS lists (``consents/changes``, the pull)."""

    transaction_id: str
    recipient: str
    recipient_type: str
    type: str
    status: str
    source: str | None
    consent_date: str | None
    creation_date: str | None


@dataclass(frozen=True, slots=True)
class ChangesPage:
    after: str | None
    changes: tuple[IysChange, ...]


def parse_iys_date(text: str | None) -> datetime | None:
    """İYS's ``YYYY-MM-DD HH:MM:SS`` (GMT+3) as an aware datetime; ``None`` if unreadable."""
    from ..consents.rules import GMT3

    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=GMT3)
    except ValueError:
        return None
