"""``messenger.iys``: a workspace's İYS connection (D33), and the work that keeps its
consents in step with İYS.

- :meth:`Iys.connect` / :meth:`Iys.get` / :meth:`Iys.disconnect`: the connection (İYS code,
  brand code, API user; the password sealed by the vault, never shown again). Connecting
  checks the credentials with a first token (kept as the shared token), queues the
  registration of every live consent change still pending, starts the pulls, and turns the
  workspace's consent policy from ``off`` to ``iys``.
- :meth:`Iys.sync`: pull now and register what is pending now, and return when done.
- :meth:`Iys.handlers` / :meth:`Iys.batch_handlers`: the worker's handlers of the İYS work
  items (``iys.work``); :attr:`Iys.check`: the hand-over gate's consent rule.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from .._errors import ResourceNotFound
from .._ids import new_id
from .._models import parse_model
from ..audit._actions import audited
from ..connections._service import _check_base_url
from .backend import Backends
from .check import IysConsentCheck
from .errors import IysNotConnected, IysProviderUnsupported
from .lookup import DEFAULT_LOOKUP_TIMEOUT, DEFAULT_LOOKUP_TTL, StatusLookups
from .models import IysConnect, IysConnectionOut, IysRefusal, IysStateOut, IysSyncReport
from .pull import DEFAULT_PULL_INTERVAL, Puller
from .records import CONSENT_PROVIDERS, LIVE_BASE_URL, IysConnection, IysToken
from .register import DEFAULT_BULK_DOUBT_WAIT, DEFAULT_BULK_MIN, DEFAULT_BULK_POLL, Registrar
from .tokens import DEFAULT_TOKEN_REQUESTS_PER_HOUR, SharedTokens, grant_token, seal_password
from .work import WORK_BULK, WORK_PULL, WORK_REGISTER, pull_item, registration_item

if TYPE_CHECKING:
    import httpx

    from .._clock import Clock
    from .._lifecycle.worker import BatchHandler, Handler
    from ..store.base import Store
    from ..vault._core import Vault

__all__ = ["DEFAULT_HTTP_TIMEOUT", "Iys", "IysSettings"]

DEFAULT_HTTP_TIMEOUT: Final = 30.0
#: How many pending changes ``connect`` and ``sync`` queue at most in one go.
_PENDING_LIMIT: Final = 1_000_000
#: How many of the most recently changed consents ``state`` looks at for refusals, and how
#: many of those it gives.
_REFUSALS_SCANNED: Final = 200
_REFUSALS_SHOWN: Final = 10
#: How long ``sync`` waits for İYS to finish the bulk requests it has in hand.
_SYNC_BULK_WAIT: Final = 120.0


@dataclass(frozen=True, slots=True)
class IysSettings:
    """How the İYS work runs. ``client``: the ``httpx.AsyncClient`` İYS is called with
    (default: one of our own with ``timeout``; one passed in stays the caller's to close).
    ``pull_interval``: how often İYS's changes are pulled. ``lookup_ttl``/``lookup_timeout``:
    the gate's status lookups (policy ``iys``). ``token_requests_per_hour``: our cap on
    token requests per workspace. ``bulk_min``: the fewest changes of a workspace claimed
    together that go as one asynchronous bulk request; ``bulk_poll``: how soon its results
    are asked for; ``bulk_doubt_wait``: how long a change of a bulk whose answer was lost
    is looked up in İYS before it is sent on its own. ``sleep``: how ``sync`` and a token
    wait (tests pass one of their own)."""

    client: httpx.AsyncClient | None = None
    timeout: float = DEFAULT_HTTP_TIMEOUT
    pull_interval: timedelta = DEFAULT_PULL_INTERVAL
    lookup_ttl: timedelta = DEFAULT_LOOKUP_TTL
    lookup_timeout: float = DEFAULT_LOOKUP_TIMEOUT
    token_requests_per_hour: int = DEFAULT_TOKEN_REQUESTS_PER_HOUR
    bulk_min: int = DEFAULT_BULK_MIN
    bulk_poll: timedelta = DEFAULT_BULK_POLL
    bulk_doubt_wait: timedelta = DEFAULT_BULK_DOUBT_WAIT
    sleep: Callable[[float], Awaitable[None]] | None = field(default=None, repr=False)


def _of_connection(connection: IysConnectionOut, _: Mapping[str, Any]) -> tuple[str | None, str]:
    return connection.workspace_id, connection.workspace_id


class Iys:
    """A workspace's İYS connection and the İYS work (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        vault: Vault,
        settings: IysSettings | None = None,
        *,
        due_work: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._vault = vault
        self.settings = settings or IysSettings()
        self._due_work = due_work
        self._client = self.settings.client
        self._own_client: httpx.AsyncClient | None = None
        holder = f"{socket.gethostname()}:{os.getpid()}:{new_id('iyt')}"
        self._tokens = SharedTokens(
            store, vault, clock, holder=holder,
            per_hour=self.settings.token_requests_per_hour, sleep=self.settings.sleep,
        )  # fmt: skip
        self._backends = Backends(store, self._tokens, self._http, vault)
        self.lookups = StatusLookups(
            self._backends, clock, ttl=self.settings.lookup_ttl,
            timeout=self.settings.lookup_timeout,
        )  # fmt: skip
        self.registrar = Registrar(
            store, clock, self._backends, bulk_min=self.settings.bulk_min,
            bulk_poll=self.settings.bulk_poll, bulk_doubt_wait=self.settings.bulk_doubt_wait,
        )  # fmt: skip
        self.puller = Puller(store, clock, self._backends, interval=self.settings.pull_interval)
        #: The hand-over gate's consent rule, under every policy (D33, D35 rule 4).
        self.check = IysConsentCheck(store, self.lookups)

    def __repr__(self) -> str:
        return f"Iys(pull_interval={self.settings.pull_interval})"

    def _http(self) -> httpx.AsyncClient:
        if self._client is not None:
            return self._client
        if self._own_client is None:
            import httpx

            self._own_client = httpx.AsyncClient(
                timeout=self.settings.timeout, follow_redirects=False
            )
        return self._own_client

    async def aclose(self) -> None:
        client, self._own_client = self._own_client, None
        if client is not None:
            await client.aclose()

    # ------------------------------------------------------------------ the connection

    @audited("iys.connect", _of_connection)
    async def connect(
        self,
        workspace_id: str,
        connection: IysConnect | Mapping[str, object],
        *,
        verify: bool = True,
    ) -> IysConnectionOut:
        """Connect the workspace to İYS (replacing a connection it had): ``iys_code``,
        ``brand_code``, ``username``, ``password`` and ``base_url`` (default: İYS's live
        API; the sandbox by its URL). ``verify`` (default): ask İYS for a token first, so
        wrong credentials are refused (:class:`IysCredentialsRefused`) and nothing is
        stored; the token is kept as the shared one. Or ``via_provider`` (with
        ``brand_code``): the id of the workspace's İletimerkezi or Verimor connection,
        whose consent API registers the consents (:class:`IysProviderUnsupported` for
        another provider); nothing is asked of the provider then (``connections test``
        checks its credentials)."""
        parsed = parse_model(IysConnect, connection)
        _check_base_url(parsed.base_url)
        workspace = await self._store.get_workspace(workspace_id)
        if workspace is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        now = self._clock.now()
        old = await self._store.get_iys_connection(workspace_id)
        if parsed.via_provider is not None:
            record = await self._via_provider(workspace_id, parsed, old, now)
        else:
            record = await self._direct(workspace_id, parsed, old, now, verify=verify)
        pending = await self._store.pending_iys_changes(workspace_id, True, _PENDING_LIMIT)
        # A provider's consent API lists no changes: nothing to pull through it.
        pulls = [pull_item(workspace_id, now=now)] if record.via_connection is None else []
        items = pulls + [
            registration_item(c.id, c.consent_id, workspace_id, livemode=True, now=now)
            for c in pending
        ]
        async with self._store.atomic():
            await self._store.save_iys_connection(record)
            await self._store.enqueue_work_many(items)
            if workspace.consent_policy == "off":
                await self._store.update_workspace(replace(workspace, consent_policy="iys"))
        self.lookups.forget(workspace_id)
        return IysConnectionOut.of(record)

    async def _direct(
        self, workspace_id: str, parsed: IysConnect, old: IysConnection | None,
        now: datetime, *, verify: bool,
    ) -> IysConnection:  # fmt: skip
        """The connection to İYS's own API (its API user)."""
        assert parsed.iys_code is not None and parsed.username and parsed.password
        token = IysToken()
        if verify:
            from .api import IysApi

            api = IysApi(self._http(), parsed.base_url, parsed.iys_code, parsed.brand_code)
            grant = await api.password_grant(parsed.username, parsed.password)
            token = grant_token(grant, workspace_id, self._vault, now)
        same_brand = (
            old is not None
            and old.via_connection is None
            and (old.iys_code, old.brand_code, old.base_url)
            == (parsed.iys_code, parsed.brand_code, parsed.base_url)
        )
        return IysConnection(
            workspace_id=workspace_id,
            iys_code=parsed.iys_code,
            brand_code=parsed.brand_code,
            username=parsed.username,
            password=seal_password(self._vault, workspace_id, parsed.password),
            base_url=parsed.base_url,
            created_at=now if old is None else old.created_at,
            updated_at=now,
            # The same brand keeps its place in İYS's changes; another starts afresh.
            after_hs=old.after_hs if same_brand and old else None,
            after_iys=old.after_iys if same_brand and old else None,
            pulled_at=old.pulled_at if same_brand and old else None,
            # A version past the old token's: a process still holding that one cannot
            # write over this one.
            token=replace(token, version=0 if old is None else old.token.version + 1),
        )

    async def _via_provider(
        self, workspace_id: str, parsed: IysConnect, old: IysConnection | None, now: datetime
    ) -> IysConnection:
        """The connection through a provider's consent API: no İYS user, password or
        token; the provider connection must be the workspace's, and one whose provider
        has a consent API (İletimerkezi, Verimor)."""
        assert parsed.via_provider is not None
        provider = await self._store.get_connection(parsed.via_provider)
        if provider is None or provider.workspace_id != workspace_id:
            raise ResourceNotFound(f"Connection {parsed.via_provider} not found.")
        if provider.provider not in CONSENT_PROVIDERS:
            raise IysProviderUnsupported(
                f"Connection {provider.id} is {provider.provider}, which has no consent API: "
                f"İYS through a provider takes {', '.join(CONSENT_PROVIDERS.values())}."
            )
        return IysConnection(
            workspace_id=workspace_id,
            iys_code=0,
            brand_code=parsed.brand_code,
            username="",
            password=seal_password(self._vault, workspace_id, ""),
            base_url=LIVE_BASE_URL,
            created_at=now if old is None else old.created_at,
            updated_at=now,
            token=IysToken(version=0 if old is None else old.token.version + 1),
            via_connection=provider.id,
        )

    async def get(self, workspace_id: str) -> IysConnectionOut:
        """The workspace's connection; :class:`IysNotConnected` (404) if it has none."""
        connection = await self._store.get_iys_connection(workspace_id)
        if connection is None:
            raise IysNotConnected(f"Workspace {workspace_id} has no İYS connection.")
        return IysConnectionOut.of(connection)

    async def state(self, workspace_id: str) -> IysStateOut:
        """Where the workspace stands with İYS (the dashboard's İYS page): its connection
        (``None``: not connected), how many live changes are still pending, and the
        refusals among its :data:`_REFUSALS_SCANNED` most recently changed live consents
        (newest first). Never the password or a token."""
        from ..consents.store import ConsentQuery

        connection = await self._store.get_iys_connection(workspace_id)
        pending = await self._store.pending_iys_changes(workspace_id, True, _PENDING_LIMIT)
        recent = await self._store.list_consents(
            ConsentQuery(workspace_id=workspace_id, livemode=True, limit=_REFUSALS_SCANNED)
        )
        refused = [
            IysRefusal(consent_id=c.id, recipient=c.recipient, status=c.status,
                       code=c.iys_error_code, message=c.iys_error_message,
                       updated_at=c.updated_at)
            for c in recent if c.iys_state == "refused"
        ]  # fmt: skip
        return IysStateOut(
            connection=None if connection is None else IysConnectionOut.of(connection),
            pending=len(pending),
            refused=refused[:_REFUSALS_SHOWN],
        )

    @audited("iys.disconnect", _of_connection)
    async def disconnect(self, workspace_id: str) -> IysConnectionOut:
        """Forget the workspace's connection (its password and token with it). Live
        consents recorded from now on stay ``pending`` until it connects again; the gate
        (policy ``iys``) then finds nobody to ask about unknown recipients, and refuses
        them as ``local`` does."""
        connection = await self._store.get_iys_connection(workspace_id)
        if connection is None or not await self._store.delete_iys_connection(workspace_id):
            raise IysNotConnected(f"Workspace {workspace_id} has no İYS connection.")
        self.lookups.forget(workspace_id)
        return IysConnectionOut.of(connection)

    # ------------------------------------------------------------------ sync

    async def sync(self, workspace_id: str) -> IysSyncReport:
        """Both directions now: pull İYS's changes, then register every pending live change
        (running the due background work, as ``worker --once`` does), waiting for the bulk
        requests in hand. :class:`IysNotConnected` (404) without a connection."""
        if await self._store.get_iys_connection(workspace_id) is None:
            raise IysNotConnected(f"Workspace {workspace_id} has no İYS connection.")
        pulled = await self.puller.pull(workspace_id)
        pending = await self._store.pending_iys_changes(workspace_id, True, _PENDING_LIMIT)
        now = self._clock.now()
        await self._store.enqueue_work_many([
            registration_item(c.id, c.consent_id, workspace_id, livemode=True, now=now)
            for c in pending
        ])  # fmt: skip
        if self._due_work is not None:
            await self._due_work()
        await self._wait_for_bulks(workspace_id)
        counts = {"registered": 0, "refused": 0, "pending": 0}
        for change in pending:
            found = await self._store.consent_change(change.id)
            if found is not None:
                counts[found[1].iys_state] += 1
        return IysSyncReport(pulled=dict(pulled), **counts)

    async def _wait_for_bulks(self, workspace_id: str) -> None:
        """Ask for the results of the workspace's bulk requests until none is open (or
        :data:`_SYNC_BULK_WAIT` has passed). Safe beside a running worker: asking is a
        read, and a change is settled once (compare-and-set on ``pending``)."""
        sleep = self.settings.sleep or asyncio.sleep
        waited = 0.0
        while waited <= _SYNC_BULK_WAIT:
            open_requests: dict[str, list[str]] = {}
            for change in await self._store.pending_iys_changes(workspace_id, True, _PENDING_LIMIT):
                registration = await self._store.iys_registration(change.id)
                if (
                    registration is not None
                    and registration.request_id is not None
                    and (not registration.bulk_in_doubt)
                ):
                    open_requests.setdefault(registration.request_id, []).append(change.id)
            if not open_requests:
                return
            for request_id, change_ids in open_requests.items():
                await self.registrar.poll(workspace_id, request_id, change_ids)
            step = self.settings.bulk_poll.total_seconds()
            await sleep(step)
            waited += step

    # ------------------------------------------------------------------ the worker

    def handlers(self) -> dict[str, Handler]:
        return {
            WORK_REGISTER: self.registrar.handle,
            WORK_BULK: self.registrar.handle_bulk,
            WORK_PULL: self.puller.handle,
        }

    def batch_handlers(self) -> dict[str, BatchHandler]:
        return {WORK_REGISTER: self.registrar.handle_batch}
