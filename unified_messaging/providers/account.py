"""What a provider account holds, read from the provider's own API: its balance and its
approved senders (headers). An optional capability of an adapter, never on the send path.

An adapter that can read its account is an :class:`AccountReader`; the others (Kannel's
``sendsms`` has no account API, the chat channels have no credit) are not, and
``messenger.accounts`` says "not offered" for them. A reading raises
:class:`~unified_messaging.InvalidCredentials` when the provider refuses the credentials and
:class:`~unified_messaging.ProviderUnavailable` when it cannot be asked or its answer cannot
be read; it never logs the balance or the credentials.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Final, Literal, Protocol, runtime_checkable

__all__ = [
    "MAX_SENDERS",
    "AccountReader",
    "AccountReading",
    "BalanceUnit",
    "clean_senders",
    "parse_amount",
]

#: What a balance counts: Turkish lira, SMS credits (messages), or the gateway's own unit.
BalanceUnit = Literal["TRY", "SMS", "credit"]
#: More headers than any account has: a longer list is cut (and is not the provider talking).
MAX_SENDERS: Final = 500
_MAX_SENDER_CHARS: Final = 64
_AMOUNT: Final = re.compile(r"-?[0-9]{1,15}(?:[.,][0-9]{1,6})?")


@dataclass(frozen=True, slots=True)
class AccountReading:
    """One reading of a provider account.

    ``balance`` ``None``: the provider answered without one (Jasmin's ``ND`` for a user with
    no balance limit). ``senders`` ``None``: the provider offers no list of headers.
    """

    balance: Decimal | None
    unit: BalanceUnit
    senders: tuple[str, ...] | None


@runtime_checkable
class AccountReader(Protocol):
    """Protocol: an adapter that can read its provider account's balance and senders."""

    async def read_account(self) -> AccountReading: ...


def parse_amount(text: object) -> Decimal | None:
    """A provider's number (``123``, ``57,860``, ``1986.0``, ``12.5``) as a ``Decimal``;
    ``None`` for anything else. A comma is the decimal separator Turkish providers write."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        text = str(text)
    if not isinstance(text, str) or _AMOUNT.fullmatch(text.strip()) is None:
        return None
    try:
        return Decimal(text.strip().replace(",", "."))
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        return None


def clean_senders(names: Iterable[object]) -> tuple[str, ...]:
    """The header names of a provider's list: strings only, stripped, without empties or
    repeats, each at most 64 characters, at most :data:`MAX_SENDERS`. Kept as the provider
    wrote them otherwise: they are shown escaped, never trusted as markup."""
    seen: dict[str, None] = {}
    for name in names:
        if not isinstance(name, str):
            continue
        value = name.strip()[:_MAX_SENDER_CHARS]
        if value and value not in seen:
            seen[value] = None
        if len(seen) >= MAX_SENDERS:
            break
    return tuple(seen)
