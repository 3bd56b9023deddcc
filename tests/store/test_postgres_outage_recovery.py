"""After a PostgreSQL outage (the database unreachable, then back), through the REST app on a
real socket with a real PostgreSQL store reached through a TCP proxy the test takes down:

- a send whose write-ahead failed (503) keeps nothing: a retry with the same Idempotency-Key
  runs afresh once the store is back, instead of 409 ``IDEMPOTENCY_IN_PROGRESS`` for the
  in-flight time-out (the release the store refused is done when it answers again);
- a send whose provider accepted the message while the store was down keeps that truth: its
  outcome write waits for the store (within a bound) and the message is ``sent``, not left
  for its submit check to settle ``unknown``.

The outage begins at a chosen store call (a wrapper around that one method starts it); the
failure itself is the real driver's, against a database it cannot reach.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest
from fakes._server import serve
from sqlalchemy.engine import make_url

from unified_messaging import Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import TestBed, create_testbed

pytestmark = pytest.mark.postgres


class OutageProxy:
    """A TCP proxy to PostgreSQL. :meth:`down` drops every connection and refuses new ones
    (accepted and closed at once, and counted); after ``up_after`` refusals it is up again
    by itself: the store has met the outage that many times."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._pipes: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self.is_down = False
        self.refused = 0
        self._up_after: int | None = None
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        self._drop_all()
        await self._server.wait_closed()

    def down(self, *, up_after: int | None = None) -> None:
        self.is_down, self.refused, self._up_after = True, 0, up_after
        self._drop_all()

    def up(self) -> None:
        self.is_down = False

    def _drop_all(self) -> None:
        for writer in list(self._pipes):
            writer.close()
        self._pipes.clear()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.is_down:
            self.refused += 1
            if self._up_after is not None and self.refused >= self._up_after:
                self.is_down = False
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(*self._target)
        self._pipes.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


@asynccontextmanager
async def outage_bed() -> AsyncIterator[tuple[TestBed, OutageProxy, str]]:
    """A test bed on a fresh PostgreSQL schema reached through an :class:`OutageProxy`, and
    the REST app serving it; yields the bed, the proxy and the app's URL."""
    url = os.environ.get("UM_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("needs UM_TEST_POSTGRES_URL")
    parsed = make_url(url)
    dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    schema = f"um_outage_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(dsn)
    await admin.execute(f'CREATE SCHEMA "{schema}"')
    proxy = OutageProxy((parsed.host or "127.0.0.1", parsed.port or 5432))
    await proxy.start()
    proxied = parsed.set(host="127.0.0.1", port=proxy.port)
    store = SqlStore(
        proxied.render_as_string(hide_password=False),
        connect_args={"server_settings": {"search_path": schema}},
        connect_timeout=2,
    )
    messenger = Messenger(store, vault=Vault.generate())
    try:
        bed = await create_testbed(messenger=messenger)
        async with serve(create_app(messenger, worker=False)) as app_url:
            yield bed, proxy, app_url
    finally:
        await messenger.aclose()
        await proxy.close()
        await admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await admin.close()


def outage_from(
    store: Any, method: str, start: Callable[[], None]
) -> Callable[[], Awaitable[None]]:
    """The outage begins when ``store.method`` is next called (once); returns the undo."""
    inner = store._inner if hasattr(store, "_inner") else store
    kept = getattr(inner, method)

    async def first_call(*args: object, **kwargs: object) -> object:
        setattr(inner, method, kept)
        start()
        return await kept(*args, **kwargs)

    setattr(inner, method, first_call)

    async def undo() -> None:
        setattr(inner, method, kept)

    return undo


async def test_a_key_whose_send_got_503_is_free_again_once_the_store_is_back() -> None:
    async with outage_bed() as (bed, proxy, url):
        headers = {"Authorization": f"Bearer {bed.api_key}", "Idempotency-Key": "order-7"}
        request = {"to": "+905551000201", "body": "Merhaba"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            # The key is claimed; then the database goes, before the write-ahead.
            outage_from(bed.messenger.store, "accept_messages", proxy.down)
            during = await client.post("/v1/messages", json=request)
            proxy.up()
            after = await client.post("/v1/messages", json=request)

    assert (during.status_code, during.json()["error"]["code"]) == (503, "STORAGE_UNAVAILABLE")
    # A 5xx keeps nothing (docs/rest.md): the retry runs afresh, not 409 for five minutes.
    assert after.status_code == 201, after.text
    assert after.json()["status"] == "sent"
    assert "Idempotent-Replayed" not in after.headers


async def test_a_send_the_provider_accepted_during_an_outage_stays_sent() -> None:
    async with outage_bed() as (bed, proxy, url):
        headers = {"Authorization": f"Bearer {bed.api_key}"}
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
            # The provider has the message; the database goes as its answer is written, and
            # comes back after the store has met the outage twice.
            outage_from(bed.messenger.store, "finish_messages", lambda: proxy.down(up_after=2))
            sent = await client.post("/v1/messages", json={"to": "+905551000202", "body": "x"})
            record = await client.get(f"/v1/messages/{sent.json()['job_id']}")

    assert proxy.refused >= 2  # the outcome write did meet the outage
    assert (sent.status_code, sent.json()["status"]) == (201, "sent")
    # Kept as the provider said, not left for the submit check to settle "unknown".
    assert record.json()["status"] == "sent", record.text
    assert [a["status"] for a in record.json()["attempts"]] == ["accepted"]
