"""Scheduled sends, cancel and quiet hours end to end, on SQLite and PostgreSQL:
the REST app on a real socket, the real NetGSM adapter and its loopback fake, a webhook
receiver, and the worker run step by step on a ManualClock (the lifecycle is the subject,
so no test waits for real time; the crash tests run ``serve`` and the worker for real).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from _sql_apps import BACKENDS, sql_store
from _support import LOOPBACK, Receiver, bearer, running_servers, start_receiver
from fakes._server import serve
from fakes.netgsm import NetgsmFake

from unified_messaging import ManualClock, Messenger, QuietHours, Vault
from unified_messaging.asgi import create_app
from unified_messaging.providers.netgsm import NetgsmAdapter

TO = "+905551234567"
NETGSM_DELIVERED = 1


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    client: httpx.AsyncClient
    key: str
    workspace_id: str
    netgsm: NetgsmFake
    receiver: Receiver

    async def send(self, **request: Any) -> httpx.Response:
        body = {"to": TO, "body": "Kampanya: %20 indirim", **request}
        return await self.client.post("/v1/messages", json=body, headers=bearer(self.key))

    async def bulk(self, items: list[dict[str, Any]], **request: Any) -> httpx.Response:
        body = {"items": items, **request}
        return await self.client.post("/v1/messages/bulk", json=body, headers=bearer(self.key))

    async def cancel(self, job_id: str) -> httpx.Response:
        return await self.client.post(f"/v1/messages/{job_id}/cancel", headers=bearer(self.key))

    async def record(self, job_id: str) -> dict[str, Any]:
        response = await self.client.get(f"/v1/messages/{job_id}", headers=bearer(self.key))
        assert response.status_code == 200, response.text
        document: dict[str, Any] = response.json()
        return document

    async def work(self, *, until: datetime, step: float = 0.5) -> None:
        """Run the worker, moving the clock in ``step`` seconds to ``until``."""
        worker = self.messenger.worker(batch=5)
        while True:
            await worker.run_until_idle()
            left = (until - self.clock.now()).total_seconds()
            if left <= 0:
                return
            self.clock.advance(min(step, left))

    async def suppress(self, recipient: str) -> None:
        body = {"channel": "sms", "recipient": recipient, "reason": "Asked to stop"}
        response = await self.client.post("/v1/suppressions", json=body, headers=bearer(self.key))
        assert response.status_code in (200, 201), response.text

    async def quota_used(self) -> int:
        return (await self.messenger.workspaces.quota_usage(self.workspace_id)).used

    def events(self, job_id: str) -> list[str]:
        return self.receiver.accepted_types(job_id)


@contextlib.asynccontextmanager
async def rig(
    backend: str, directory: Path, *, monthly_quota: int | None = None
) -> AsyncIterator[Rig]:
    # Real time, to the second: the webhooks' timestamps stay near the receiver's clock.
    clock = ManualClock(datetime.now(UTC).replace(microsecond=0))
    netgsm = NetgsmFake()
    async with sql_store(backend, directory) as store:
        messenger = Messenger(
            store, clock=clock, vault=Vault.generate(), live_adapters={"sms_a": NetgsmAdapter},
            webhook_policy=LOOPBACK,
        )  # fmt: skip
        async with (
            serve(netgsm.app) as netgsm_url,
            messenger,
            running_servers() as servers,
            httpx.AsyncClient(timeout=10) as client,
        ):
            receiver = await start_receiver(servers)
            client.base_url = httpx.URL(await servers.start(create_app(messenger, worker=False)))
            workspace = await messenger.workspaces.create(
                "scheduled", recipient_limit=None, monthly_quota=monthly_quota
            )
            await messenger.connections.add(
                workspace.id, "sms_a", base_url=netgsm_url, default_sender="ACME",
                iys_mode="commercial_individual",
                credentials={"usercode": netgsm.usercode, "password": netgsm.password},
            )  # fmt: skip
            await messenger.webhooks.create(workspace.id, receiver.url)
            key = await messenger.keys.create(workspace.id, livemode=True)
            yield Rig(messenger, clock, client, key.secret, workspace.id, netgsm, receiver)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_send_two_seconds_ahead_is_queued_then_sent_then_delivered(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        start = r.clock.now()
        due = start + timedelta(seconds=2)

        answer = await r.send(send_at=due.isoformat())

        assert answer.status_code == 201, answer.text
        assert answer.json()["status"] == "queued"
        assert datetime.fromisoformat(answer.json()["send_at"]) == due
        job = answer.json()["job_id"]
        assert (await r.quota_used(), r.netgsm.sends) == (0, [])  # D17: charged at hand-over

        await r.work(until=start + timedelta(seconds=1.5))
        record = await r.record(job)
        assert (record["status"], record["attempts"], r.netgsm.sends) == ("queued", [], [])
        assert datetime.fromisoformat(record["send_at"]) == due

        await r.work(until=due)
        record = await r.record(job)
        assert record["status"] == "sent"
        assert len(r.netgsm.sends) == 1 and await r.quota_used() == 1
        jobid = record["attempts"][0]["provider_message_id"].split(":")[0]  # NetGSM's jobid

        r.netgsm.set_status(jobid, TO, NETGSM_DELIVERED)
        await r.work(until=due + timedelta(minutes=2), step=10)
        assert (await r.record(job))["status"] == "delivered"
        assert len(r.netgsm.sends) == 1
        await r.work(until=r.clock.now())  # the webhooks
        assert r.events(job) == ["message.sent", "message.delivered"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_cancel_before_the_time_wins_and_one_after_it_is_409(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        start = r.clock.now()
        first = (await r.send(send_at=iso(start + timedelta(seconds=2)))).json()["job_id"]
        second = (await r.send(send_at=iso(start + timedelta(seconds=2)))).json()["job_id"]

        canceled = await r.cancel(first)

        assert canceled.status_code == 200, canceled.text
        assert canceled.json()["status"] == "failed"
        assert canceled.json()["error"]["code"] == "CANCELED"
        again = await r.cancel(first)  # a retried cancel answers the same
        assert (again.status_code, again.json()["error"]["code"]) == (200, "CANCELED")

        await r.work(until=start + timedelta(seconds=3))
        assert (await r.record(first))["status"] == "failed"
        assert (await r.record(second))["status"] == "sent"
        assert len(r.netgsm.sends) == 1  # only the second went out
        assert await r.quota_used() == 1  # the canceled one never took a unit

        late = await r.cancel(second)
        assert late.status_code == 409
        assert late.json()["error"]["code"] == "MESSAGE_NOT_CANCELABLE"
        assert r.events(first) == ["message.failed"]
        failed = r.receiver.for_job(first)[0].event
        assert failed["data"]["error"]["code"] == "CANCELED"

        missing = await r.cancel("msg_nothing_here")
        assert (missing.status_code, missing.json()["error"]["code"]) == (404, "MESSAGE_NOT_FOUND")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_send_inside_quiet_hours_waits_and_one_that_opts_out_does_not(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        now = r.clock.now().astimezone(UTC)
        # A window from a minute ago to ten minutes ahead, in UTC (no DST to think about).
        begin = (now - timedelta(minutes=1)).time().replace(second=0, microsecond=0)
        end = (now + timedelta(minutes=10)).time().replace(second=0, microsecond=0)
        quiet = QuietHours(begin, end, zone="UTC", scope="commercial")
        await r.messenger.workspaces.set_quiet_hours(r.workspace_id, quiet)
        opens = datetime.combine(now.date(), end, tzinfo=UTC)
        if opens < now:
            opens += timedelta(days=1)

        waits = await r.send()
        otp = await r.send(body="Kodunuz 481516", ignore_quiet_hours=True)

        assert (waits.status_code, waits.json()["status"]) == (201, "queued")
        assert datetime.fromisoformat(waits.json()["send_at"]) == opens
        assert (otp.status_code, otp.json()["status"]) == (201, "sent")
        assert "send_at" not in otp.json()
        assert len(r.netgsm.sends) == 1

        await r.work(until=opens - timedelta(seconds=1), step=30)
        assert (await r.record(waits.json()["job_id"]))["status"] == "queued"
        await r.work(until=opens + timedelta(seconds=1), step=1)
        assert (await r.record(waits.json()["job_id"]))["status"] == "sent"
        assert len(r.netgsm.sends) == 2


@pytest.mark.parametrize("backend", BACKENDS)
async def test_quiet_hours_for_commercial_sends_let_informational_ones_through(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        info = await r.messenger.connections.add(
            r.workspace_id, "sms_b", default_sender="ACME",
            credentials={"api_key": "k", "api_hash": "h"},
        )  # fmt: skip
        assert info.iys_mode == "informational"
        test_key = await r.messenger.keys.create(r.workspace_id, livemode=False)
        now = r.clock.now().astimezone(UTC)
        begin = (now - timedelta(hours=1)).time().replace(minute=0, second=0, microsecond=0)
        quiet = QuietHours(begin, time((begin.hour + 3) % 24), zone="UTC")
        await r.messenger.workspaces.set_quiet_hours(r.workspace_id, quiet)

        commercial = await r.client.post("/v1/messages", headers=bearer(test_key.secret),
                                         json={"to": TO, "body": "Kampanya"})  # fmt: skip
        informational = await r.client.post(
            "/v1/messages", headers=bearer(test_key.secret),
            json={"to": TO, "body": "Kargonuz yolda", "provider": "sms_b"},
        )  # fmt: skip

        assert commercial.json()["status"] == "queued"
        assert informational.json()["status"] == "sent"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_quota_is_taken_at_hand_over_and_a_send_past_it_then_fails(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path, monthly_quota=1) as r:
        start = r.clock.now()
        due = iso(start + timedelta(seconds=5))
        jobs = [(await r.send(send_at=due)).json() for _ in range(2)]
        assert [j["status"] for j in jobs] == ["queued", "queued"]  # nothing charged yet

        await r.work(until=start + timedelta(seconds=6))

        records = [await r.record(j["job_id"]) for j in jobs]
        assert sorted(rec["status"] for rec in records) == ["failed", "sent"]
        failed = next(rec for rec in records if rec["status"] == "failed")
        assert failed["error"]["code"] == "QUOTA_EXCEEDED"
        assert failed["attempts"] == []
        assert await r.quota_used() == 1 and len(r.netgsm.sends) == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_bulk_waits_as_a_whole_or_per_item(backend: str, tmp_path: Path) -> None:
    async with rig(backend, tmp_path) as r:
        start = r.clock.now()
        later, latest = start + timedelta(seconds=5), start + timedelta(seconds=30)
        items = [
            {"to": "+905551110001", "body": "a"},
            {"to": "+905551110002", "body": "b", "send_at": iso(latest)},
            {"to": "+905551110003", "body": "c", "send_at": iso(start - timedelta(hours=1))},
        ]

        answer = await r.bulk(items, send_at=iso(later))

        assert answer.status_code == 201, answer.text
        results = answer.json()["results"]
        assert [x["status"] for x in results] == ["queued", "queued", "failed"]
        assert [datetime.fromisoformat(x["send_at"]) for x in results[:2]] == [later, latest]
        assert results[2]["error"]["code"] == "SEND_AT_OUT_OF_RANGE"
        assert (answer.json()["sent"], answer.json()["failed"]) == (2, 1)

        await r.work(until=start + timedelta(seconds=6))
        assert [(await r.record(x["job_id"]))["status"] for x in results] == [
            "sent", "queued", "failed",
        ]  # fmt: skip
        await r.work(until=latest, step=5)
        assert (await r.record(results[1]["job_id"]))["status"] == "sent"
        assert len(r.netgsm.sends) == 2


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_recipient_suppressed_while_their_message_waits_is_not_handed_over(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        start = r.clock.now()
        due = iso(start + timedelta(seconds=2))
        other = "+905551234568"
        waits = (await r.send(send_at=due)).json()["job_id"]
        goes = (await r.send(to=other, send_at=due)).json()["job_id"]

        await r.suppress("0555 123 45 67")  # TO, typed another way: one entry all the same

        await r.work(until=start + timedelta(seconds=3))
        record = await r.record(waits)
        assert (record["status"], record["error"]["code"]) == ("failed", "RECIPIENT_SUPPRESSED")
        assert record["attempts"] == []
        assert (await r.record(goes))["status"] == "sent"  # the control: another recipient
        assert len(r.netgsm.sends) == 1
        assert [row.number[-10:] for row in r.netgsm.rows] == [other[-10:]]
        assert await r.quota_used() == 1  # the suppressed one took no unit
        assert r.events(waits) == ["message.failed"]
        failed = r.receiver.for_job(waits)[0].event
        assert failed["data"]["error"]["code"] == "RECIPIENT_SUPPRESSED"
