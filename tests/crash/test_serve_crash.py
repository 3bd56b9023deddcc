"""Crash safety of the send path (D22, issue 11): SIGKILL the real ``unified-messaging serve``
while its requests wait on a provider, start it again, and retry every request with its
``Idempotency-Key``.

What must hold, on SQLite and on PostgreSQL: each key reaches the provider exactly once (the
retry answers with the original job instead of sending again), every job ends in a final
state (``unknown`` with ``SUBMIT_INTERRUPTED``: the provider may have taken it), and the
workspace's quota counts each of those messages once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from _crash_support import POSTGRES_ENV, postgres_database, worker_environment
from fakes._server import serve
from fakes.netgsm import Canned, NetgsmFake
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from unified_messaging import Messenger
from unified_messaging._vault import Vault, generate_key_spec
from unified_messaging.store.sql import store_from_url

SENDS = 8
PROVIDER_DELAY = 3.0  # the provider answers long after the server is killed
SUBMIT_TIMEOUT = "1"  # seconds: how soon the restarted server settles what was cut off
RETRY_DEADLINE = 30.0


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'serve-crash.db'}"
        return
    server = os.environ.get(POSTGRES_ENV) or None
    if server is None:
        pytest.skip(f"needs a PostgreSQL server: set {POSTGRES_ENV}")
    async with postgres_database(server) as url:
        yield url


@contextlib.contextmanager
def serving(database_url: str, keys: str, log: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The real ``serve`` on a free port, its worker on; yields the process and its URL."""
    args = ["--database-url", database_url, "--submit-timeout", SUBMIT_TIMEOUT]
    with log.open("a") as stderr:
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and fixed arguments
            [sys.executable, "-m", "unified_messaging", "serve", "--port", "0", "--json", *args],
            env=worker_environment(keys),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, log.read_text()
        yield proc, json.loads(line)["url"]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()


async def set_up(database_url: str, keys: str, provider_url: str, fake: NetgsmFake) -> str:
    """A live workspace with a quota and an ``sms_a`` connection to the fake; its API key."""
    messenger = Messenger(store_from_url(database_url), vault=Vault.from_spec(keys))
    async with messenger:
        workspace = await messenger.create_workspace("crash", monthly_quota=1000)
        await messenger.add_connection(
            workspace.id,
            "sms_a",
            credentials={"usercode": fake.usercode, "password": fake.password},
            default_sender="ACME",
            base_url=provider_url,
        )
        key = await messenger.create_api_key(workspace.id, livemode=True, rate_limit=1000)
        return key.secret


async def sql_rows(url: str, query: str) -> list[sa.Row[tuple[object, ...]]]:
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            return list((await connection.execute(sa.text(query))).all())
    finally:
        await engine.dispose()


def request(n: int) -> dict[str, object]:
    return {"to": f"+9055520000{n:02d}", "body": f"Siparişiniz {n} yolda"}


async def send_all(client: httpx.AsyncClient, url: str) -> list[httpx.Response | BaseException]:
    calls = [
        client.post(f"{url}/v1/messages", json=request(n), headers={"Idempotency-Key": f"k{n}"})
        for n in range(SENDS)
    ]
    return await asyncio.gather(*calls, return_exceptions=True)


async def retry_until_answered(client: httpx.AsyncClient, url: str, n: int) -> httpx.Response:
    """Retry with the same key; 409 IN_PROGRESS until the restarted server settles the job."""
    deadline = time.monotonic() + RETRY_DEADLINE
    while True:
        response = await client.post(
            f"{url}/v1/messages", json=request(n), headers={"Idempotency-Key": f"k{n}"}
        )
        if response.status_code != 409:
            return response
        assert response.json()["error"]["code"] == "IDEMPOTENCY_IN_PROGRESS"
        assert time.monotonic() < deadline, "the interrupted send was never settled"
        await asyncio.sleep(0.2)


async def test_a_serve_killed_mid_call_sends_nothing_twice(
    database_url: str, tmp_path: Path
) -> None:
    keys = generate_key_spec("k1")
    fake = NetgsmFake()
    accepted = [
        Canned(status=200, body=json.dumps({"code": "00", "jobid": f"9{n:07d}"}).encode())
        for n in range(SENDS)
    ]
    fake.script(*(Canned(**{**vars(a), "delay": PROVIDER_DELAY}) for a in accepted))
    log = tmp_path / "serve.log"
    async with serve(fake.app) as provider_url:
        api_key = await set_up(database_url, keys, provider_url, fake)
        headers = {"Authorization": f"Bearer {api_key}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as client:
            with serving(database_url, keys, log) as (proc, url):
                sending = asyncio.ensure_future(send_all(client, url))
                deadline = time.monotonic() + 20
                while len(fake.sends) < SENDS:
                    assert time.monotonic() < deadline, log.read_text()
                    await asyncio.sleep(0.05)
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                first = await sending
            assert all(isinstance(r, httpx.HTTPError) for r in first), first  # nobody answered

            with serving(database_url, keys, log) as (proc, url):
                answers = [await retry_until_answered(client, url, n) for n in range(SENDS)]
                records = [
                    (await client.get(f"{url}/v1/messages/{a.json()['job_id']}")).json()
                    for a in answers
                ]
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)

    assert len(fake.sends) == SENDS, "a retry reached the provider again"
    for answer in answers:
        assert answer.status_code == 201, answer.text
        assert answer.headers["Idempotent-Replayed"] == "true"
        # The send's answer speaks of acceptance (SPEC: sent/queued/failed): the provider may
        # have taken it. What became of it is the status record's to say.
        assert answer.json()["status"] == "sent"
    assert len({a.json()["job_id"] for a in answers}) == SENDS
    assert {(r["status"], r["error"]["code"]) for r in records} == {
        ("unknown", "SUBMIT_INTERRUPTED")
    }
    # D17: each message the provider may have taken holds one unit; none was counted twice.
    [(used,)] = await sql_rows(database_url, "SELECT used FROM um_quota")
    assert used == SENDS
    queued = await sql_rows(database_url, "SELECT count(*) FROM um_messages WHERE status='queued'")
    assert queued[0][0] == 0
