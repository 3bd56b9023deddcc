"""A ``Client`` whose server is killed (SIGKILL) while its send waits on the provider,
then started again at the same address. The client's retry carries the same Idempotency-Key,
so it gets the one job back: the provider saw the message once, and the store holds one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from contextlib import ExitStack
from pathlib import Path

from _served import free_port, serving
from fakes._server import serve
from fakes.netgsm import Canned, NetgsmFake

from unified_messaging import AsyncClient, Messenger
from unified_messaging.store.sql import store_from_url
from unified_messaging.vault._core import Vault, generate_key_spec

PROVIDER_DELAY = 3.0  # the provider answers long after the server was killed


async def _live_workspace(database_url: str, keys: str, provider_url: str, fake: NetgsmFake) -> str:
    async with Messenger(store_from_url(database_url), vault=Vault.from_spec(keys)) as messenger:
        workspace = await messenger.workspaces.create("client-crash")
        await messenger.connections.add(
            workspace.id, "sms_a", credentials={"usercode": fake.usercode,
            "password": fake.password}, default_sender="ACME", base_url=provider_url,
        )  # fmt: skip
        return (await messenger.keys.create(workspace.id, livemode=True)).secret


def _after(restarted: asyncio.Event) -> Callable[[float], Coroutine[None, None, None]]:
    """The client's back-off: no retry before the second server is up, then a short one.

    The retries are what is under test, not how fast the server comes back: a fixed number
    of short sleeps ran out while a loaded machine was still starting the second server.
    """

    async def sleep(seconds: float) -> None:
        await restarted.wait()
        await asyncio.sleep(min(seconds, 0.2))

    return sleep


async def test_a_send_cut_off_by_a_killed_server_is_one_job_after_the_retry(
    tmp_path: Path,
) -> None:
    keys = generate_key_spec("k1")
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"
    fake = NetgsmFake()
    fake.script(Canned(status=200, body=json.dumps({"code": "00", "jobid": "9000001"}).encode(),
                       delay=PROVIDER_DELAY))  # fmt: skip
    port = free_port()
    restarted = asyncio.Event()
    args = ("--database-url", database_url, "--submit-timeout", "1")
    async with serve(fake.app) as provider_url:
        api_key = await _live_workspace(database_url, keys, provider_url, fake)
        with ExitStack() as first:
            server = await asyncio.to_thread(first.enter_context,
                                             serving(tmp_path, port, keys, *args))  # fmt: skip
            # Retries enough for any load: the restarted server's worker settles the cut-off
            # send (IDEMPOTENCY_IN_PROGRESS until then) when it comes to it.
            client = AsyncClient(server.url, api_key, max_retries=1000, sleep=_after(restarted))
            sending = asyncio.ensure_future(client.send({"to": "+905552000001", "body": "tek"}))
            while not fake.sends:
                # However long it takes: only a server that died, or a send that ended
                # without reaching the provider, means it never will.
                assert server.proc.poll() is None, (tmp_path / "serve.log").read_text()
                assert not sending.done(), sending
                await asyncio.sleep(0.05)
            server.proc.kill()  # SIGKILL: no answer will ever come for that request
            await asyncio.to_thread(server.proc.wait, 30)
        with ExitStack() as second:
            await asyncio.to_thread(second.enter_context, serving(tmp_path, port, keys, *args))
            restarted.set()
            answer = await sending
            record = await client.get_message(answer.job_id)
            await client.aclose()

    assert len(fake.sends) == 1, "the retry reached the provider again"
    async with Messenger(store_from_url(database_url), vault=Vault.from_spec(keys)) as messenger:
        [workspace] = await messenger.workspaces.list()
        principal = await messenger.principal(workspace.id, livemode=True)
        page = await messenger.list_messages(principal, {})
    assert [r.job_id for r in page.data] == [answer.job_id]  # one job, the one answered
    assert record.job_id == answer.job_id
