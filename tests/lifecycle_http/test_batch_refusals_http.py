"""A batch refused for one message fails that message only, end to end: the REST
app on a real socket, the real NetGSM, İletimerkezi and Verimor adapters, and their loopback
fakes, which refuse a whole request for one bad message the way the real APIs do.

A text over a provider's part limit fails before any call (422 for a single send). A refusal
that names no culprit is split: the refused messages go again in halves, through the same
send-rate pacing (D27: Verimor's 4 calls a second), until it falls on the guilty ones alone.
The pacing's waits move a ManualClock, so no test waits in real time; the Verimor fake is
stamped with that clock at each call.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

import httpx
import pytest
from _support import bearer, serving
from fakes._server import serve
from fakes.iletimerkezi import IletimerkeziFake
from fakes.netgsm import NetgsmFake
from fakes.verimor import FakeVerimor

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.providers.iletimerkezi import IletimerkeziAdapter
from unified_messaging.providers.netgsm import NetgsmAdapter
from unified_messaging.providers.verimor import VerimorAdapter

TO = "+90532000{:04d}"
#: 1,200 GSM characters: 8 parts, one over Verimor's and İletimerkezi's 7.
LONG = "a" * 1200


class Stamped:
    """A fake's ASGI app, stamping each send call with the test's clock as it arrives."""

    def __init__(self, app: Any, clock: ManualClock) -> None:
        self.app, self.clock = app, clock
        self.arrivals: list[datetime] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v2/send"):
            self.arrivals.append(self.clock.now())
        await self.app(scope, receive, send)


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    client: httpx.AsyncClient
    url: str
    key: str
    verimor: FakeVerimor
    iletimerkezi: IletimerkeziFake
    netgsm: NetgsmFake
    stamps: Stamped
    waits: list[float] = field(default_factory=list)

    async def send(self, provider: str, to: str, body: str) -> httpx.Response:
        body_ = {"provider": provider, "to": to, "body": body}
        return await self.client.post(f"{self.url}/v1/messages", headers=bearer(self.key),
                                      json=body_)  # fmt: skip

    async def bulk(self, provider: str, texts: list[str]) -> dict[str, Any]:
        items = [{"to": TO.format(n), "body": text} for n, text in enumerate(texts)]
        answer = await self.client.post(f"{self.url}/v1/messages/bulk", headers=bearer(self.key),
                                        json={"provider": provider, "items": items})  # fmt: skip
        assert answer.status_code == 201, answer.text
        document: dict[str, Any] = answer.json()
        return document

    async def record(self, job_id: str) -> dict[str, Any]:
        answer = await self.client.get(f"{self.url}/v1/messages/{job_id}",
                                       headers=bearer(self.key))  # fmt: skip
        document: dict[str, Any] = answer.json()
        return document

    async def work(self, *, until: datetime) -> None:
        """Run the worker, one item at a time, moving the clock in 0.1 s steps to ``until``."""
        worker = self.messenger.worker(batch=1)
        while True:
            await worker.run_until_idle()
            if self.clock.now() >= until:
                return
            self.clock.advance(0.1)


def outcomes(bulk: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(r["status"], r["error"]["code"] if r.get("error") else None) for r in bulk["results"]]


@contextlib.asynccontextmanager
async def rig(*, verimor_calls: float | None = None) -> AsyncIterator[Rig]:
    clock = ManualClock()
    waits: list[float] = []

    async def sleep(seconds: float) -> None:  # a slot's wait: the clock moves, no real time
        waits.append(seconds)
        clock.advance(seconds)

    verimor, iletimerkezi, netgsm = FakeVerimor(), IletimerkeziFake(), NetgsmFake()
    stamps = Stamped(verimor.app, clock)
    messenger = Messenger(
        clock=clock, vault=Vault.generate(), pace_sleep=sleep,
        live_adapters={"sms_a": NetgsmAdapter, "sms_b": IletimerkeziAdapter,
                       "sms_c": VerimorAdapter},
    )  # fmt: skip
    async with (
        serve(netgsm.app) as a,
        serve(iletimerkezi.app) as b,
        serve(stamps) as c,
        messenger,
        serving(create_app(messenger, worker=False), lifespan=False) as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        workspace = await messenger.workspaces.create("batches", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, "sms_a", base_url=a, default_sender="ACME",
            credentials={"usercode": netgsm.usercode, "password": netgsm.password},
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_b", base_url=b, default_sender="ACME",
            credentials={"api_key": iletimerkezi.key, "api_hash": iletimerkezi.hash},
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_c", base_url=c, default_sender="UMTEST",
            credentials={"username": verimor.username, "password": verimor.password},
            **({"max_calls": verimor_calls} if verimor_calls else {}),  # type: ignore[arg-type]
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        yield Rig(messenger, clock, client, url, key.secret, verimor, iletimerkezi, netgsm, stamps,
                  waits)  # fmt: skip


# --- a text over the provider's part limit ------------------------------------------------------


async def test_a_bulk_with_one_text_over_seven_parts_fails_only_that_item() -> None:
    async with rig() as r:
        bulk = await r.bulk("sms_c", ["Bir", "İki", LONG, "Dört"])

        assert outcomes(bulk) == [("sent", None)] * 2 + [("failed", "BODY_TOO_LONG")] + [
            ("sent", None)
        ]
        assert bulk["sent"] == 3
        # Verimor never saw the long text: nothing it could refuse the others for.
        assert all(LONG not in call.body.decode() for call in r.verimor.sends())
        assert sum(len(call.json["messages"]) for call in r.verimor.sends()) == 3


@pytest.mark.parametrize("provider", ["sms_c", "sms_b"])
async def test_a_single_send_over_seven_parts_is_422_and_kept_failed(provider: str) -> None:
    async with rig() as r:
        answer = await r.send(provider, TO.format(1), LONG)

        assert answer.status_code == 422
        error = answer.json()["error"]
        assert error["code"] == "BODY_TOO_LONG"
        assert "8 SMS parts" in error["message"]
        record = await r.record(error["job_id"])
        assert (record["status"], record["error"]["code"]) == ("failed", "BODY_TOO_LONG")
        assert r.verimor.sends() == [] and r.iletimerkezi.orders == []  # no call


# --- refusals that name no culprit --------------------------------------------------------------


async def test_a_verimor_duplicate_in_a_bulk_fails_only_the_duplicate() -> None:
    async with rig() as r:
        first = await r.send("sms_c", TO.format(5), "Kod 5")
        assert first.status_code == 201
        r.stamps.arrivals.clear()

        bulk = await r.bulk("sms_c", [f"Kod {n}" for n in range(8)])  # item 5: sent before

        assert (
            outcomes(bulk)
            == [("sent", None)] * 5 + [("failed", "DUPLICATE_MESSAGE")] + [("sent", None)] * 2
        )
        # One campaign of 8, refused; then halves: 4 + 4, 2 + 2, 1 + 1 (2 log2 8 more calls).
        sizes = [len(call.json["messages"]) for call in r.verimor.sends()[1:]]
        assert sorted(sizes) == [1, 1, 2, 2, 4, 4, 8]
        # Each extra call kept to Verimor's 240 calls a minute (D27): 0.25 s apart at least.
        gaps = [(b - a).total_seconds() for a, b in pairwise(r.stamps.arrivals)]
        assert len(gaps) == 6 and min(gaps) >= 0.25 - 1e-6


async def test_the_halves_share_the_sends_bound_and_what_misses_it_is_queued() -> None:
    async with rig(verimor_calls=1) as r:  # one call a second: the halves must wait
        assert (await r.send("sms_c", TO.format(5), "Kod 5")).status_code == 201
        start = r.clock.now()

        bulk = await r.bulk("sms_c", [f"Kod {n}" for n in range(8)])  # item 5: sent before

        # The campaign at 1 s, refused; its first half at 2 s; the second would be at 3 s,
        # past the 2 s every send keeps to (D27), so it waits for the worker.
        assert [status for status, _ in outcomes(bulk)] == ["sent"] * 4 + ["queued"] * 4
        assert sum(r.waits) == pytest.approx(2.0)
        await r.work(until=start + timedelta(seconds=10))
        records = [await r.record(item["job_id"]) for item in bulk["results"]]
        assert [(x["status"], x["error"] and x["error"]["code"]) for x in records] == (
            [("sent", None)] * 5 + [("failed", "DUPLICATE_MESSAGE")] + [("sent", None)] * 2
        )
        gaps = [(b - a).total_seconds() for a, b in pairwise(r.stamps.arrivals)]
        assert min(gaps) >= 1 - 1e-6  # the worker's sends keep to the rate too


async def test_a_forbidden_word_fails_only_its_message() -> None:
    async with rig() as r:
        r.verimor.forbidden_words = {"kumar"}

        bulk = await r.bulk("sms_c", ["Merhaba", "kumar sitesi", "Randevu", "Kargo"])

        assert outcomes(bulk) == [("sent", None), ("failed", "BODY_REJECTED"), ("sent", None),
                                  ("sent", None)]  # fmt: skip


async def test_a_verimor_bad_number_fails_only_that_number() -> None:
    async with rig() as r:
        r.verimor.bad_numbers = {TO.format(2)[1:]}

        bulk = await r.bulk("sms_c", ["A", "B", "C", "D"])

        assert outcomes(bulk) == [("sent", None)] * 2 + [("failed", "INVALID_RECIPIENT")] + [
            ("sent", None)
        ]


async def test_an_iletimerkezi_repeat_within_ten_minutes_fails_only_the_repeat() -> None:
    async with rig() as r:
        assert (await r.send("sms_b", TO.format(1), "Kampanya")).status_code == 201

        bulk = await r.bulk("sms_b", ["Hoş geldiniz", "Kampanya", "Randevu", "Kargo"])

        assert outcomes(bulk) == [("sent", None), ("failed", "DUPLICATE_MESSAGE"), ("sent", None),
                                  ("sent", None)]  # fmt: skip


async def test_a_text_the_b186_code_pushes_over_seven_sms_fails_alone() -> None:
    # 1,071 GSM characters are 7 parts; İletimerkezi's appended " B186" makes them 8 (453).
    async with rig() as r:
        bulk = await r.bulk("sms_b", ["Bir", "İki", "a" * 1071, "Dört"])

        assert outcomes(bulk) == [("sent", None)] * 2 + [("failed", "BODY_TOO_LONG")] + [
            ("sent", None)
        ]
        single = await r.send("sms_b", TO.format(9), "b" * 1071)
        assert (single.status_code, single.json()["error"]["code"]) == (422, "BODY_TOO_LONG")


async def test_a_netgsm_text_problem_fails_only_that_text() -> None:
    async with rig() as r:
        r.netgsm.refused_words = {"yasak"}

        bulk = await r.bulk("sms_a", ["Bir", "Iki", "Uc", "yasak soz"])  # one NetGSM request

        assert outcomes(bulk) == [("sent", None)] * 3 + [("failed", "BODY_REJECTED")]
        assert len(r.netgsm.sends) == 5  # 4 refused, then 2 + 2, then 1 + 1
