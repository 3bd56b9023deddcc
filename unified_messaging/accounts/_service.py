"""``messenger.accounts``: each connection's provider account (balance or credit, approved
senders) read from the provider's own API, kept with the time it was read, refreshed by the
worker, and the ``connection.balance_low`` webhook once per crossing of its threshold.

Reading is an optional adapter capability (:class:`~..providers.account.AccountReader`):
never on the send path. A send consults only what is stored (:meth:`Accounts.senders_of`).
Balances and credentials are never logged at INFO: a failed reading logs the provider and
the error's class at WARNING, the provider's words (masked by the adapter) stay in the row.
"""

from __future__ import annotations

import builtins
import logging
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Final

from .._clock import Clock
from .._errors import MessagingError, RequestInvalid, ResourceNotFound
from ..audit._actions import audited
from ..store.base import WorkItem
from .records import ProviderAccount

if TYPE_CHECKING:
    from .._domain import Connection
    from .._routing.adapters import AdapterPool
    from ..store.base import Store

__all__ = [
    "DEFAULT_REFRESH_INTERVAL",
    "EVENT_BALANCE_LOW",
    "WORK_REFRESH",
    "Accounts",
    "refresh_item",
]

logger = logging.getLogger("unified_messaging.accounts")

#: How often the worker reads each account, by default.
DEFAULT_REFRESH_INTERVAL: Final = timedelta(minutes=15)
#: The work item of one connection's reading: ``acct_<connection id>`` repeats every
#: interval; ``acctc_<connection id>`` is a one-off after a send refused for credit.
WORK_REFRESH: Final = "account_refresh"
EVENT_BALANCE_LOW: Final = "connection.balance_low"
_MAX_THRESHOLD: Final = Decimal("1000000000")


def refresh_item(connection_id: str, *, now: datetime, once: bool = False) -> WorkItem:
    """The reading of one connection's account, due now: repeating, or ``once``."""
    prefix = "acctc" if once else "acct"
    return WorkItem(
        id=f"{prefix}_{connection_id}",
        kind=WORK_REFRESH,
        ref=connection_id,
        due_at=now,
        created_at=now,
        payload={"once": once},
    )


class Accounts:
    """Provider accounts: ``await messenger.accounts.refresh(connection_id)``."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        adapters: AdapterPool,
        *,
        interval: timedelta = DEFAULT_REFRESH_INTERVAL,
    ) -> None:
        if interval <= timedelta(0):
            raise ValueError("the account refresh interval must be positive")
        self._store = store
        self._clock = clock
        self._adapters = adapters
        self.interval = interval

    def __repr__(self) -> str:
        return "<messenger.accounts>"

    # --- reading what is stored ---------------------------------------------------------------

    async def get(self, connection_id: str) -> ProviderAccount:
        """The connection's account as last read (``state`` ``never`` before any reading)."""
        connection = await self._connection(connection_id)
        stored = await self._store.get_account(connection_id)
        return stored if stored is not None else _blank(connection)

    async def list(self, workspace_id: str) -> builtins.list[ProviderAccount]:
        """Every connection's account in the workspace, by connection id."""
        if await self._store.get_workspace(workspace_id) is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        stored = {a.connection_id: a for a in await self._store.list_accounts(workspace_id)}
        connections = await self._store.list_connections(workspace_id)
        return sorted(
            (stored.get(c.id) or _blank(c) for c in connections), key=lambda a: a.connection_id
        )

    async def senders_of(self, workspace_id: str) -> dict[str, tuple[str, ...]]:
        """The approved senders each connection's provider listed, where a list is known:
        the send check's input (a connection left out: the provider decides)."""
        return {
            a.connection_id: a.senders
            for a in await self._store.list_accounts(workspace_id)
            if a.senders is not None
        }

    # --- changing ----------------------------------------------------------------------------

    @audited("connection.balance_threshold", lambda a, _: (a.workspace_id, a.connection_id))
    async def set_threshold(
        self, connection_id: str, threshold: Decimal | int | str | None
    ) -> ProviderAccount:
        """Set the balance below which ``connection.balance_low`` fires (``None``: no
        alert). A balance already below the new threshold fires it at once."""
        connection = await self._connection(connection_id)
        value = _threshold(threshold)
        await self._store.set_account_threshold(
            connection.id, connection.workspace_id, connection.provider, value
        )
        return await self._settle(await self.get(connection_id))

    async def refresh(self, connection_id: str) -> ProviderAccount:
        """Read the account from the provider now, store it with the time, and fire
        ``connection.balance_low`` if the balance crossed below the threshold.

        A reading that fails is stored as ``failed`` (the last good balance and senders are
        kept, with their time) and returned; nothing is raised for the provider's sake.
        """
        connection = await self._connection(connection_id)
        now = self._clock.now()
        current = await self.get(connection_id)
        reading = await self._read(connection, current, now)
        await self._store.save_account_reading(reading)
        return await self._settle(await self.get(connection_id))

    async def schedule(self, connection_id: str, *, once: bool = False) -> None:
        """Queue a reading by the worker (kept if one is queued already)."""
        await self._store.enqueue_work_many([
            refresh_item(connection_id, now=self._clock.now(), once=once)
        ])  # fmt: skip

    async def schedule_all(self) -> int:
        """Queue the repeating reading of every SMS connection (``run_worker`` does this
        when it starts; a queued one is kept; one without live credentials stops after its
        first reading). Returns how many were asked for."""
        count = 0
        now = self._clock.now()
        items: builtins.list[WorkItem] = []
        for workspace in await self._store.list_workspaces():
            for connection in await self._store.list_connections(workspace.id):
                if connection.channel == "sms":
                    items.append(refresh_item(connection.id, now=now))
                    count += 1
        if items:
            await self._store.enqueue_work_many(items)
        return count

    async def handle(self, item: WorkItem) -> datetime | None:
        """The worker's handler of :data:`WORK_REFRESH`: read, then come back one interval
        later (a repeating item), or stop (a one-off, or a connection gone)."""
        try:
            account = await self.refresh(item.ref)
        except ResourceNotFound:
            return None
        if item.payload.get("once") or account.state == "not_offered":
            return None
        return self._clock.now() + self.interval

    # --- the rules ---------------------------------------------------------------------------

    async def _read(
        self, connection: Connection, current: ProviderAccount, now: datetime
    ) -> ProviderAccount:
        tried = replace(current, tried_at=now)
        if connection.channel != "sms":
            return replace(tried, state="not_offered", error=None)
        try:
            adapter = self._adapters.for_connection(connection, livemode=True)
        except MessagingError:  # no live credentials: the connection serves test keys only
            return replace(tried, state="not_offered", error="No live credentials: test keys only.")
        read = getattr(adapter, "read_account", None)
        if read is None:
            return replace(tried, state="not_offered", error=None)
        try:
            reading = await read()
        except MessagingError as exc:
            # The provider's words are masked by the adapter; the row keeps them, the log
            # says only which connection failed and how.
            logger.warning(
                "reading the %s account of %s failed: %s",
                connection.provider, connection.id, type(exc).__name__,
            )  # fmt: skip
            return replace(tried, state="failed", error=exc.message)
        return replace(
            tried, state="read", balance=reading.balance, unit=reading.unit,
            senders=reading.senders, read_at=now, error=None,
        )  # fmt: skip

    async def _settle(self, account: ProviderAccount) -> ProviderAccount:
        """Fire ``connection.balance_low`` once per crossing below the threshold: the
        stored ``low`` flips in one conditional write, so of two workers one fires."""
        below = account.below_threshold
        if below == account.low:
            return account
        if account.state == "failed" and not below:
            return account  # a failed reading says nothing about a recovery
        async with self._store.atomic():
            if await self._store.swap_account_low(account.connection_id, below) and below:
                await self._store.enqueue_work(self._event(account))
        return replace(account, low=below)

    def _event(self, account: ProviderAccount) -> WorkItem:
        from .._ids import new_id

        now = self._clock.now()
        return WorkItem(
            id=new_id("evt"),
            kind="event",
            ref=account.connection_id,
            due_at=now,
            created_at=now,
            payload={"workspace_id": account.workspace_id, "event": EVENT_BALANCE_LOW,
                     "record": {**account.to_dict(), "low": True, "livemode": True}},
        )  # fmt: skip

    async def _connection(self, connection_id: str) -> Connection:
        connection = await self._store.get_connection(connection_id)
        if connection is None:
            raise ResourceNotFound(f"Connection {connection_id} not found.")
        return connection


def _blank(connection: Connection) -> ProviderAccount:
    offered = connection.channel == "sms"
    return ProviderAccount(
        connection.id, connection.workspace_id, connection.provider,
        state="never" if offered else "not_offered",
    )  # fmt: skip


def _threshold(value: Decimal | int | str | None) -> Decimal | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool | float):
        raise RequestInvalid.for_field("threshold", "must be a decimal number, not a float")
    try:
        number = Decimal(str(value).strip())
    except InvalidOperation:
        raise RequestInvalid.for_field("threshold", "must be a number") from None
    if not number.is_finite() or number < 0 or number > _MAX_THRESHOLD:
        raise RequestInvalid.for_field("threshold", "must be between 0 and 1000000000")
    return number.quantize(Decimal(1)) if number == number.to_integral() else number
