"""İYS registration survives a process death at every point (D33): a consent recorded is
registered once, whatever dies between recording it and registering it, and between İYS
taking it and our storing İYS's answer.

The in-process tests die at exact points (``Crash`` right after, or right before, one store
call); the SIGKILL test kills the real worker process while İYS holds its answers, so the
answers never arrive. The fake İYS counts every consent it is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from _crash_support import Crash, CrashingStore, WorkerProcess, sql_rows, worker_environment
from fakes.iys import FakeIys, serve

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.iys import IysSettings
from unified_messaging.store.sql import SqlStore, store_from_url
from unified_messaging.vault._core import generate_key_spec

AFTER_LEASE = 180  # the default lease is 2 minutes
SETTLE_DEADLINE = 40.0


class CrashingBefore(CrashingStore):
    """Dies right before the armed call: nothing of it is done."""

    def __getattr__(self, name: str) -> object:
        attr = getattr(self._inner, name)  # type: ignore[attr-defined]
        if name != self._method or not callable(attr):  # type: ignore[attr-defined]
            return attr

        async def call(*args: object, **kwargs: object) -> object:
            self._method = ""  # type: ignore[attr-defined]
            raise Crash(name)

        return call


@contextlib.asynccontextmanager
async def rig(
    store: object, fake: FakeIys
) -> AsyncIterator[tuple[Messenger, ManualClock, str, str]]:
    clock = ManualClock()
    async with serve(fake.app()) as url, httpx.AsyncClient(timeout=5) as client:
        messenger = Messenger(
            store,  # type: ignore[arg-type]
            clock=clock,
            vault=Vault.generate(),
            iys=IysSettings(client=client),
        )
        async with messenger:
            workspace = await messenger.workspaces.create("crash")
            await messenger.iys.connect(workspace.id, {
                "iys_code": fake.iys_code, "brand_code": fake.brand_code,
                "username": fake.username, "password": fake.password, "base_url": url,
            })  # fmt: skip
            yield messenger, clock, workspace.id, url


async def record(messenger: Messenger, workspace_id: str, to: str) -> str:
    principal = await messenger.principal(workspace_id, livemode=True)
    body = {"recipient": to, "status": "ONAY", "source": "HS_WEB"}
    return (await messenger.consents.create(principal, body)).id


async def state(messenger: Messenger, workspace_id: str, consent_id: str) -> str:
    principal = await messenger.principal(workspace_id, livemode=True)
    return (await messenger.consents.get(principal, consent_id)).iys_state


async def die_in_registration(messenger: Messenger) -> None:
    worker = messenger.worker(batch=1)
    with pytest.raises(Crash):  # noqa: PT012 - the loop ends in the crash
        for _ in range(10):
            await worker.run_once()


async def recover(messenger: Messenger, clock: ManualClock) -> None:
    clock.advance(AFTER_LEASE)
    await messenger.worker().run_until_idle()


async def test_a_death_while_recording_records_nothing_and_a_retry_registers_once(
    tmp_path: Path,
) -> None:
    fake = FakeIys()
    store = CrashingStore(SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'iys.db'}"))
    async with rig(store, fake) as (messenger, clock, workspace_id, _):
        store.arm("record_consent")  # recorded in the transaction, which then never commits
        with pytest.raises(Crash):
            await record(messenger, workspace_id, "+905321000001")
        principal = await messenger.principal(workspace_id, livemode=True)
        assert (await messenger.consents.list(principal)).data == []

        consent_id = await record(messenger, workspace_id, "+905321000001")  # the retry
        await recover(messenger, clock)

        assert await state(messenger, workspace_id, consent_id) == "registered"
        assert fake.posts_of("+905321000001") == 1


async def test_a_death_after_counting_the_attempt_sends_it_once(tmp_path: Path) -> None:
    fake = FakeIys()
    store = CrashingStore(SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'iys.db'}"))
    async with rig(store, fake) as (messenger, clock, workspace_id, _):
        consent_id = await record(messenger, workspace_id, "+905321000001")
        store.arm("begin_iys_attempts")
        await die_in_registration(messenger)
        assert fake.posts_of("+905321000001") == 0

        await recover(messenger, clock)

        assert await state(messenger, workspace_id, consent_id) == "registered"
        assert fake.posts_of("+905321000001") == 1
        assert fake.status_lookups == 1  # in doubt: İYS was asked first, and held nothing


async def test_a_death_after_iys_took_it_never_sends_it_again(tmp_path: Path) -> None:
    fake = FakeIys()
    store = CrashingBefore(SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'iys.db'}"))
    async with rig(store, fake) as (messenger, clock, workspace_id, _):
        consent_id = await record(messenger, workspace_id, "+905321000001")
        store.arm("settle_iys_registration")  # İYS answered; the answer is never stored
        await die_in_registration(messenger)
        assert fake.posts_of("+905321000001") == 1

        await recover(messenger, clock)

        assert await state(messenger, workspace_id, consent_id) == "registered"
        assert fake.posts_of("+905321000001") == 1


@pytest.mark.parametrize("processed", [True, False], ids=["iys_done", "iys_never"])
async def test_a_death_before_storing_a_bulk_request_id_sends_nothing_twice(
    tmp_path: Path, processed: bool
) -> None:
    """İYS took the bulk request; the process died before it stored İYS's request id. Each
    change is looked up until İYS shows it; one İYS never shows within the hour is sent on
    its own (İYS lost it: it reaches İYS once)."""
    fake = FakeIys()
    store = CrashingBefore(SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'iys.db'}"))
    async with rig(store, fake) as (messenger, clock, workspace_id, _):
        ids = [await record(messenger, workspace_id, f"+9053210000{n:02d}") for n in range(12)]
        store.arm("set_iys_request")
        with pytest.raises(Crash):
            await messenger.worker(batch=50).run_once()
        assert len(fake.bulk_requests) == 1

        await recover(messenger, clock)  # İYS shows none of them yet: each waits
        assert {await state(messenger, workspace_id, i) for i in ids} == {"pending"}
        if processed:
            await fake.process_bulks()  # İYS works through the request in its own time
        for _ in range(7):
            clock.advance(600)
            await messenger.worker().run_until_idle()

        assert {await state(messenger, workspace_id, i) for i in ids} == {"registered"}
        assert set(fake.consent_posts.values()) == {1 if processed else 2}
        if not processed:  # the bulk, lost, and one post each an hour later
            assert len(fake.changes) == 12


# -- the real worker, SIGKILLed -----------------------------------------------------------------


async def registered_count(url: str) -> int:
    rows = await sql_rows(url, "SELECT count(*) FROM um_consents WHERE iys_state = 'registered'")
    count = rows[0][0]
    assert isinstance(count, int)
    return count


async def test_a_killed_worker_registers_every_consent_once(
    database_url: str, tmp_path: Path
) -> None:
    keys = generate_key_spec("k1")
    fake = FakeIys()
    fake.hold_consents = asyncio.Event()  # İYS takes each consent, and does not answer yet
    consents = 6
    async with serve(fake.app()) as url, httpx.AsyncClient(timeout=5) as client:
        # The process that records the consents stops before any is registered.
        recorder = Messenger(
            store_from_url(database_url), vault=Vault.from_spec(keys),
            iys=IysSettings(client=client),
        )  # fmt: skip
        async with recorder:
            workspace = await recorder.workspaces.create("crash")
            await recorder.iys.connect(workspace.id, {
                "iys_code": fake.iys_code, "brand_code": fake.brand_code,
                "username": fake.username, "password": fake.password, "base_url": url,
            })  # fmt: skip
            for n in range(consents):
                await record(recorder, workspace.id, f"+90532100000{n}")

        args = ("--database-url", database_url, "--lease", "2")
        env = worker_environment(keys)
        runs = [WorkerProcess(args, env, tmp_path / "worker.log") for _ in range(2)]
        try:
            runs[0].start()
            await asyncio.wait_for(fake.consent_arrived.wait(), 30)
            await asyncio.sleep(0.3)  # let the others in flight arrive too
            assert runs[0].kill() == -9  # İYS took them; their answers are never read
            in_doubt = sum(fake.consent_posts.values())
            fake.hold_consents.set()
            runs[1].start()
            deadline = time.monotonic() + SETTLE_DEADLINE
            while await registered_count(database_url) < consents:
                assert runs[1].running, runs[1].output()
                if time.monotonic() > deadline:
                    pytest.fail(f"not registered in time:\n{runs[1].output()}")
                await asyncio.sleep(0.2)
            assert runs[1].terminate() == 0, runs[1].output()
        finally:
            for run in runs:
                if run.running:
                    run.kill()

    assert in_doubt >= 1
    assert sum(fake.consent_posts.values()) == consents
    assert set(fake.consent_posts.values()) == {1}
    assert fake.token_requests == ["password"]  # connect's token served the workers too
