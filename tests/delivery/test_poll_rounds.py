"""What a report poll round asks about (22.19): the worker's polling of NetGSM
(``sms_a``) against its loopback fake, which speaks NetGSM's paging and its 10 calls a minute.

- Test-mode messages get simulated reports and are never polled; however many are open, the
  live ones of the same connection are asked about.
- A round spends NetGSM's 10 calls a minute on reports: no call asks for the empty page after
  a full one, so 1,000 messages are answered in one round.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from fakes._server import serve
from fakes.netgsm import NetgsmFake

from unified_messaging import ManualClock, Messenger, Principal, Vault
from unified_messaging._domain import Workspace

MINUTE = timedelta(minutes=1)
NO_REPORT_EVER = "+905550000008"  # the simulator's magic number: no DLR (DESIGN §6)


async def _setup(messenger: Messenger, fake: NetgsmFake, base: str, **options: object) -> Workspace:
    workspace = await messenger.workspaces.create("Acme", recipient_limit=None)
    await messenger.connections.add(
        workspace.id, "sms_a", default_sender="ACME", base_url=base,
        credentials={"usercode": fake.usercode, "password": fake.password}, **options,  # type: ignore[arg-type]
    )  # fmt: skip
    return workspace


async def _bulk(messenger: Messenger, auth: Principal, numbers: Sequence[str]) -> list[str]:
    jobs: list[str] = []
    for start in range(0, len(numbers), 200):
        items = [{"to": n, "body": "Kodunuz 1234"} for n in numbers[start : start + 200]]
        response = await messenger.send_bulk(auth, {"items": items})
        jobs += [r.job_id for r in response.results]
    return jobs


async def _statuses(messenger: Messenger, auth: Principal, jobs: Sequence[str]) -> set[str]:
    return {(await messenger.get_message(auth, job)).status for job in jobs}


async def test_open_test_mode_messages_never_keep_live_ones_from_being_polled() -> None:
    clock = ManualClock()
    fake = NetgsmFake(monotonic=lambda: clock.now().timestamp())
    messenger = Messenger(clock=clock, vault=Vault.generate())
    async with serve(fake.app) as base, messenger:
        workspace = await _setup(messenger, fake, base)
        test_auth = await messenger.principal(workspace.id, livemode=False)
        live_auth = await messenger.principal(workspace.id, livemode=True)
        # 600 test-mode messages that never get a report: open refs of the same connection,
        # older than the live ones.
        await _bulk(messenger, test_auth, [NO_REPORT_EVER] * 600)
        live = [(await messenger.send(live_auth, {"to": f"+90532111000{n}", "body": "x"})).job_id
                for n in range(3)]  # fmt: skip
        for row in fake.rows:
            row.status = 1  # NetGSM: delivered

        clock.advance(MINUTE)
        await messenger.worker().run_until_idle()

        assert await _statuses(messenger, live_auth, live) == {"delivered"}
        assert len(fake.report_calls) == 1  # the three live messages, asked in one call


async def test_a_round_spends_netgsms_ten_calls_on_reports() -> None:
    clock = ManualClock()
    fake = NetgsmFake(monotonic=lambda: clock.now().timestamp())
    messenger = Messenger(clock=clock, vault=Vault.generate())
    async with serve(fake.app) as base, messenger:
        workspace = await _setup(messenger, fake, base, dlr_timeout=timedelta(seconds=90))
        auth = await messenger.principal(workspace.id, livemode=True)
        # 1,000 messages: ten NetGSM jobs of exactly 100 rows, all delivered.
        jobs = await _bulk(messenger, auth, [f"+90532{n:07d}" for n in range(1000)])
        assert len({row.jobid for row in fake.rows}) == 10
        for row in fake.rows:
            row.status = 1

        clock.advance(MINUTE)
        await messenger.worker().run_until_idle()
        calls = len(fake.report_calls)
        clock.advance(MINUTE)  # past the 90 s DLR time-out
        await messenger.worker().run_until_idle()

        assert calls == 10
        assert [c.json["pagenumber"] for c in fake.report_calls[:10]] == [0] * 10  # type: ignore[index]
        assert await _statuses(messenger, auth, jobs) == {"delivered"}  # none ended unknown
