"""Scheduled sends survive a SIGKILL: the real ``unified-messaging serve`` takes
sends due a few seconds ahead and is killed before they are due; a second ``serve`` on the
same database hands every one over at its time, each exactly once, and a third one started
after that sends nothing more. A second test kills a ``worker`` while the hand-over's
provider call is in flight: the message ends ``unknown`` (``SUBMIT_INTERRUPTED``), never
sent twice.

Real processes on the system clock, so the times here are real seconds (end to end).
"""

from __future__ import annotations

import asyncio
import base64
import json
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from _crash_support import WorkerProcess, run_serve, sql_rows, worker_environment
from fakes._server import serve
from fakes.netgsm import Canned, NetgsmFake
from test_serve_crash import set_up, stop

from unified_messaging import Messenger, Vault
from unified_messaging.store.sql import store_from_url

SENDS = 4
DEADLINE = 30.0


async def status_of(client: httpx.AsyncClient, url: str, job: str) -> str:
    response = await client.get(f"{url}/v1/messages/{job}")
    assert response.status_code == 200, response.text
    status: str = response.json()["status"]
    return status


async def wait_until_none_queued(client: httpx.AsyncClient, url: str, jobs: list[str]) -> None:
    deadline = time.monotonic() + DEADLINE
    while {await status_of(client, url, job) for job in jobs} & {"queued"}:
        assert time.monotonic() < deadline, "a scheduled send was never handed over"
        await asyncio.sleep(0.2)


async def test_a_serve_killed_before_the_time_still_sends_each_message_once(
    database_url: str, tmp_path: Path
) -> None:
    keys = "k1:" + base64.b64encode(b"\x01" * 32).decode()
    fake = NetgsmFake()
    log = tmp_path / "serve.log"
    async with serve(fake.app) as provider_url:
        api_key = await set_up(database_url, keys, provider_url, fake)
        headers = {"Authorization": f"Bearer {api_key}"}
        async with httpx.AsyncClient(headers=headers, timeout=10) as client:
            async with run_serve(database_url, keys, log, submit_timeout="1") as (proc, url):
                due = datetime.now(UTC) + timedelta(seconds=10)  # a loaded machine is slow
                answers = [
                    await client.post(f"{url}/v1/messages", json={
                        "to": f"+9055530000{n:02d}", "body": f"Hatırlatma {n}",
                        "send_at": due.isoformat(),
                    })
                    for n in range(SENDS)
                ]  # fmt: skip
                assert [a.status_code for a in answers] == [201] * SENDS, answers[0].text
                assert {a.json()["status"] for a in answers} == {"queued"}
                await stop(proc, signal.SIGKILL)
            assert fake.sends == []  # killed before the time: nothing went out
            jobs = [a.json()["job_id"] for a in answers]

            async with run_serve(database_url, keys, log, submit_timeout="1") as (proc, url):
                await wait_until_none_queued(client, url, jobs)
                assert {await status_of(client, url, job) for job in jobs} == {"sent"}
                await stop(proc, signal.SIGTERM)
            assert datetime.now(UTC) >= due

            async with run_serve(database_url, keys, log, submit_timeout="1") as (proc, url):
                await asyncio.sleep(2)  # a third run finds nothing left to hand over
                await stop(proc, signal.SIGTERM)

    numbers = [m["no"] for call in fake.sends for m in call.json["messages"]]  # type: ignore[index]
    assert len(numbers) == len(set(numbers)) == SENDS, numbers  # each once


async def test_a_worker_killed_mid_hand_over_never_sends_twice(
    database_url: str, tmp_path: Path
) -> None:
    keys = "k1:" + base64.b64encode(b"\x02" * 32).decode()
    fake = NetgsmFake()
    # The provider takes the hand-over, but answers only long after the kill.
    fake.script(Canned(status=200, body=json.dumps({"code": "00", "jobid": "90000001"}).encode(),
                       delay=5.0))  # fmt: skip
    args = ("--database-url", database_url, "--lease", "2")
    env = worker_environment(keys)
    runs = [WorkerProcess(args, env, tmp_path / "worker.log") for _ in range(2)]
    query = "SELECT status, error_code FROM um_messages"
    async with serve(fake.app) as provider_url:
        api_key = await set_up(database_url, keys, provider_url, fake)
        messenger = Messenger(store_from_url(database_url), vault=Vault.from_spec(keys))
        async with messenger:
            principal = await messenger.authenticate(api_key)
            due = datetime.now(UTC) + timedelta(seconds=1)
            answer = await messenger.send(principal, {
                "to": "+905553000099", "body": "Hatırlatma", "send_at": due.isoformat(),
            })  # fmt: skip
        assert answer.status == "queued"
        try:
            runs[0].start()
            deadline = time.monotonic() + DEADLINE
            while not fake.sends:  # the hand-over's call reached the provider
                assert time.monotonic() < deadline, runs[0].output()
                await asyncio.sleep(0.05)
            assert runs[0].kill() == -9
            # Another worker takes the item over when the killed one's 2 s lease ends.
            runs[1].start()
            deadline = time.monotonic() + DEADLINE
            while (row := (await sql_rows(database_url, query))[0])[0] in ("queued", "sent"):
                assert time.monotonic() < deadline, (row, runs[1].output())
                await asyncio.sleep(0.2)
        finally:
            for run in runs:
                if run.running:
                    run.kill()

    assert tuple(row) == ("unknown", "SUBMIT_INTERRUPTED")
    assert len(fake.sends) == 1
