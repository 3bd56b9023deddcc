"""İYS's records as the store keeps them (D33): plain dataclasses, no pydantic, so the store
protocol and its implementations load none of the client.

- :class:`IysConnection`: a workspace's connection to İYS. ``password`` and the token are
  sealed by the vault (D21) and never leave the process unsealed except to İYS itself.
- :class:`IysToken`: the access and refresh token every process shares, with a
  compare-and-set ``version``, the lease of the one process fetching a new one, and when
  tokens were last asked for (İYS allows few token requests an hour).
- :class:`IysRegistration`: how one change's registration goes.
- :class:`IysOutcome`: what became of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Literal

__all__ = [
    "BULK_IN_FLIGHT",
    "CONSENT_PROVIDERS",
    "LIVE_BASE_URL",
    "IysConnection",
    "IysOutcome",
    "IysRegistration",
    "IysToken",
    "PullSource",
]

#: The providers whose consent API registers consents for a workspace connected to İYS
#: through a provider (``via_connection``), by provider code.
CONSENT_PROVIDERS: Final[Mapping[str, str]] = {"sms_b": "İletimerkezi", "sms_c": "Verimor"}
#: İYS's production API (the host its API users and client libraries call).
LIVE_BASE_URL: Final = "https://api.iys.org.tr"
#: Who made a change İYS lists (``consents/changes?source=``): the brand's own systems
#: (``HS``) or the citizen through İYS (``IYS``: its app, web site, SMS to 3338).
PullSource = Literal["HS", "IYS"]
#: A registration's ``request_id`` while its bulk request is on its way to İYS: İYS's own
#: request id replaces it once İYS answered.
BULK_IN_FLIGHT: Final = "~"


@dataclass(frozen=True, slots=True)
class IysToken:
    """The shared token of one connection. ``sealed`` holds ``{"access", "refresh"}``
    under the vault; ``grants`` when tokens were asked for within the last hour."""

    version: int = 0
    sealed: str | None = field(default=None, repr=False)
    access_expires_at: datetime | None = None
    refresh_expires_at: datetime | None = None
    lease_by: str | None = None
    lease_until: datetime | None = None
    grants: tuple[datetime, ...] = ()


@dataclass(frozen=True, slots=True)
class IysConnection:
    """A workspace's İYS connection: its service-provider code (``iysCode``), brand code,
    API user, sealed password and base URL, the pull cursors, and the shared token; or,
    through a provider (``via_connection``), the brand code and the provider connection."""

    workspace_id: str
    iys_code: int
    brand_code: int
    username: str
    password: str = field(repr=False)
    base_url: str = LIVE_BASE_URL
    created_at: datetime | None = None
    updated_at: datetime | None = None
    after_hs: str | None = None
    after_iys: str | None = None
    pulled_at: datetime | None = None
    token: IysToken = field(default_factory=IysToken)
    #: The provider connection whose consent API registers the consents (İletimerkezi,
    #: Verimor), for a workspace with no İYS API user of its own; ``None``: İYS itself.
    via_connection: str | None = None

    def cursor(self, source: PullSource) -> str | None:
        return self.after_hs if source == "HS" else self.after_iys


@dataclass(frozen=True, slots=True)
class IysRegistration:
    """How one change's registration goes: ``attempts`` that may have reached İYS (a
    process died before it stored İYS's answer), when the last was made, and the bulk
    request it rides in (:data:`BULK_IN_FLIGHT` while İYS has not answered it)."""

    change_id: str
    attempts: int = 0
    request_id: str | None = None
    subrequest_id: str | None = None
    attempted_at: datetime | None = None

    @property
    def bulk_in_doubt(self) -> bool:
        """Sent in a bulk request whose answer was never stored (the process died)."""
        return self.request_id == BULK_IN_FLIGHT


@dataclass(frozen=True, slots=True)
class IysOutcome:
    """What became of a change: ``registered`` (with İYS's transaction id when it gave
    one) or ``refused`` (with İYS's H-code, or a code of ours, and its message)."""

    state: Literal["registered", "refused"]
    transaction_id: str | None = None
    error_code: str | None = None
    error_message: str | None = None
