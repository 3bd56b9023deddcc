"""Provider faults end to end (14.2, 14.5): the REST app on a real socket, the real
NetGSM and İletimerkezi adapters, and their loopback fakes wrapped in fault injection.

``sms_a`` (NetGSM) misbehaves: it hangs, answers slowly, storms 5xx, throttles with 429 and
``Retry-After``, cuts its answers mid-way, or flaps. ``sms_b`` (İletimerkezi) is healthy and is
the fallback. The breaker's time runs on a ManualClock; the adapters' read time-out is short
(0.3 s), so a hanging provider costs each send that much real time until the breaker opens.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest
from _support import bearer, serving
from fakes._server import serve
from fakes.faults import Faults
from fakes.iletimerkezi import IletimerkeziFake
from fakes.netgsm import Canned, NetgsmFake

from unified_messaging import BreakerPolicy, ManualClock, Messenger, Vault
from unified_messaging._domain import Connection
from unified_messaging.asgi import create_app
from unified_messaging.providers.base import ProviderAdapter
from unified_messaging.providers.iletimerkezi import IletimerkeziAdapter
from unified_messaging.providers.netgsm import NetgsmAdapter

READ_TIMEOUT = httpx.Timeout(0.3, connect=2.0)
POLICY = BreakerPolicy.build(consecutive=3, cooldown=30)


def netgsm(connection: Connection, credentials: Mapping[str, str]) -> ProviderAdapter:
    return NetgsmAdapter(connection, credentials, timeout=READ_TIMEOUT)


def iletimerkezi(connection: Connection, credentials: Mapping[str, str]) -> ProviderAdapter:
    return IletimerkeziAdapter(connection, credentials, timeout=READ_TIMEOUT)


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    client: httpx.AsyncClient
    url: str
    key: str
    workspace_id: str
    sms_a: Faults
    netgsm: NetgsmFake
    sms_b: IletimerkeziFake
    sent: int = 0

    async def send(self, **request: Any) -> httpx.Response:
        # A new text each time: İletimerkezi refuses the same text to the same number (451).
        self.sent += 1
        body = {"to": "+905551234567", "body": f"Kodunuz {self.sent:04d}", **request}
        return await self.client.post(f"{self.url}/v1/messages", json=body,
                                      headers=bearer(self.key))  # fmt: skip

    async def record(self, job_id: str) -> dict[str, Any]:
        response = await self.client.get(f"{self.url}/v1/messages/{job_id}",
                                         headers=bearer(self.key))  # fmt: skip
        document: dict[str, Any] = response.json()
        return document

    async def breaker(self) -> str:
        health = await self.messenger.connections.health(self.workspace_id)
        return {h.provider: h.state for h in health}["sms_a"]

    @property
    def sms_a_calls(self) -> int:
        return self.sms_a.requests


def codes(record: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(a["provider"], a["error"]["code"] if a["error"] else None) for a in record["attempts"]]


@contextlib.asynccontextmanager
async def rig(
    *, retry_unavailable: bool = False, policy: BreakerPolicy = POLICY
) -> AsyncIterator[Rig]:
    clock = ManualClock()
    netgsm_fake, iletimerkezi_fake = NetgsmFake(), IletimerkeziFake()
    faults = Faults(netgsm_fake.app)
    messenger = Messenger(
        clock=clock, vault=Vault.generate(),
        live_adapters={"sms_a": netgsm, "sms_b": iletimerkezi},
    )  # fmt: skip
    async with (
        serve(faults) as a,
        serve(iletimerkezi_fake.app) as b,
        messenger,
        serving(create_app(messenger, worker=False), lifespan=False) as url,
        httpx.AsyncClient(timeout=10) as client,
    ):
        workspace = await messenger.workspaces.create("faults", recipient_limit=None)
        await messenger.workspaces.set_retry_unavailable(workspace.id, retry_unavailable)
        await messenger.connections.add(
            workspace.id, "sms_a", base_url=a, default_sender="ACME", breaker=policy,
            credentials={"usercode": netgsm_fake.usercode, "password": netgsm_fake.password},
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_b", base_url=b, default_sender="ACME",
            credentials={"api_key": iletimerkezi_fake.key, "api_hash": iletimerkezi_fake.hash},
        )  # fmt: skip
        key = await messenger.keys.create(workspace.id, livemode=True)
        try:
            yield Rig(messenger, clock, client, url, key.secret, workspace.id, faults,
                      netgsm_fake, iletimerkezi_fake)  # fmt: skip
        finally:
            faults.heal()  # release hanging requests, or the fake's server waits for them


async def test_a_hanging_provider_is_skipped_once_open_and_found_again_by_the_probe() -> None:
    async with rig() as r:
        r.sms_a.hang()
        for _ in range(3):  # each waits out the read time-out: sms_a may have taken it
            response = await r.send(fallback=["sms_b"])
            assert (response.status_code, response.json()["provider"]) == (201, "sms_a")
            hung = await r.record(response.json()["job_id"])
            assert hung["status"] == "unknown"
            assert codes(hung) == [("sms_a", "PROVIDER_OUTCOME_UNKNOWN")]
            # Which wait ran out, after how long.
            assert "after 0.3 s, once the request was sent" in hung["error"]["message"]
        assert r.sms_b.orders == []  # never a second provider for a send that may be out
        assert await r.breaker() == "open"

        for _ in range(5):
            response = await r.send(fallback=["sms_b"])
            assert (response.status_code, response.json()["provider"]) == (201, "sms_b")
        assert r.sms_a_calls == 3  # no call while open
        record = await r.record(response.json()["job_id"])
        assert codes(record) == [("sms_a", "PROVIDER_CIRCUIT_OPEN"), ("sms_b", None)]

        r.sms_a.heal()
        r.clock.advance(30)
        probe = await r.send(fallback=["sms_b"])
        assert (probe.status_code, probe.json()["provider"]) == (201, "sms_a")
        assert await r.breaker() == "closed"
        assert r.sms_a_calls == 4
        assert len(r.netgsm.sends) == 1  # the probe; the hung requests never reached it


async def test_a_5xx_storm_with_no_fallback_is_a_502_then_no_more_calls() -> None:
    async with rig() as r:
        r.sms_a.storm(503)
        answers = [await r.send() for _ in range(6)]

        assert [a.status_code for a in answers] == [502] * 6
        assert {a.json()["error"]["code"] for a in answers} == {"PROVIDER_UNAVAILABLE"}
        assert r.sms_a_calls == 3
        last = await r.record(answers[-1].json()["error"]["job_id"])
        assert last["status"] == "failed"
        assert codes(last) == [("sms_a", "PROVIDER_CIRCUIT_OPEN")]


async def test_with_retry_unavailable_an_open_chain_answers_queued() -> None:
    async with rig(retry_unavailable=True) as r:
        r.sms_a.storm(500)
        answers = [await r.send() for _ in range(4)]

        assert [a.status_code for a in answers] == [201] * 4
        assert {a.json()["status"] for a in answers} == {"queued"}
        assert r.sms_a_calls == 3


@pytest.mark.parametrize("how", ["header", "netgsm-code-80"])
async def test_throttling_pauses_the_connection_until_the_time_given(how: str) -> None:
    async with rig() as r:
        if how == "header":
            r.sms_a.throttle(retry_after=20)
            pause = 20
        else:
            r.netgsm.script(Canned(code="80"))  # NetGSM's own "rate limit exceeded" answer
            pause = 60

        first = await r.send(fallback=["sms_b"])
        assert first.json()["provider"] == "sms_b"
        assert await r.breaker() == "paused"
        second = await r.send(fallback=["sms_b"])
        assert second.json()["provider"] == "sms_b"
        assert r.sms_a_calls == 1  # the paused connection is not called
        assert codes(await r.record(second.json()["job_id"])) == [
            ("sms_a", "PROVIDER_CIRCUIT_OPEN"), ("sms_b", None),
        ]  # fmt: skip

        r.clock.advance(pause - 1)
        assert (await r.send(fallback=["sms_b"])).json()["provider"] == "sms_b"
        r.clock.advance(1)
        assert (await r.send(fallback=["sms_b"])).json()["provider"] == "sms_a"
        assert r.sms_a_calls == 2


async def test_2xx_answers_cut_mid_way_end_unknown_without_fallback_and_open_it() -> None:
    async with rig() as r:
        r.sms_a.reset()  # "200", then the connection is cut inside the body
        for _ in range(3):
            response = await r.send(fallback=["sms_b"])
            assert (response.status_code, response.json()["provider"]) == (201, "sms_a")
        record = await r.record(response.json()["job_id"])
        assert record["status"] == "unknown"
        assert codes(record) == [("sms_a", "PROVIDER_OUTCOME_UNKNOWN")]
        assert record["attempts"][0]["status"] == "unknown"
        assert "HTTP 200" in record["error"]["message"]
        assert r.sms_b.orders == []
        assert await r.breaker() == "open"
        await r.send(fallback=["sms_b"])
        assert r.sms_a_calls == 3


async def test_slow_answers_within_the_time_out_are_healthy() -> None:
    async with rig() as r:
        r.sms_a.slow(0.05)
        for _ in range(5):
            response = await r.send(fallback=["sms_b"])
            assert response.json()["provider"] == "sms_a"
        health = {h.provider: h for h in await r.messenger.connections.health(r.workspace_id)}
        assert (health["sms_a"].state, health["sms_a"].failures) == ("closed", 0)

        r.sms_a.slow(1.0)  # past the read time-out: sms_a may have taken it, no fallback
        response = await r.send(fallback=["sms_b"])
        assert response.json()["provider"] == "sms_a"
        assert (await r.record(response.json()["job_id"]))["status"] == "unknown"
        assert (await r.messenger.connections.health(r.workspace_id))[0].failures == 1


async def test_a_flapping_provider_opens_it_by_the_ratio_and_the_probe_decides() -> None:
    flappy = BreakerPolicy.build(consecutive=100, min_calls=6, failure_ratio=0.5, cooldown=30)
    async with rig(policy=flappy) as r:
        r.sms_a.flap(up=1, down=1)
        providers = [(await r.send(fallback=["sms_b"])).json()["provider"] for _ in range(6)]
        assert providers == ["sms_a", "sms_b"] * 3
        health = {h.provider: h for h in await r.messenger.connections.health(r.workspace_id)}
        assert health["sms_a"].state == "open"
        assert health["sms_a"].reason is not None
        assert health["sms_a"].reason.startswith("3 of 6 calls unavailable")

        r.clock.advance(30)  # the probe is the flap's next call: an up one
        assert (await r.send(fallback=["sms_b"])).json()["provider"] == "sms_a"
        assert await r.breaker() == "closed"
        r.clock.advance(1)
        assert (await r.send(fallback=["sms_b"])).json()["provider"] == "sms_b"  # down again
        assert r.sms_a_calls == 8
        assert timedelta(seconds=0) <= health["sms_a"].policy.window
