"""The JSON shape of a provider account, as ``connection.balance_low`` carries it in ``data``
(and as the Django integration hands it to ``connection_balance_low`` receivers)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from pydantic import BaseModel, ConfigDict

__all__ = ["ProviderAccountOut"]


class ProviderAccountOut(BaseModel):
    """A connection's provider account as last read (``ProviderAccount.to_dict``)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    connection_id: str
    provider: str
    state: str
    balance: Decimal | None = None
    unit: str | None = None
    senders: list[str] | None = None
    read_at: datetime | None = None
    tried_at: datetime | None = None
    error: str | None = None
    threshold: Decimal | None = None
    low: bool = False
    #: A provider account is always a live one: test keys never reach a provider.
    livemode: bool = True
