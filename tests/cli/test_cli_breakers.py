"""Circuit breakers (D26) on the real command line: ``connections add|update --breaker-*`` set a
connection's thresholds (bad ones refused, naming the field), and ``connections list`` shows
each breaker as the processes share it (in the store, or in Redis with ``UM_REDIS_URL``)."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

import pytest
from _cli_support import Cli, refused_for

from unified_messaging._clock import SystemClock
from unified_messaging._domain import Connection
from unified_messaging._routing.breaker import BreakerStore, SharedBreakers
from unified_messaging.providers.base import SubmitOutcome
from unified_messaging.store.sql import SqlStore

REDIS_URL = os.environ.get("UM_TEST_REDIS_URL")


async def open_circuit(backend: BreakerStore, connection: Connection, calls: int) -> None:
    """What a serve process does when the provider is down: ``calls`` unavailable calls."""
    breakers = SharedBreakers(backend, SystemClock(), probe_lease=timedelta(minutes=2))
    for _ in range(calls):
        admission = await breakers.allow(connection)
        await breakers.record(connection, [SubmitOutcome.unavailable("time-out")], admission)


def connection_of(cli: Cli, workspace_id: str) -> Connection:
    [row] = cli("connections", "list", "--workspace", workspace_id, "--json").json()
    from unified_messaging._routing.breaker_policy import BreakerPolicy

    policy = BreakerPolicy.build(**row["breaker"])
    return Connection(row["id"], workspace_id, row["provider"], SystemClock().now(), "x",
                      breaker=policy)  # fmt: skip


def test_thresholds_are_set_on_add_and_update_and_shown(cli: Cli, workspace_id: str) -> None:
    added = cli(
        "connections", "add", "sms_a", "--workspace", workspace_id, "--default-sender", "ACME",
        "--breaker-consecutive", "2", "--breaker-cooldown", "90", "--json",
    ).json()  # fmt: skip
    assert added["breaker"] == {
        "window": 30, "min_calls": 5, "failure_ratio": 0.5, "consecutive": 2, "cooldown": 90,
    }  # fmt: skip

    # One after the other: ``cli.many`` runs its commands side by side.
    updated = cli("connections", "update", added["id"], "--breaker-failure-ratio", "0.8",
                  "--breaker-window", "60", "--json")  # fmt: skip
    text = cli("connections", "update", added["id"], "--breaker-defaults", "--breaker-min-calls",
               "20")  # fmt: skip
    assert updated.json()["breaker"] == {
        "window": 60, "min_calls": 5, "failure_ratio": 0.8, "consecutive": 2, "cooldown": 90,
    }  # fmt: skip
    shown = next(line for line in text.ok().stdout.splitlines() if "circuit breaker" in line)
    assert shown.split("circuit breaker", 1)[1].strip() == (
        "window 30, min calls 20, failure ratio 0.5, consecutive 5, cooldown 30"
    )
    [listed] = cli("connections", "list", "--workspace", workspace_id, "--json").json()
    assert listed["breaker"] == {
        "window": 30, "min_calls": 20, "failure_ratio": 0.5, "consecutive": 5, "cooldown": 30,
    }  # fmt: skip
    assert (listed["breaker_state"], listed["breaker_until"]) == ("closed", None)


def test_bad_thresholds_are_refused_naming_the_field(cli: Cli, workspace_id: str) -> None:
    conn = cli("connections", "add", "sms_a", "--workspace", workspace_id, "--json").json()["id"]
    results = cli.many(
        [
            ("connections", "update", conn, "--breaker-cooldown", "0"),
            ("connections", "update", conn, "--breaker-window=-5"),
            ("connections", "update", conn, "--breaker-consecutive", "1000000"),
            ("connections", "update", conn, "--breaker-failure-ratio", "1.5"),
            ("connections", "update", conn, "--breaker-min-calls", "2.5"),
            ("connections", "add", "sms_b", "--workspace", workspace_id,
             "--breaker-cooldown", "86400"),
        ]
    )  # fmt: skip
    fields = ["cooldown", "window", "consecutive", "failure_ratio", "min_calls", "cooldown"]
    for refused, field in zip(results, fields, strict=True):
        assert refused.returncode == 1, refused.args
        assert refused_for(refused.stderr, f"breaker_{field}"), refused.stderr
        assert "Traceback" not in refused.stderr
    not_a_number = cli("connections", "update", conn, "--breaker-window", "soon")
    assert not_a_number.returncode == 2
    assert "'soon' is not a number" in not_a_number.stderr
    [listed] = cli("connections", "list", "--workspace", workspace_id, "--json").json()
    assert listed["breaker"]["cooldown"] == 30  # nothing changed, sms_b not added


def test_the_list_shows_a_breaker_opened_by_another_process(
    cli: Cli, workspace_id: str, database_url: str
) -> None:
    cli("connections", "add", "sms_a", "--workspace", workspace_id,
        "--breaker-consecutive", "2", "--breaker-cooldown", "600").ok()  # fmt: skip
    connection = connection_of(cli, workspace_id)

    async def serve_sees_failures() -> None:
        store = SqlStore(database_url)
        await store.open()
        try:
            await open_circuit(store, connection, calls=2)
        finally:
            await store.close()

    asyncio.run(serve_sees_failures())

    as_json, table = cli.many(
        [
            ("connections", "list", "--workspace", workspace_id, "--json"),
            ("connections", "list", "--workspace", workspace_id),
        ]
    )
    [row] = as_json.json()
    assert row["breaker_state"] == "open"
    assert row["breaker_until"] is not None
    assert row["breaker_reason"].startswith("2 calls in a row unavailable")
    header, line = table.ok().stdout.splitlines()
    assert "BREAKER" in header and " open " in f"{line} "


@pytest.mark.redis
def test_with_redis_configured_the_list_reads_the_breakers_from_redis(
    cli: Cli, workspace_id: str
) -> None:
    if not REDIS_URL:
        pytest.skip("set UM_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/5)")
    from unified_messaging._routing.redis_breaker import RedisBreakerStore

    cli("connections", "add", "sms_a", "--workspace", workspace_id,
        "--breaker-consecutive", "1").ok()  # fmt: skip
    connection = connection_of(cli, workspace_id)

    async def serve_sees_a_failure() -> None:
        backend = RedisBreakerStore(REDIS_URL or "")
        try:
            await open_circuit(backend, connection, calls=1)
        finally:
            await backend.aclose()

    asyncio.run(serve_sees_a_failure())

    without, with_redis = (
        cli("connections", "list", "--workspace", workspace_id, "--json"),
        cli("connections", "list", "--workspace", workspace_id, "--json",
            UM_REDIS_URL=REDIS_URL or ""),
    )  # fmt: skip

    assert without.json()[0]["breaker_state"] == "closed"  # nothing in the store
    assert with_redis.json()[0]["breaker_state"] == "open"
