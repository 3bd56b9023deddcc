"""``rotate_vault`` re-seals everything the vault seals, not only connections.

Each test seals one of everything under an old key (a connection's credentials; a webhook
endpoint whose secret was rotated, so it has a current and a previous secret; one whose
previous secret has expired), rotates to a new key, then drops the old key: a new Messenger
on the same store holds the new key only. Everything must still open there: a live send
reaches the provider's fake with the stored credentials, and the webhook about it arrives
signed with both live secrets instead of being ``dropped``. On the memory store and on a
real SQLite file (PostgreSQL too when ``UM_TEST_POSTGRES_URL`` is set).
"""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from _webhook_support import LOOPBACK, Receiver, running_receiver
from fakes._server import serve
from fakes.netgsm import NetgsmFake
from sqlalchemy.engine import make_url

from unified_messaging import (
    ManualClock,
    Messenger,
    UnknownKeyId,
    Vault,
    VaultRotation,
    generate_key_spec,
)
from unified_messaging._domain import Connection
from unified_messaging.store.base import Store, WebhookEndpoint
from unified_messaging.store.memory import MemoryStore
from unified_messaging.store.sql import SqlStore
from unified_messaging.webhooks import verify
from unified_messaging.webhooks._admin import open_secret

PASSWORD = "netgsm-pass-never-shown"
USERCODE = "8501112233"
TO = "+905551234567"
OLD, NEW = generate_key_spec("k1"), generate_key_spec("k2")


@dataclass
class Sealed:
    """What the old key sealed, and the plaintext secrets to check it against."""

    workspace_id: str
    connection_id: str
    api_key: str
    #: The endpoint rotated within its overlap: (id, current secret, previous secret).
    endpoint: tuple[str, str, str]
    #: The endpoint whose previous secret has expired: (id, current secret).
    expired: tuple[str, str]


StoreFactory = Callable[[], Store]


@asynccontextmanager
async def postgres_schema(url: str) -> AsyncIterator[str]:
    """A schema of this test's own, dropped afterwards."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    schema = f"um_rotation_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(f'CREATE SCHEMA "{schema}"')
        yield schema
    finally:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await connection.close()


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreFactory]:
    """Opens the test's store again, as a restarted process would: the same data each time."""
    if request.param == "memory":
        shared = MemoryStore()
        yield lambda: shared
        return
    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"
        yield lambda: SqlStore(url)
        return
    url = os.environ.get("UM_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("PostgreSQL tests need a server: set UM_TEST_POSTGRES_URL")
    async with postgres_schema(url) as schema:
        settings = {"server_settings": {"search_path": schema}}
        yield lambda: SqlStore(url, connect_args=settings)


@asynccontextmanager
async def messenger(store: Store, keys: str, clock: ManualClock) -> AsyncIterator[Messenger]:
    async with Messenger(
        store, vault=Vault.from_spec(keys), clock=clock, webhook_policy=LOOPBACK
    ) as opened:
        yield opened


async def seal_one_of_everything(
    opened: Messenger, clock: ManualClock, netgsm_url: str, receiver: Receiver
) -> Sealed:
    workspace = await opened.workspaces.create("Acme", recipient_limit=None)
    connection = await opened.connections.add(
        workspace.id, "sms_a", credentials={"usercode": USERCODE, "password": PASSWORD},
        default_sender="ACME", base_url=netgsm_url,
    )  # fmt: skip
    key = await opened.keys.create(workspace.id, livemode=True)
    # This endpoint's previous secret expires before the rotation runs.
    short = await opened.webhooks.create(workspace.id, receiver.url("/expired"))
    short_rotated = await opened.webhooks.rotate_secret(
        short.endpoint.id, overlap=timedelta(minutes=1)
    )
    clock.advance(timedelta(minutes=2))
    created = await opened.webhooks.create(workspace.id, receiver.url("/hook"))
    rotated = await opened.webhooks.rotate_secret(created.endpoint.id, overlap=timedelta(days=1))
    return Sealed(
        workspace.id,
        connection.id,
        key.secret,
        (created.endpoint.id, rotated.secret, created.secret),
        (short.endpoint.id, short_rotated.secret),
    )


def basic_auth(fake: NetgsmFake) -> str:
    """The user and password of the one submit the fake received."""
    [submit] = [r for r in fake.received if r.path == "/sms/rest/v2/send"]
    return base64.b64decode(submit.headers["authorization"].split()[1]).decode()


async def test_rotation_reseals_credentials_and_webhook_secrets_so_the_old_key_can_go(
    open_store: StoreFactory,
) -> None:
    clock = ManualClock()
    fake = NetgsmFake(usercode=USERCODE, password=PASSWORD)
    async with serve(fake.app) as netgsm_url, running_receiver() as receiver:
        async with messenger(open_store(), OLD, clock) as before:
            sealed = await seal_one_of_everything(before, clock, netgsm_url, receiver)

        # Step 2-3 of docs/cli.md: the new key first, the old one after it; rotate (twice).
        async with messenger(open_store(), f"{NEW},{OLD}", clock) as rotating:
            report = await rotating.vault.rotate()
            again = await rotating.vault.rotate()

        # Step 4: the old key is dropped. Everything must open with the new key alone.
        async with messenger(open_store(), NEW, clock) as after:
            auth = await after.authenticate(sealed.api_key)
            sent = await after.send(auth, {"to": TO, "body": "Merhaba"})
            await after.worker().run_until_idle()
            endpoint_id, current, previous = sealed.endpoint
            deliveries = await after.webhooks.list_deliveries(endpoint_id)
            expired_id, expired_current = sealed.expired
            expired_deliveries = await after.webhooks.list_deliveries(expired_id)
            endpoint = await after.webhooks.get(endpoint_id)
            expired_endpoint = await after.webhooks.get(expired_id)

    assert report == VaultRotation(
        active_key_id="k2", connections=1, webhook_secrets=3, expired_secrets_removed=1
    )
    assert report.total == 4
    assert again == VaultRotation("k2", 0, 0, 0)

    # The stored credentials reached the provider: NetGSM's fake checks Basic auth.
    assert sent.status == "sent", sent
    assert basic_auth(fake) == f"{USERCODE}:{PASSWORD}"

    # The webhook about the send was signed, not dropped, by both live secrets.
    assert [d.status for d in deliveries] == ["delivered"]
    assert [d.status for d in expired_deliveries] == ["delivered"]
    [hook] = [r for r in receiver.received if r.path == "/hook"]
    assert len(hook.headers["webhook-signature"].split()) == 2
    for secret in (current, previous):
        verify(hook.body, hook.headers, secret, now=clock.now())  # signed at the clock's time
    [short] = [r for r in receiver.received if r.path == "/expired"]
    assert len(short.headers["webhook-signature"].split()) == 1
    verify(short.body, short.headers, expired_current, now=clock.now())

    # Every token is under the new key; the expired previous secret is gone, not re-sealed.
    new_only = Vault.from_spec(NEW)
    assert endpoint.secret_ciphertext.split(".")[1] == "k2"
    assert endpoint.previous_secret_ciphertext is not None
    assert endpoint.previous_secret_ciphertext.split(".")[1] == "k2"
    ids = {"workspace_id": sealed.workspace_id, "endpoint_id": endpoint_id}
    assert open_secret(new_only, endpoint.previous_secret_ciphertext, **ids) == previous
    assert expired_endpoint.previous_secret_ciphertext is None
    assert expired_endpoint.previous_secret_expires_at is None


async def test_a_token_under_a_key_no_longer_configured_stops_the_rotation_before_any_write(
    tmp_path: Path,
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"
    clock = ManualClock()
    lost = generate_key_spec("k0")
    async with messenger(SqlStore(url), OLD, clock) as first:
        workspace = await first.workspaces.create("Acme")
        kept = await first.connections.add(
            workspace.id, "sms_a", credentials={"usercode": "u", "password": PASSWORD}
        )
        endpoint = await first.webhooks.create(workspace.id, "http://127.0.0.1:9/hook")
    async with messenger(SqlStore(url), lost, clock) as other:
        # A connection sealed under a key that will not be configured at rotation time.
        await other.connections.add(
            workspace.id, "sms_b", credentials={"api_key": "k", "api_hash": PASSWORD}
        )

    async with messenger(SqlStore(url), f"{NEW},{OLD}", clock) as rotating:
        with pytest.raises(UnknownKeyId) as info:
            await rotating.vault.rotate()
        unchanged = await rotating.connections.get(kept.id)
        endpoint_after = await rotating.webhooks.get(endpoint.endpoint.id)

    assert info.value.key_id == "k0"
    assert "UM_MASTER_KEYS" in info.value.message
    assert PASSWORD not in str(info.value)
    # Nothing was written: the readable tokens are still under the old key.
    assert unchanged.credentials == kept.credentials
    assert endpoint_after.secret_ciphertext == endpoint.endpoint.secret_ciphertext


Racer = Callable[[], Awaitable[None]]


class ChangedBeforeTheWrite(MemoryStore):
    """A store on which an operator's admin update lands after the rotation's last read of a
     row and before its write to it: once armed, the racer runs right after the next read of
     that kind of row, or right before the next compare-and-set of it, whichever comes first
    ."""

    def __init__(self) -> None:
        super().__init__()
        self.on_connection: Racer | None = None
        self.on_endpoint: Racer | None = None

    async def _race(self, name: str) -> None:
        racer = getattr(self, name)
        setattr(self, name, None)
        if racer is not None:
            await racer()

    async def get_connection(self, connection_id: str) -> Connection | None:
        found = await super().get_connection(connection_id)
        await self._race("on_connection")
        return found

    async def swap_connection_credentials(
        self, connection_id: str, expected: str, sealed: str
    ) -> bool:
        await self._race("on_connection")
        return await super().swap_connection_credentials(connection_id, expected, sealed)

    async def get_webhook_endpoint(self, endpoint_id: str) -> WebhookEndpoint | None:
        found = await super().get_webhook_endpoint(endpoint_id)
        await self._race("on_endpoint")
        return found

    async def swap_webhook_secrets(self, endpoint_id: str, **sealed: Any) -> bool:
        await self._race("on_endpoint")
        return await super().swap_webhook_secrets(endpoint_id, **sealed)


async def test_a_change_made_during_the_rotation_is_kept_not_overwritten() -> None:
    # An operator rotates the endpoint's secret (with the new key) and the worker disables
    # the endpoint, between the rotation's reads and its write.
    store, clock = ChangedBeforeTheWrite(), ManualClock()
    async with messenger(store, OLD, clock) as first:
        workspace = await first.workspaces.create("Acme")
        created = await first.webhooks.create(workspace.id, "http://127.0.0.1:9/hook")
    endpoint_id = created.endpoint.id

    async with (
        messenger(store, NEW, clock) as operator,
        messenger(store, f"{NEW},{OLD}", clock) as rotating,
    ):

        async def meanwhile() -> None:
            await operator.webhooks.rotate_secret(endpoint_id, overlap=timedelta(0))
            await store.set_webhook_endpoint_health(
                endpoint_id, enabled=False, disabled_at=operator.clock.now(), failing_since=None
            )

        store.on_endpoint = meanwhile
        report = await rotating.vault.rotate()
        after = await rotating.webhooks.get(endpoint_id)

    # The operator's secret (sealed under k2 already) stands; the disabling too.
    assert report.webhook_secrets == 0
    assert not after.enabled
    assert after.secret_ciphertext != created.endpoint.secret_ciphertext
    assert after.secret_ciphertext.split(".")[1] == "k2"


async def test_an_admin_update_between_the_rotations_read_and_write_is_not_written_over() -> None:
    store, clock = ChangedBeforeTheWrite(), ManualClock()
    async with messenger(store, OLD, clock) as first:
        workspace = await first.workspaces.create("Acme")
        connection = await first.connections.add(
            workspace.id, "sms_a", credentials={"usercode": USERCODE, "password": PASSWORD}
        )
        created = await first.webhooks.create(workspace.id, "http://127.0.0.1:9/hook")
    endpoint_id = created.endpoint.id
    new_secrets: list[str] = []

    async with (
        messenger(store, NEW, clock) as operator,
        messenger(store, f"{NEW},{OLD}", clock) as rotating,
    ):

        async def new_send_rate() -> None:
            await operator.connections.set_send_rate(connection.id, max_rate=3)

        async def new_webhook_secret() -> None:
            rotated = await operator.webhooks.rotate_secret(endpoint_id, overlap=timedelta(0))
            new_secrets.append(rotated.secret)

        store.on_connection, store.on_endpoint = new_send_rate, new_webhook_secret
        report = await rotating.vault.rotate()
        after = await rotating.connections.get(connection.id)
        endpoint = await rotating.webhooks.get(endpoint_id)

    # The operator's send rate stands, and the credentials are re-sealed under the new key.
    assert after.max_rate == 3
    assert report.connections == 1
    assert after.credentials.split(".")[1] == "k2"
    ids = {"workspace_id": workspace.id, "connection_id": connection.id}
    assert Vault.from_spec(NEW).decrypt_json(after.credentials, **ids)["password"] == PASSWORD
    # The operator's new webhook secret stands: the rotation did not put the old one back.
    [secret] = new_secrets
    ids = {"workspace_id": workspace.id, "endpoint_id": endpoint_id}
    assert open_secret(Vault.from_spec(NEW), endpoint.secret_ciphertext, **ids) == secret
    assert endpoint.previous_secret_ciphertext is None


async def test_a_rotation_between_an_admin_setters_read_and_write_is_not_undone() -> None:
    # The other way round: the admin setter writes the whole row it read; the credentials
    # it read are under the old key, and the rotation re-sealed them meanwhile.
    store, clock = ChangedBeforeTheWrite(), ManualClock()
    async with messenger(store, OLD, clock) as first:
        workspace = await first.workspaces.create("Acme")
        connection = await first.connections.add(
            workspace.id, "sms_a", credentials={"usercode": USERCODE, "password": PASSWORD}
        )

    async with messenger(store, f"{NEW},{OLD}", clock) as rotating:

        async def rotate() -> None:
            assert (await rotating.vault.rotate()).connections == 1

        store.on_connection = rotate
        await rotating.connections.set_breaker_policy(connection.id, consecutive=9)
        after = await rotating.connections.get(connection.id)

    assert after.breaker.consecutive == 9
    assert after.credentials.split(".")[1] == "k2"  # not the old-key token read before
    ids = {"workspace_id": workspace.id, "connection_id": connection.id}
    assert Vault.from_spec(NEW).decrypt_json(after.credentials, **ids)["password"] == PASSWORD


async def test_rotate_returns_what_it_re_sealed_and_nothing_the_second_time(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"
    clock = ManualClock()
    async with messenger(SqlStore(url), OLD, clock) as first:
        workspace = await first.workspaces.create("Acme")
        await first.connections.add(
            workspace.id, "sms_a", credentials={"usercode": "u", "password": PASSWORD}
        )
        await first.webhooks.create(workspace.id, "http://127.0.0.1:9/hook")
    async with messenger(SqlStore(url), f"{NEW},{OLD}", clock) as rotating:
        assert (await rotating.vault.rotate()).total == 2
        assert (await rotating.vault.rotate()).total == 0


def test_the_report_is_a_small_frozen_record() -> None:
    report = VaultRotation("k2", connections=2, webhook_secrets=3)
    assert (report.total, report.expired_secrets_removed) == (5, 0)
    with pytest.raises(AttributeError):
        report.connections = 1  # type: ignore[misc]
    assert replace(report, connections=0).total == 3
