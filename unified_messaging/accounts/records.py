"""What is stored of a provider account: the last reading, when it was made, and the
operator's low-balance threshold (with whether the balance is below it now, so that
``connection.balance_low`` fires once per crossing)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from ..providers.account import BalanceUnit

__all__ = ["AccountState", "ProviderAccount"]

#: ``read``: the last reading succeeded; ``failed``: the last try did not (``error`` says
#: why, the reading before it is kept); ``not_offered``: the provider has no account API
#: (Kannel, the chat channels); ``never``: not read yet.
AccountState = Literal["read", "failed", "not_offered", "never"]


@dataclass(frozen=True, slots=True)
class ProviderAccount:
    """One connection's provider account, as last read."""

    connection_id: str
    workspace_id: str
    provider: str
    state: AccountState = "never"
    balance: Decimal | None = None
    unit: BalanceUnit | None = None
    #: The approved headers the provider listed; ``None``: not known (never read, or the
    #: provider keeps no list). Only a known list refuses a sender before the call.
    senders: tuple[str, ...] | None = None
    #: When the balance and senders were read (``None``: never).
    read_at: datetime | None = None
    #: When the last try was made, successful or not.
    tried_at: datetime | None = None
    error: str | None = None
    #: Below this balance, ``connection.balance_low`` fires (``None``: no alert).
    threshold: Decimal | None = None
    #: The balance was below the threshold at the last reading (fired for this crossing).
    low: bool = False

    @property
    def below_threshold(self) -> bool:
        """The known balance is under the threshold."""
        return (
            self.threshold is not None
            and self.balance is not None
            and self.balance < self.threshold
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (``GET``-style, the webhook's ``data``, the CLI's ``--json``)."""
        return {
            "connection_id": self.connection_id,
            "provider": self.provider,
            "state": self.state,
            "balance": None if self.balance is None else str(self.balance),
            "unit": self.unit,
            "senders": None if self.senders is None else list(self.senders),
            "read_at": None if self.read_at is None else self.read_at.isoformat(),
            "tried_at": None if self.tried_at is None else self.tried_at.isoformat(),
            "error": self.error,
            "threshold": None if self.threshold is None else str(self.threshold),
            "low": self.low,
        }
