"""A consent's records and the shapes REST, MCP, the CLI and the library share (D33).

:class:`Consent` is one address's current record for one ``type`` and ``recipient_type``
(İYS keeps one BIREYSEL and one TACIR record per address); :class:`ConsentChange` is one
entry of its history, the first one included. The pydantic models validate what callers
send (:class:`ConsentCreate`, :class:`ConsentSearch`) and render what they get back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from .._errors import InvalidRecipient
from .._ids import new_id
from .._models import ErrorObject, Recipient, _Response
from .._recipients import normalize_recipient
from .._types import RecipientType
from .rules import ConsentSource, ConsentStatus, ConsentType, IysState, iys_date

__all__ = [
    "Consent",
    "ConsentChange",
    "ConsentChangeOut",
    "ConsentCreate",
    "ConsentDetail",
    "ConsentOut",
    "ConsentPage",
    "ConsentSearch",
    "normalize_address",
]

DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 100
MAX_CURSOR_LENGTH: Final = 255
#: İYS's e-mail address bounds (6-265 characters, no spaces, one ``@``, a dotted domain).
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]{2,}$")
_EMAIL_LENGTH: Final = range(6, 266)


def normalize_address(type_: ConsentType, raw: str) -> str:
    """The address a consent is kept under: for MESAJ and ARAMA, a number as a send's SMS
    ``to`` (a Turkish mobile as E.164); for EPOSTA, the e-mail with its domain lower-cased
    (the local part is the mail server's to read, so its case stays).
    :class:`InvalidRecipient` (422) when it is neither."""
    if type_ != "EPOSTA":
        return normalize_recipient("sms", raw)
    address = raw.strip()
    if len(address) not in _EMAIL_LENGTH or _EMAIL.match(address) is None:
        raise InvalidRecipient(f"{raw!r} is not an e-mail address.")
    local, domain = address.rsplit("@", 1)
    return f"{local}@{domain.lower()}"


@dataclass(frozen=True, slots=True)
class Consent:
    """One address's current consent for ``type`` and ``recipient_type``."""

    id: str
    workspace_id: str
    livemode: bool
    recipient: str
    type: ConsentType
    recipient_type: RecipientType
    status: ConsentStatus
    #: One of İYS's HS_* sources, or what İYS names for a change pulled from it.
    source: str | None
    consent_date: datetime | None
    created_at: datetime
    updated_at: datetime
    #: Where its current change (``last_change_id``) stands with İYS, with İYS's
    #: transaction id once registered, or its H-code and message once refused.
    iys_state: IysState = "pending"
    last_change_id: str | None = None
    iys_transaction_id: str | None = None
    iys_error_code: str | None = None
    iys_error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ConsentChange:
    """One entry of a consent's history: what was recorded, when we recorded it, and where
    it stands with İYS (a change pulled from İYS is ``registered`` from the start)."""

    consent_id: str
    status: ConsentStatus
    source: str | None
    consent_date: datetime | None
    recorded_at: datetime
    id: str = field(default_factory=lambda: new_id("cnc"))
    iys_state: IysState = "pending"
    iys_transaction_id: str | None = None


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ConsentCreate(_Request):
    """Body of ``POST /v1/consents``."""

    recipient: Recipient = Field(
        description="A number (MESAJ, ARAMA; normalised as a send's SMS `to`) or an e-mail "
        "address (EPOSTA)."
    )
    type: ConsentType = Field(default="MESAJ", description="MESAJ (default), ARAMA or EPOSTA.")
    recipient_type: RecipientType = Field(
        default="BIREYSEL", description="BIREYSEL (default) or TACIR."
    )
    status: ConsentStatus = Field(description="ONAY or RET.")
    source: ConsentSource | None = Field(
        default=None, description="İYS's HS_* source; required unless TACIR."
    )
    consent_date: datetime | None = Field(
        default=None,
        description="When the recipient gave or refused it (a time without an offset is "
        "read as GMT+3, as İYS reads it). Default: now, unless TACIR.",
    )


class ConsentSearch(_Request):
    """What ``GET /v1/consents`` asks for: filters, page size and cursor."""

    recipient: Recipient | None = Field(default=None, description="Only this address.")
    status: ConsentStatus | None = Field(default=None, description="Only ONAY or only RET.")
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="1-100.")
    starting_after: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CURSOR_LENGTH,
        description="The id of the last consent of the previous page: the page after it.",
    )


class ConsentOut(_Response):
    """One consent as REST, MCP and the CLI show it."""

    _omit_none = False

    id: str = Field(examples=["cns_01JD0000000000000000000000"])
    recipient: str
    type: ConsentType
    recipient_type: RecipientType
    status: ConsentStatus
    source: str | None = Field(
        description="İYS's HS_* source; a change made in İYS itself (a citizen's RET to "
        "3338, the İYS app) carries the source İYS names."
    )
    consent_date: datetime | None
    consent_date_iys: str | None = Field(
        description="consent_date as İYS reads it: YYYY-MM-DD HH:MM:SS in GMT+3."
    )
    iys_state: IysState = Field(
        description="Where the current change stands with İYS: pending (recorded here, not "
        "yet registered), registered (İYS took it: iys_transaction_id) or refused (İYS "
        "refused it: iys_error)."
    )
    iys_transaction_id: str | None = Field(
        description="İYS's transaction id of the registered change, when İYS gave one."
    )
    iys_error: ErrorObject | None = Field(
        description="İYS's refusal of the current change: its H-code (or our code) and message."
    )
    created_at: datetime
    updated_at: datetime
    livemode: bool

    @classmethod
    def of(cls, consent: Consent) -> ConsentOut:
        date = consent.consent_date
        return cls(
            id=consent.id,
            recipient=consent.recipient,
            type=consent.type,
            recipient_type=consent.recipient_type,
            status=consent.status,
            source=consent.source,
            consent_date=date,
            consent_date_iys=None if date is None else iys_date(date),
            iys_state=consent.iys_state,
            iys_transaction_id=consent.iys_transaction_id,
            iys_error=_iys_error(consent),
            created_at=consent.created_at,
            updated_at=consent.updated_at,
            livemode=consent.livemode,
        )


class ConsentChangeOut(_Response):
    """One change in a consent's history."""

    _omit_none = False

    status: ConsentStatus
    source: str | None
    consent_date: datetime | None
    recorded_at: datetime
    iys_state: IysState
    iys_transaction_id: str | None

    @classmethod
    def of(cls, change: ConsentChange) -> ConsentChangeOut:
        return cls(
            status=change.status,
            source=change.source,
            consent_date=change.consent_date,
            recorded_at=change.recorded_at,
            iys_state=change.iys_state,
            iys_transaction_id=change.iys_transaction_id,
        )


def _iys_error(consent: Consent) -> ErrorObject | None:
    if consent.iys_error_code is None:
        return None
    return ErrorObject(code=consent.iys_error_code, message=consent.iys_error_message or "")


class ConsentDetail(ConsentOut):
    """200 body of ``GET /v1/consents/{id}``: the consent and its history, oldest first."""

    history: list[ConsentChangeOut]


class ConsentPage(_Response):
    """200 body of ``GET /v1/consents``: consents, newest change first, and whether more
    follow."""

    _omit_none = False

    data: list[ConsentOut]
    has_more: bool
