"""Crash safety of the send path (D22): SIGKILL the real ``unified-messaging serve``
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
import functools
import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from _crash_support import postgres_database, run_serve, sql_rows
from fakes._server import serve
from fakes.netgsm import Canned, NetgsmFake
from sqlalchemy.engine import make_url

from unified_messaging import Messenger
from unified_messaging.store.sql import store_from_url
from unified_messaging.vault._core import Vault, generate_key_spec

SENDS = 8
PROVIDER_DELAY = 3.0  # the provider answers long after the server is killed
SUBMIT_TIMEOUT = "1"  # seconds: how soon the restarted server settles what was cut off
#: The real ``serve`` with this module's submit timeout (see ``run_serve``).
serving = functools.partial(run_serve, submit_timeout=SUBMIT_TIMEOUT)
RETRY_DEADLINE = 30.0


async def stop(proc: subprocess.Popen[str], sig: signal.Signals) -> None:
    proc.send_signal(sig)
    await asyncio.to_thread(proc.wait, 30)


async def set_up(
    database_url: str,
    keys: str,
    provider_url: str,
    fake: NetgsmFake,
    quota: int | None = 1000,
    max_rate: float | None = None,
) -> str:
    """A live workspace with a quota and an ``sms_a`` connection to the fake (at ``max_rate``
    messages a second, D27, when given); its API key."""
    messenger = Messenger(store_from_url(database_url), vault=Vault.from_spec(keys))
    async with messenger:
        workspace = await messenger.workspaces.create("crash", monthly_quota=quota)
        await messenger.connections.add(
            workspace.id,
            "sms_a",
            credentials={"usercode": fake.usercode, "password": fake.password},
            default_sender="ACME",
            base_url=provider_url,
            max_rate=max_rate if max_rate is not None else "default",
        )
        key = await messenger.keys.create(workspace.id, livemode=True, rate_limit=1000)
        return key.secret


async def lift_send_rate(database_url: str, keys: str) -> None:
    """Take the send rate off the workspace's connections (D27)."""
    messenger = Messenger(store_from_url(database_url), vault=Vault.from_spec(keys))
    async with messenger:
        for workspace in await messenger.workspaces.list():
            for connection in await messenger.connections.list(workspace.id):
                await messenger.connections.set_send_rate(connection.id, max_rate="off")


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
            async with serving(database_url, keys, log, submit_timeout=SUBMIT_TIMEOUT) as (
                proc,
                url,
            ):
                sending = asyncio.ensure_future(send_all(client, url))
                deadline = time.monotonic() + 20
                while len(fake.sends) < SENDS:
                    assert time.monotonic() < deadline, log.read_text()
                    await asyncio.sleep(0.05)
                await stop(proc, signal.SIGKILL)
                first = await sending
            assert all(isinstance(r, httpx.HTTPError) for r in first), first  # nobody answered

            async with serving(database_url, keys, log, submit_timeout=SUBMIT_TIMEOUT) as (
                proc,
                url,
            ):
                answers = [await retry_until_answered(client, url, n) for n in range(SENDS)]
                records = [
                    (await client.get(f"{url}/v1/messages/{a.json()['job_id']}")).json()
                    for a in answers
                ]
                await stop(proc, signal.SIGTERM)

    assert len(fake.sends) == SENDS, "a retry reached the provider again"
    for answer in answers:
        assert answer.status_code == 201, answer.text
        assert answer.headers["Idempotent-Replayed"] == "true"
        # Nothing proves the provider got it (it did, but never answered in time): the
        # replay says so, not ``sent``.
        assert answer.json()["status"] == "unknown"
        assert answer.json()["error"]["code"] == "SUBMIT_INTERRUPTED"
    assert len({a.json()["job_id"] for a in answers}) == SENDS
    assert {(r["status"], r["error"]["code"]) for r in records} == {
        ("unknown", "SUBMIT_INTERRUPTED")
    }
    # D17: each message the provider may have taken holds one unit; none was counted twice.
    [(used,)] = await sql_rows(database_url, "SELECT used FROM um_quota")
    assert used == SENDS
    queued = await sql_rows(database_url, "SELECT count(*) FROM um_messages WHERE status='queued'")
    assert queued[0][0] == 0


async def test_a_serve_killed_amid_group_commits_answered_201_only_for_stored_jobs(
    database_url: str, tmp_path: Path
) -> None:
    # Sixteen clients keep sending; the server dies while batches are being committed. A
    # caller whose batch had not committed may hear nothing, but every 201 names a job that
    # is there after the crash (no answer before its commit).
    keys = generate_key_spec("k1")
    fake = NetgsmFake()
    log = tmp_path / "serve.log"
    answered: list[str] = []

    async def keep_sending(client: httpx.AsyncClient, url: str, n: int) -> None:
        for i in range(100_000):
            try:
                response = await client.post(f"{url}/v1/messages", json=request(n + i % 50))
            except httpx.HTTPError:
                return
            if response.status_code == 201:
                answered.append(response.json()["job_id"])

    async with serve(fake.app) as provider_url:
        api_key = await set_up(database_url, keys, provider_url, fake, quota=None)
        headers = {"Authorization": f"Bearer {api_key}"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as client,
            serving(database_url, keys, log) as (proc, url),
        ):
            senders = [asyncio.ensure_future(keep_sending(client, url, n)) for n in range(16)]
            while len(answered) < 150:
                # Batches are committing from the first answers on; 150 only lets a few go
                # by first. However long a loaded machine takes (a time budget here failed
                # under load): only a dead server, or senders that all gave up, mean never.
                assert proc.poll() is None, log.read_text()
                assert not all(s.done() for s in senders), log.read_text()
                await asyncio.sleep(0.01)
            await stop(proc, signal.SIGKILL)
            await asyncio.gather(*senders)

    stored = {row[0] for row in await sql_rows(database_url, "SELECT job_id FROM um_messages")}
    assert answered
    assert set(answered) <= stored


async def test_a_serve_killed_while_its_bulk_waits_for_send_slots_sends_the_rest_once(
    database_url: str, tmp_path: Path
) -> None:
    """A bulk at 0.6 messages/s hands its first item over and waits for
    the next slot when the server is SIGKILLed. The first item may be with the provider:
    ``unknown`` (``SUBMIT_INTERRUPTED``). The seven that waited never reached one: the replay
    says ``queued`` (never ``sent``), and the restarted server's worker sends each once."""
    keys = generate_key_spec("k1")
    fake = NetgsmFake()
    fake.script(Canned(status=200, body=b'{"code":"00","jobid":"90000001"}', delay=PROVIDER_DELAY))
    log = tmp_path / "serve.log"
    items = [request(n) for n in range(SENDS)]

    def bulk(client: httpx.AsyncClient, url: str) -> Any:
        return client.post(
            f"{url}/v1/messages/bulk", json={"items": items}, headers={"Idempotency-Key": "b1"}
        )

    async with serve(fake.app) as provider_url:
        api_key = await set_up(database_url, keys, provider_url, fake, max_rate=0.6)
        headers = {"Authorization": f"Bearer {api_key}"}
        async with httpx.AsyncClient(headers=headers, timeout=60) as client:
            async with serving(database_url, keys, log) as (proc, url):
                sending = asyncio.ensure_future(bulk(client, url))
                deadline = time.monotonic() + 20
                query = "SELECT count(*) FROM um_messages WHERE phase = 'waiting'"
                while not fake.sends or (await sql_rows(database_url, query))[0][0] < SENDS - 1:
                    assert time.monotonic() < deadline, log.read_text()
                    await asyncio.sleep(0.05)
                await stop(proc, signal.SIGKILL)
                with contextlib.suppress(httpx.HTTPError):
                    await sending
            await lift_send_rate(database_url, keys)  # only so the worker's sends are quick

            async with serving(database_url, keys, log) as (proc, url):
                deadline = time.monotonic() + RETRY_DEADLINE
                while (answer := await bulk(client, url)).status_code == 409:
                    assert time.monotonic() < deadline, "the interrupted bulk was never settled"
                    await asyncio.sleep(0.2)
                results = answer.json()["results"]
                while True:
                    records = [
                        (await client.get(f"{url}/v1/messages/{r['job_id']}")).json()
                        for r in results
                    ]
                    if all(r["status"] != "queued" for r in records):
                        break
                    assert time.monotonic() < deadline, records
                    await asyncio.sleep(0.2)
                await stop(proc, signal.SIGTERM)

    assert answer.status_code == 201, answer.text
    assert answer.headers["Idempotent-Replayed"] == "true"
    first, *rest = results
    assert (first["status"], first["error"]["code"]) == ("unknown", "SUBMIT_INTERRUPTED")
    assert {r["status"] for r in rest} <= {"queued", "sent"}, rest
    assert [(r["status"], (r["error"] or {}).get("code")) for r in records] == [
        ("unknown", "SUBMIT_INTERRUPTED")
    ] + [("sent", None)] * (SENDS - 1)
    numbers = [m["no"] for call in fake.sends for m in call.json["messages"]]  # type: ignore[index]
    assert len(numbers) == len(set(numbers)) == SENDS  # each item handed over exactly once
    [(used,)] = await sql_rows(database_url, "SELECT used FROM um_quota")
    assert used == SENDS


# -- hostile input through the real serve (finding 3) ---------------------------------


async def test_text_no_database_can_keep_gets_coded_answers_from_the_real_serve(
    database_url: str, tmp_path: Path
) -> None:
    keys = generate_key_spec("k1")
    messenger = Messenger(store_from_url(database_url), vault=Vault.from_spec(keys))
    async with messenger:
        workspace = await messenger.workspaces.create("hostile")
        connection = await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME")
        key = await messenger.keys.create(workspace.id, livemode=False)
    headers = {"Authorization": f"Bearer {key.secret}", "Content-Type": "application/json"}
    dlr = f"/v1/dlr/{connection.id}/{connection.dlr_token}"
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as client,
        serving(database_url, keys, tmp_path / "serve.log", submit_timeout=SUBMIT_TIMEOUT) as (
            proc,
            url,
        ),
    ):
        nul_id = await client.get(f"{url}/v1/messages/msg_%00x")
        nul_path = await client.post(f"{url}/v1/dlr/{connection.id}/x%00y", content=b"{}")
        # A lone surrogate, as JSON escapes it: valid JSON text, not storable text.
        report = b'{"provider_message_id": "\\ud800", "status": "delivered"}'
        lone = await client.post(f"{url}{dlr}", content=report)
        nul_body = await client.post(
            f"{url}/v1/messages", content=b'{"to": "+905551234567", "body": "a\\u0000b"}'
        )
        await stop(proc, signal.SIGTERM)
    answers = [(r.status_code, r.headers.get("x-request-id") is not None) for r in
               (nul_id, nul_path, lone, nul_body)]  # fmt: skip
    assert answers == [(404, True), (404, True), (200, True), (400, True)]
    assert nul_id.json()["error"]["code"] == "MESSAGE_NOT_FOUND"
    assert lone.json()["matched"] == 0
    assert nul_body.json()["error"]["code"] == "VALIDATION_ERROR"


# -- the database goes away while the provider has the message ------------------------------------


class CuttableProxy:
    """A TCP proxy to PostgreSQL that the test can cut (every connection dropped, new ones
    refused) and restore on the same port: a database outage, seen from ``serve``."""

    def __init__(self, target_port: int) -> None:
        self._target_port = target_port
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._pipes):
            writer.close()
        self._pipes.clear()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._target_port)
        self._pipes.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


@pytest.mark.postgres
async def test_a_database_outage_after_the_provider_accepted_never_sends_twice(
    tmp_path: Path, postgres_server: str
) -> None:
    keys = generate_key_spec("k1")
    fake = NetgsmFake()
    body = json.dumps({"code": "00", "jobid": "90000001"}).encode()
    fake.script(Canned(status=200, body=body, delay=PROVIDER_DELAY))
    log = tmp_path / "serve.log"
    async with postgres_database(postgres_server) as direct_url, serve(fake.app) as provider_url:
        api_key = await set_up(direct_url, keys, provider_url, fake)
        proxy = CuttableProxy(make_url(direct_url).port or 5432)
        await proxy.start()
        proxied = make_url(direct_url).set(port=proxy.port).render_as_string(hide_password=False)
        headers = {"Authorization": f"Bearer {api_key}", "Idempotency-Key": "k0"}
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as client,
            serving(proxied, keys, log) as (proc, url),
        ):
            sending = asyncio.ensure_future(client.post(f"{url}/v1/messages", json=request(0)))
            deadline = time.monotonic() + 20
            while not fake.sends:
                assert time.monotonic() < deadline, log.read_text()
                await asyncio.sleep(0.02)
            await proxy.cut()  # the database goes while the provider holds the message
            first = await sending
            # The caller hears what the provider said, though nothing could be stored.
            assert (first.status_code, first.json()["status"]) == (201, "sent"), first.text
            await proxy.start()  # the database is back
            again = await retry_until_answered(client, url, 0)
            record = (await client.get(f"{url}/v1/messages/{again.json()['job_id']}")).json()
            await stop(proc, signal.SIGTERM)
        await proxy.cut()
    assert again.json()["job_id"] == first.json()["job_id"]
    assert again.headers["Idempotent-Replayed"] == "true"
    assert (record["status"], record["error"]["code"]) == ("unknown", "SUBMIT_INTERRUPTED")
    assert len(fake.sends) == 1, log.read_text()
