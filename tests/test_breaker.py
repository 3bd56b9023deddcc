"""Circuit breakers per connection (D26): the rules, through ``SharedBreakers`` on a memory store
and a ManualClock. The shared backends (SQLite, PostgreSQL, Redis) have their own contract
tests (tests/store/test_store_breakers.py); routing and the façade theirs.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from unified_messaging._clock import ManualClock
from unified_messaging._domain import Connection
from unified_messaging._errors import RequestInvalid, StorageUnavailable
from unified_messaging._routing.breaker import Admission, SharedBreakers
from unified_messaging._routing.breaker_policy import DEFAULT_BREAKER_POLICY, BreakerPolicy
from unified_messaging._routing.breaker_state import MAX_PAUSE, BreakerState, StoredBreaker
from unified_messaging.providers.base import SubmitOutcome
from unified_messaging.store.memory import MemoryStore

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=60)
OK = SubmitOutcome.accepted("m1")
DOWN = SubmitOutcome.unavailable("The provider did not answer in time.")
REFUSED = SubmitOutcome.rejected("SENDER_NOT_APPROVED", "no such header")


def connection(policy: BreakerPolicy = DEFAULT_BREAKER_POLICY, cid: str = "conn_a") -> Connection:
    return Connection(
        id=cid, workspace_id="ws_1", provider="sms_a", created_at=START, credentials="x",
        breaker=policy,
    )  # fmt: skip


class CountingStore(MemoryStore):
    """A memory store that counts breaker writes and can be made unreachable."""

    def __init__(self) -> None:
        super().__init__()
        self.puts = 0
        self.down = False

    async def get_breaker(self, connection_id: str) -> StoredBreaker | None:
        if self.down:
            raise StorageUnavailable("down")
        return await super().get_breaker(connection_id)

    async def put_breaker(self, connection_id: str, data: str, *, version: int) -> bool:
        if self.down:
            raise StorageUnavailable("down")
        self.puts += 1
        return await super().put_breaker(connection_id, data, version=version)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def store() -> CountingStore:
    return CountingStore()


def breakers_on(store: CountingStore, clock: ManualClock, ttl: float = 0.0) -> SharedBreakers:
    return SharedBreakers(store, clock, probe_lease=LEASE, cache_ttl=timedelta(seconds=ttl))


async def call(breakers: SharedBreakers, conn: Connection, *outcomes: SubmitOutcome) -> Admission:
    """One hop's turn: ask, and when allowed, report ``outcomes``."""
    admission = await breakers.allow(conn)
    if admission.allowed:
        await breakers.record(conn, list(outcomes), admission)
    return admission


async def test_five_unavailable_calls_in_a_row_open_the_circuit(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers, conn = breakers_on(store, clock), connection()
    for _ in range(4):
        assert (await call(breakers, conn, DOWN)).allowed
    assert (await breakers.health(conn)).state == "closed"

    assert (await call(breakers, conn, DOWN)).allowed  # the fifth is made, then it opens

    refused = await breakers.allow(conn)
    assert not refused.allowed
    assert refused.refusal is not None
    assert refused.refusal.code == "PROVIDER_CIRCUIT_OPEN"
    assert "12:00:30 UTC" in refused.refusal.message  # the end of the 30 s cool-down
    health = await breakers.health(conn)
    until = START + timedelta(seconds=30)
    assert (health.state, health.until, health.consecutive) == ("open", until, 5)
    assert health.reason == "5 calls in a row unavailable (last error PROVIDER_UNAVAILABLE)"


async def test_a_success_between_failures_resets_the_run(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers = breakers_on(store, clock)
    conn = connection(BreakerPolicy(failure_ratio=1.0))  # only the run can open it
    for _ in range(3):
        for _ in range(4):
            await call(breakers, conn, DOWN)
        await call(breakers, conn, OK)
    assert (await breakers.health(conn)).state == "closed"


async def test_half_the_calls_unavailable_within_the_window_open_it(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers = breakers_on(store, clock)
    conn = connection(BreakerPolicy(min_calls=6, failure_ratio=0.5, consecutive=100))
    for outcome in (OK, DOWN, OK, DOWN, OK):
        await call(breakers, conn, outcome)
    assert (await breakers.health(conn)).state == "closed"  # 2 of 5: under min_calls anyway

    await call(breakers, conn, DOWN)  # 3 of 6

    health = await breakers.health(conn)
    assert health.state == "open"
    assert health.reason == "3 of 6 calls unavailable in 30 s (last error PROVIDER_UNAVAILABLE)"


async def test_failures_older_than_the_window_are_forgotten(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers = breakers_on(store, clock)
    conn = connection(BreakerPolicy(min_calls=4, failure_ratio=0.5, consecutive=100))
    for _ in range(3):
        await call(breakers, conn, DOWN)
    clock.advance(31)
    await call(breakers, conn, DOWN)  # 1 of 1 in the window: under min_calls
    assert (await breakers.health(conn)).state == "closed"
    assert ((await breakers.health(conn)).calls, (await breakers.health(conn)).failures) == (1, 1)


async def test_successes_while_healthy_cost_no_write_but_count_in_the_ratio(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers = breakers_on(store, clock)
    conn = connection(BreakerPolicy(min_calls=5, failure_ratio=0.5, consecutive=100))
    for _ in range(10):
        await call(breakers, conn, OK)
    assert store.puts == 0

    for _ in range(5):
        await call(breakers, conn, DOWN)

    health = await breakers.health(conn)
    assert health.state == "closed"  # 5 of 15, not 5 of 5
    assert (health.calls, health.failures) == (15, 5)


async def test_refusals_count_as_a_reachable_provider_and_neutral_codes_not_at_all(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers, conn = breakers_on(store, clock), connection()
    throttled_one = SubmitOutcome.unavailable("20 a minute", code="PROVIDER_RECIPIENT_THROTTLED")
    for _ in range(10):
        await call(breakers, conn, REFUSED)
        await call(breakers, conn, throttled_one)
    assert (await breakers.health(conn)).state == "closed"
    assert store.puts == 0


async def test_after_the_cool_down_exactly_one_call_probes(
    store: CountingStore, clock: ManualClock
) -> None:
    conn = connection()
    one, other = breakers_on(store, clock, ttl=1), breakers_on(store, clock, ttl=1)
    for _ in range(5):
        await call(one, conn, DOWN)
    clock.advance(30)

    admissions = await asyncio.gather(*(b.allow(conn) for b in [one, other] * 10))

    assert sum(a.probe for a in admissions) == 1
    assert sum(a.allowed for a in admissions) == 1
    refused = [a.refusal for a in admissions if a.refusal is not None]
    assert {r.code for r in refused} == {"PROVIDER_CIRCUIT_OPEN"}
    assert (await one.health(conn)).state == "half_open"


async def test_a_successful_probe_closes_the_circuit_for_every_process(
    store: CountingStore, clock: ManualClock
) -> None:
    conn = connection()
    one, other = breakers_on(store, clock, ttl=1), breakers_on(store, clock, ttl=1)
    for _ in range(5):
        await call(one, conn, DOWN)
    assert not (await other.allow(conn)).allowed
    clock.advance(30)

    probe = await call(one, conn, OK)

    assert probe.probe
    clock.advance(1)  # the other process's copy is a second old: it reads again
    assert await other.allow(conn) == Admission(True)
    health = await other.health(conn)
    assert (health.state, health.consecutive, health.failures) == ("closed", 0, 0)


async def test_a_failed_probe_opens_it_for_another_cool_down(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers, conn = breakers_on(store, clock), connection()
    for _ in range(5):
        await call(breakers, conn, DOWN)
    clock.advance(30)

    assert (await call(breakers, conn, DOWN)).probe

    health = await breakers.health(conn)
    assert (health.state, health.until) == ("open", clock.now() + timedelta(seconds=30))
    assert health.reason == "the probe call was unavailable (last error PROVIDER_UNAVAILABLE)"
    clock.advance(29)
    assert not (await breakers.allow(conn)).allowed
    clock.advance(1)
    assert (await breakers.allow(conn)).probe


async def test_a_probe_whose_process_died_is_taken_over_after_its_lease(
    store: CountingStore, clock: ManualClock
) -> None:
    conn = connection()
    dead, alive = breakers_on(store, clock), breakers_on(store, clock)
    for _ in range(5):
        await call(dead, conn, DOWN)
    clock.advance(30)
    assert (await dead.allow(conn)).probe  # ... and never records: the process is gone

    clock.advance(LEASE - timedelta(seconds=1))
    assert not (await alive.allow(conn)).allowed
    clock.advance(1)
    taken_over = await alive.allow(conn)

    assert taken_over.probe
    await alive.record(conn, [OK], taken_over)
    assert (await alive.health(conn)).state == "closed"


@pytest.mark.parametrize(
    "said",
    [(), (SubmitOutcome.unavailable("throttled", code="PROVIDER_RECIPIENT_THROTTLED"),)],
    ids=["not called (the send rate kept it back)", "a neutral answer"],
)
async def test_a_probe_that_said_nothing_is_given_back_at_once(
    store: CountingStore, clock: ManualClock, said: tuple[SubmitOutcome, ...]
) -> None:
    breakers, other = breakers_on(store, clock), breakers_on(store, clock)
    conn = connection()
    for _ in range(5):
        await call(breakers, conn, DOWN)
    clock.advance(30)
    probe = await breakers.allow(conn)
    assert probe.probe

    await breakers.record(conn, list(said), probe)

    health = await breakers.health(conn)
    assert (health.state, health.until) == ("open", None)  # cool-down over, not half-open
    again = await other.allow(conn)  # another process, at once: the next probe
    assert again.probe
    await other.record(conn, [OK], again)
    assert (await other.health(conn)).state == "closed"


async def test_a_provider_asking_to_wait_pauses_the_connection_until_then(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers, conn = breakers_on(store, clock), connection()
    throttled = SubmitOutcome.unavailable("429", retry_after=20)

    await call(breakers, conn, throttled)

    refused = await breakers.allow(conn)
    assert refused.refusal is not None
    assert refused.refusal.code == "PROVIDER_CIRCUIT_OPEN"
    assert "paused until 12:00:20 UTC" in refused.refusal.message
    health = await breakers.health(conn)
    assert (health.state, health.until) == ("paused", START + timedelta(seconds=20))
    clock.advance(20)
    assert (await breakers.allow(conn)).allowed
    assert (await breakers.health(conn)).state == "closed"


async def test_a_pause_is_capped_at_an_hour(store: CountingStore, clock: ManualClock) -> None:
    breakers, conn = breakers_on(store, clock), connection()

    await call(breakers, conn, SubmitOutcome.unavailable("429", retry_after=9e9))

    assert (await breakers.health(conn)).until == START + MAX_PAUSE


async def test_a_clock_jumping_back_neither_closes_nor_prolongs_an_open_circuit(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers, conn = breakers_on(store, clock), connection()
    for _ in range(5):
        await call(breakers, conn, DOWN)
    clock.advance(10)
    assert not (await breakers.allow(conn)).allowed  # 20 s of the cool-down left

    clock.set(clock.now() - timedelta(hours=1))

    assert not (await breakers.allow(conn)).allowed
    clock.advance(19)
    assert not (await breakers.allow(conn)).allowed
    clock.advance(1)
    assert (await breakers.allow(conn)).probe  # 20 s later, not an hour and 20 s


async def test_a_process_started_after_the_clock_went_back_waits_one_cool_down_at_most(
    store: CountingStore, clock: ManualClock
) -> None:
    before = breakers_on(store, clock)
    conn = connection()
    for _ in range(5):
        await call(before, conn, DOWN)
    clock.set(START - timedelta(hours=1))  # the host's clock is stepped back an hour

    after = breakers_on(store, clock)  # a new process: it never saw the later time

    assert not (await after.allow(conn)).allowed
    clock.advance(29)
    assert not (await after.allow(conn)).allowed
    clock.advance(1)
    assert (await after.allow(conn)).probe  # 30 s, not an hour and 30 s


async def test_a_clock_jumping_back_does_not_open_a_closed_circuit(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers = breakers_on(store, clock)
    conn = connection(BreakerPolicy(min_calls=6, failure_ratio=0.5, consecutive=100))
    for outcome in (OK, OK, OK, DOWN, DOWN):
        await call(breakers, conn, outcome)
    clock.set(START - timedelta(days=1))
    for _ in range(3):
        await call(breakers, conn, OK)
    health = await breakers.health(conn)
    assert (health.state, health.calls, health.failures) == ("closed", 8, 2)


async def test_a_clock_jumping_forward_lets_a_probe_through_but_does_not_close(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers, conn = breakers_on(store, clock), connection()
    for _ in range(5):
        await call(breakers, conn, DOWN)

    clock.advance(timedelta(days=3))

    assert (await breakers.allow(conn)).probe
    assert not (await breakers.allow(conn)).allowed
    assert (await breakers.health(conn)).state == "half_open"


async def test_an_unreachable_breaker_store_lets_every_call_through(
    store: CountingStore, clock: ManualClock
) -> None:
    breakers, conn = breakers_on(store, clock), connection()
    for _ in range(5):
        await call(breakers, conn, DOWN)
    clock.advance(1)
    store.down = True

    admission = await breakers.allow(conn)
    await breakers.record(conn, [DOWN], admission)

    assert admission == Admission(True)


async def test_a_state_this_version_cannot_read_is_a_closed_breaker() -> None:
    state = BreakerState.from_stored(StoredBreaker('{"phase": "melted"}', 7))
    assert (state.phase, state.version) == ("closed", 7)


def test_a_state_survives_its_json_form() -> None:
    state = BreakerState(
        phase="open", consecutive=3, until=START, paused_until=START, opened_at=START,
        reason="why", at=START,
    )  # fmt: skip
    assert BreakerState.from_stored(StoredBreaker(state.to_json(), 4)) == BreakerState(
        **{**{f: getattr(state, f) for f in BreakerState.__dataclass_fields__}, "version": 4}
    )


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"window": 0}, "breaker_window"),
        ({"window": -5}, "breaker_window"),
        ({"window": 86_400}, "breaker_window"),
        ({"window": "30"}, "breaker_window"),
        ({"window": float("nan")}, "breaker_window"),
        ({"cooldown": float("inf")}, "breaker_cooldown"),
        ({"cooldown": 1e300}, "breaker_cooldown"),
        ({"cooldown": True}, "breaker_cooldown"),
        ({"min_calls": 0}, "breaker_min_calls"),
        ({"min_calls": 10_001}, "breaker_min_calls"),
        ({"min_calls": 2.5}, "breaker_min_calls"),
        ({"consecutive": -1}, "breaker_consecutive"),
        ({"consecutive": "five"}, "breaker_consecutive"),
        ({"failure_ratio": 0}, "breaker_failure_ratio"),
        ({"failure_ratio": 1.5}, "breaker_failure_ratio"),
        ({"failure_ratio": -0.5}, "breaker_failure_ratio"),
        ({"failure_ratio": float("nan")}, "breaker_failure_ratio"),
        ({"failure_ratio": "half"}, "breaker_failure_ratio"),
        ({"half_open_calls": 3}, "breaker_half_open_calls"),
    ],
)
def test_bad_thresholds_are_refused_naming_the_field(
    changes: dict[str, object], field: str
) -> None:
    with pytest.raises(RequestInvalid) as caught:
        BreakerPolicy.build(**changes)
    assert [d.field for d in caught.value.details] == [field]


def test_thresholds_within_bounds_are_kept() -> None:
    policy = BreakerPolicy.build(window=1, cooldown=3600, min_calls=10_000, failure_ratio=1)
    assert policy.window == timedelta(seconds=1)
    assert policy.cooldown == timedelta(hours=1)
    assert BreakerPolicy.from_json(policy.to_json()) == policy
