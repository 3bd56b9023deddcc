"""Circuit breakers through the façade (D26): live sends skip an open connection with no call,
an all-open chain answers as D7 (502, or ``queued`` and retried by the worker until a probe
finds the provider again), test keys never pass through breakers, thresholds are set and
refused per connection, and ``connection_health`` (and its sync twin) shows the state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

import pytest

from unified_messaging import (
    BreakerPolicy,
    ManualClock,
    Messenger,
    Principal,
    ProviderUnavailable,
    RequestInvalid,
    SyncMessenger,
)
from unified_messaging._domain import Connection
from unified_messaging.providers.base import SubmitOutcome, SubmitRequest
from unified_messaging.providers.simulator import Simulator, SimulatorSettings

TO = "+905551234567"


class Switchable(Simulator):
    """A live adapter standing in for a provider that is up or down, counting its calls."""

    def __init__(self, connection: Connection, clock: ManualClock) -> None:
        super().__init__(connection.provider, clock=clock, settings=SimulatorSettings())
        self.up = True
        self.calls = 0

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        self.calls += 1
        if not self.up:
            return SubmitOutcome.unavailable("The provider did not answer in time.")
        return await super().submit(request)

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        return [await self.submit(r) for r in requests]


class World:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.adapters: dict[str, Switchable] = {}

        def build(connection: Connection, credentials: Mapping[str, str]) -> Switchable:
            return self.adapters.setdefault(connection.provider, Switchable(connection, self.clock))

        self.messenger = Messenger(clock=self.clock, live_adapters={"sms_a": build, "sms_b": build})

    async def workspace(self, *, retry: bool = False) -> tuple[str, Principal]:
        m = self.messenger
        workspace = await m.workspaces.create("Acme", recipient_limit=None)
        await m.workspaces.set_retry_unavailable(workspace.id, retry)
        for code in ("sms_a", "sms_b"):
            await m.connections.add(workspace.id, code, default_sender="ACME",
                                   credentials={"any": "thing"})  # fmt: skip
        return workspace.id, await m.principal(workspace.id, livemode=True)

    async def break_sms_a(self, auth: Principal) -> None:
        """Five sends while sms_a is down: its breaker opens."""
        self.adapters_up("sms_a", up=False)
        for _ in range(5):
            await self.messenger.send(auth, {"to": TO, "body": "x", "fallback": ["sms_b"]})

    def adapters_up(self, code: str, *, up: bool) -> None:
        self.adapters[code].up = up


@pytest.fixture
async def world() -> World:
    return World()


async def warm(world: World, auth: Principal) -> None:
    """Build both live adapters with one healthy send through each."""
    await world.messenger.send(auth, {"to": TO, "body": "x", "provider": "sms_b"})
    await world.messenger.send(auth, {"to": TO, "body": "x"})


async def test_an_open_connection_is_skipped_and_fallback_sends_at_once(world: World) -> None:
    workspace_id, auth = await world.workspace()
    await warm(world, auth)
    await world.break_sms_a(auth)
    calls_before = world.adapters["sms_a"].calls

    sent = await world.messenger.send(auth, {"to": TO, "body": "x", "fallback": ["sms_b"]})

    assert world.adapters["sms_a"].calls == calls_before  # no network call
    assert (sent.status, sent.provider) == ("sent", "sms_b")
    record = await world.messenger.get_message(auth, sent.job_id)
    skipped, accepted = record.attempts
    assert (skipped.provider, skipped.status) == ("sms_a", "unavailable")
    assert skipped.error is not None and skipped.error.code == "PROVIDER_CIRCUIT_OPEN"
    assert (accepted.provider, accepted.status) == ("sms_b", "accepted")
    health = {h.provider: h for h in await world.messenger.connections.health(workspace_id)}
    assert health["sms_a"].state == "open"
    assert health["sms_b"].state == "closed"


async def test_an_all_open_chain_is_a_502_with_the_job_kept(world: World) -> None:
    _, auth = await world.workspace()
    await warm(world, auth)
    await world.break_sms_a(auth)

    with pytest.raises(ProviderUnavailable) as caught:
        await world.messenger.send(auth, {"to": TO, "body": "x"})

    assert caught.value.job_id is not None
    record = await world.messenger.get_message(auth, caught.value.job_id)
    assert record.status == "failed"
    assert record.error is not None and record.error.code == "PROVIDER_UNAVAILABLE"
    assert [a.error.code for a in record.attempts if a.error] == ["PROVIDER_CIRCUIT_OPEN"]


async def test_queued_when_all_open_then_the_worker_sends_it_once_the_probe_succeeds(
    world: World,
) -> None:
    workspace_id, auth = await world.workspace(retry=True)
    await warm(world, auth)
    await world.break_sms_a(auth)

    sent = await world.messenger.send(auth, {"to": TO, "body": "x"})

    assert sent.status == "queued"
    world.adapters_up("sms_a", up=True)
    worker = world.messenger.worker()
    for _ in range(12):  # retries 5 s, 10 s, 20 s ... apart; the cool-down is 30 s
        world.clock.advance(5)
        await worker.run_until_idle()
    record = await world.messenger.get_message(auth, sent.job_id)
    assert (record.status, record.provider) == ("delivered", "sms_a")  # sent, then its report
    codes = [a.error.code if a.error else None for a in record.attempts]
    assert codes[-1] is None and set(codes[:-1]) == {"PROVIDER_CIRCUIT_OPEN"}
    health = {h.provider: h for h in await world.messenger.connections.health(workspace_id)}
    assert health["sms_a"].state == "closed"


async def test_test_keys_never_open_a_live_circuit(world: World) -> None:
    workspace_id, _ = await world.workspace()
    test_auth = await world.messenger.principal(workspace_id, livemode=False)
    for _ in range(10):
        with pytest.raises(ProviderUnavailable):
            await world.messenger.send(test_auth, {"to": "+905550000003", "body": "x"})

    health = await world.messenger.connections.health(workspace_id)

    assert {h.state for h in health} == {"closed"}
    assert {h.failures for h in health} == {0}


async def test_thresholds_are_set_per_connection_and_bad_ones_refused(world: World) -> None:
    workspace_id, auth = await world.workspace()
    await warm(world, auth)
    (sms_a, _) = await world.messenger.connections.list(workspace_id)

    tuned = await world.messenger.connections.set_breaker_policy(
        sms_a.id, consecutive=2, cooldown=60
    )

    assert (tuned.breaker.consecutive, tuned.breaker.cooldown) == (2, timedelta(minutes=1))
    world.adapters_up("sms_a", up=False)
    for _ in range(2):
        await world.messenger.send(auth, {"to": TO, "body": "x", "fallback": ["sms_b"]})
    health = {h.provider: h for h in await world.messenger.connections.health(workspace_id)}
    assert health["sms_a"].state == "open"
    assert health["sms_a"].until == world.clock.now() + timedelta(minutes=1)
    for bad, field in [({"cooldown": 0}, "breaker_cooldown"),
                       ({"min_calls": -3}, "breaker_min_calls"),
                       ({"window": 10**9}, "breaker_window"),
                       ({"failure_ratio": "most"}, "breaker_failure_ratio")]:  # fmt: skip
        with pytest.raises(RequestInvalid) as caught:
            await world.messenger.connections.set_breaker_policy(sms_a.id, **bad)
        assert caught.value.details[0].field == field
    reset = await world.messenger.connections.set_breaker_policy(sms_a.id)
    assert reset.breaker == BreakerPolicy()


async def test_a_connection_is_added_with_its_thresholds() -> None:
    messenger = Messenger(clock=ManualClock())
    workspace = await messenger.workspaces.create("Acme")
    policy = BreakerPolicy.build(window=60, failure_ratio=0.25)

    connection = await messenger.connections.add(workspace.id, "sms_a", breaker=policy)

    assert (await messenger.connections.get(connection.id)).breaker == policy


def test_the_sync_twin_shows_connection_health() -> None:
    with SyncMessenger(Messenger(clock=ManualClock())) as sync:
        workspace = sync.workspaces.create("Acme")
        connection = sync.connections.add(workspace.id, "sms_a")
        sync.connections.set_breaker_policy(connection.id, consecutive=3)
        (health,) = sync.connections.health(workspace.id)
    assert (health.connection_id, health.state, health.policy.consecutive) == (
        connection.id,
        "closed",
        3,
    )
