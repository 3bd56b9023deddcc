"""A send cut off mid-call is settled by its provider's late report (D10), through the id we
minted for it: SIGKILL the real ``unified-messaging serve`` while Kannel holds the message,
start it again, and let Kannel's report (to the ``dlr-url`` the killed process handed over)
reach the restarted server.

Kannel's ``sendsms`` answer carries no message id, so the adapter mints one for the
``dlr-url``. It is the job's id and the attempt (written ahead before the call), so the report
still names the message the submit check ended ``unknown`` (``SUBMIT_INTERRUPTED``): it ends
``delivered``. With a random id, which only the lost outcome would have stored, the report
matched nothing and the message stayed ``unknown`` for good.
"""

from __future__ import annotations

import asyncio
import functools
import signal
import time
from pathlib import Path
from typing import Any

import httpx
from _crash_support import run_serve
from fakes._server import serve
from fakes.kannel import PASSWORD, USERNAME, Canned, KannelFake

from unified_messaging import Messenger
from unified_messaging.store.sql import store_from_url
from unified_messaging.vault._core import Vault, generate_key_spec

TO = "+905321234567"
PROVIDER_DELAY = 30.0  # Kannel takes the message and never answers before the kill
SUBMIT_TIMEOUT = "1"  # seconds: how soon the restarted server settles what was cut off
serving = functools.partial(run_serve, submit_timeout=SUBMIT_TIMEOUT)
DEADLINE = 30.0
RECEIPT = (
    "id:0A1B2C sub:001 dlvrd:001 submit date:2612020100 done date:2612020101 "
    "stat:DELIVRD err:000 text:Kodunuz 1234"
)


async def set_up(database_url: str, keys: str, kannel_url: str) -> str:
    """A live workspace with an ``sms_e`` connection to the Kannel fake; its API key."""
    messenger = Messenger(store_from_url(database_url), vault=Vault.from_spec(keys))
    async with messenger:
        workspace = await messenger.workspaces.create("minted")
        await messenger.connections.add(
            workspace.id, "sms_e", base_url=kannel_url, default_sender="ACME",
            # The dlr-url's host does not matter here: the test delivers the report itself.
            credentials={"username": USERNAME, "password": PASSWORD,
                         "dlr_url": "http://um.example"},
            max_rate="off",
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        return key.secret


async def record_once(
    client: httpx.AsyncClient, url: str, job_id: str, status: str
) -> dict[str, Any]:
    """The message once it has ``status`` (the restarted worker gets there on its own)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        record: dict[str, Any] = (await client.get(f"{url}/v1/messages/{job_id}")).json()
        if record["status"] == status:
            return record
        assert time.monotonic() < deadline, record
        await asyncio.sleep(0.1)


async def replayed(client: httpx.AsyncClient, url: str, body: dict[str, str]) -> httpx.Response:
    """The send retried with its key: 409 until the restarted server settles the job."""
    deadline = time.monotonic() + DEADLINE
    while True:
        response = await client.post(
            f"{url}/v1/messages", json=body, headers={"Idempotency-Key": "k1"}
        )
        if response.status_code != 409:
            return response
        assert time.monotonic() < deadline, response.text
        await asyncio.sleep(0.1)


async def test_a_send_killed_mid_call_is_settled_by_kannels_late_report(
    database_url: str, tmp_path: Path
) -> None:
    keys = generate_key_spec("k1")
    fake = KannelFake()
    fake.script(Canned(202, "0: Accepted for delivery", delay=PROVIDER_DELAY))
    log = tmp_path / "serve.log"
    async with serve(fake.app) as kannel_url:
        api_key = await set_up(database_url, keys, kannel_url)
        headers = {"Authorization": f"Bearer {api_key}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as client:
            async with serving(database_url, keys, log) as (proc, url):
                body = {"to": TO, "body": "Kodunuz 1234"}
                sending = asyncio.ensure_future(
                    client.post(f"{url}/v1/messages", json=body, headers={"Idempotency-Key": "k1"})
                )
                deadline = time.monotonic() + DEADLINE
                while not fake.received:  # Kannel has the message; its answer never comes
                    assert time.monotonic() < deadline, log.read_text()
                    await asyncio.sleep(0.05)
                proc.send_signal(signal.SIGKILL)
                await asyncio.to_thread(proc.wait, 30)
                assert isinstance((await asyncio.gather(sending, return_exceptions=True))[0],
                                  httpx.HTTPError)  # fmt: skip

            async with serving(database_url, keys, log) as (proc, url):
                replay = await replayed(client, url, body)
                job_id = replay.json()["job_id"]
                cut_off = await record_once(client, url, job_id, "unknown")
                # Kannel delivers, and fetches the dlr-url the killed process handed it.
                path, query = fake.report(fake.received[0], 1, answer=RECEIPT)
                reported = await client.get(f"{url}{path}", params=query)
                settled = await record_once(client, url, job_id, "delivered")
                proc.send_signal(signal.SIGTERM)
                await asyncio.to_thread(proc.wait, 30)

    assert cut_off["error"]["code"] == "SUBMIT_INTERRUPTED"
    assert reported.status_code == 200, reported.text
    assert reported.json()["received"] == 1
    assert settled["dlr"]["status"] == "delivered"
    assert [(a["provider"], a["status"]) for a in settled["attempts"]] == [("sms_e", "delivered")]
    assert len(fake.received) == 1, "the replay reached the gateway again"
