"""A ``serve`` killed while its circuit breaker is half-open (D26): SIGKILL the real
``unified-messaging serve`` while the one probe call hangs at the provider, start it again.

What must hold, on SQLite and on PostgreSQL: no breaker stays stuck half-open (the dead
probe's lease runs out, ``--submit-timeout``, and the next send probes again and closes it),
every send is answered by the fallback meanwhile, and no message is lost: the probe's own
message ends ``unknown`` (``SUBMIT_INTERRUPTED``: the provider may have it), every other one
is ``sent``, none stays ``queued``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import signal
import time
from pathlib import Path

import httpx
from _crash_support import run_serve, sql_rows
from fakes._server import serve
from fakes.faults import Faults
from fakes.iletimerkezi import IletimerkeziFake
from fakes.netgsm import NetgsmFake

from unified_messaging import BreakerPolicy, Messenger
from unified_messaging.store.sql import store_from_url
from unified_messaging.vault._core import Vault, generate_key_spec

#: Seconds: how long the killed probe holds the half-open breaker, and when its message is
#: settled, in the restarted server.
SUBMIT_TIMEOUT = "2"
#: The real ``serve`` with this module's submit timeout (see ``run_serve``).
serving = functools.partial(run_serve, submit_timeout=SUBMIT_TIMEOUT)
DEADLINE = 30.0


async def set_up(
    database_url: str, keys: str, a: str, b: str, netgsm: NetgsmFake, ilet: IletimerkeziFake
) -> str:
    """sms_a (NetGSM: opens after 2 failures, 1 s cool-down) falling back to sms_b."""
    messenger = Messenger(store_from_url(database_url), vault=Vault.from_spec(keys))
    async with messenger:
        workspace = await messenger.workspaces.create("crash", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, "sms_a", base_url=a, default_sender="ACME",
            breaker=BreakerPolicy.build(consecutive=2, cooldown=1),
            credentials={"usercode": netgsm.usercode, "password": netgsm.password},
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_b", base_url=b, default_sender="ACME",
            credentials={"api_key": ilet.key, "api_hash": ilet.hash},
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True, rate_limit=1000)
        return key.secret


async def breaker_phase(database_url: str) -> str:
    rows = await sql_rows(database_url, "SELECT data FROM um_breakers")
    phases = [json.loads(str(row[0]))["phase"] for row in rows]
    return phases[0] if phases else "closed"


class Sender:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.count = 0

    def send(self, url: str) -> asyncio.Future[httpx.Response]:
        self.count += 1  # a new text each time: İletimerkezi refuses repeats to one number
        body = {"to": "+905551234567", "body": f"Kod {self.count:03d}", "fallback": ["sms_b"]}
        return asyncio.ensure_future(self.client.post(f"{url}/v1/messages", json=body))


async def test_a_serve_killed_mid_probe_leaves_no_breaker_stuck_and_no_message_lost(
    database_url: str, tmp_path: Path
) -> None:
    keys = generate_key_spec("k1")
    netgsm, ilet = NetgsmFake(), IletimerkeziFake()
    sms_a = Faults(netgsm.app)
    log = tmp_path / "serve.log"
    answered: list[httpx.Response] = []
    async with serve(sms_a) as a, serve(ilet.app) as b:
        api_key = await set_up(database_url, keys, a, b, netgsm, ilet)
        headers = {"Authorization": f"Bearer {api_key}"}
        async with httpx.AsyncClient(headers=headers, timeout=60) as client:
            sender = Sender(client)
            async with serving(database_url, keys, log, submit_timeout=SUBMIT_TIMEOUT) as (
                proc,
                url,
            ):
                sms_a.storm(503)
                for _ in range(2):
                    answered.append(await sender.send(url))
                assert await breaker_phase(database_url) == "open"

                sms_a.hang()
                calls = sms_a.requests
                deadline = time.monotonic() + DEADLINE
                probe = sender.send(url)
                while sms_a.requests == calls:  # until a send is the probe, hanging at sms_a
                    assert time.monotonic() < deadline, log.read_text()
                    if probe.done():
                        answered.append(probe.result())  # fell back: still cooling down
                        probe = sender.send(url)
                    await asyncio.sleep(0.05)
                assert await breaker_phase(database_url) == "half_open"
                proc.send_signal(signal.SIGKILL)
                await asyncio.to_thread(proc.wait, 30)
                probe_outcome = (await asyncio.gather(probe, return_exceptions=True))[0]
                assert isinstance(probe_outcome, httpx.HTTPError)  # nobody answered it

            sms_a.heal()  # the provider is back; the restarted server must find it
            async with serving(database_url, keys, log, submit_timeout=SUBMIT_TIMEOUT) as (
                proc,
                url,
            ):
                deadline = time.monotonic() + DEADLINE
                while True:
                    response = await sender.send(url)
                    answered.append(response)
                    assert response.status_code == 201, response.text
                    if response.json()["provider"] == "sms_a":
                        break  # the probe after the dead one's lease: closed again
                    assert time.monotonic() < deadline, "the breaker stayed half-open"
                    await asyncio.sleep(0.1)
                assert await breaker_phase(database_url) == "closed"
                # The dead probe's message is settled by the restarted server's worker.
                while await sql_rows(
                    database_url, "SELECT job_id FROM um_messages WHERE status = 'queued'"
                ):
                    assert time.monotonic() < deadline, log.read_text()
                    await asyncio.sleep(0.1)
                proc.send_signal(signal.SIGTERM)
                await asyncio.to_thread(proc.wait, 30)

    rows = await sql_rows(database_url, "SELECT job_id, status, error_code FROM um_messages")
    by_id = {str(r[0]): (str(r[1]), r[2]) for r in rows}
    assert len(by_id) == sender.count  # every send was stored, the killed one too
    for response in answered:
        assert response.status_code == 201, response.text
        assert by_id[response.json()["job_id"]][0] == "sent"
    lost = {job: state for job, state in by_id.items()
            if job not in {r.json()["job_id"] for r in answered}}  # fmt: skip
    assert list(lost.values()) == [("unknown", "SUBMIT_INTERRUPTED")]
