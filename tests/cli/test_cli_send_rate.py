"""A connection's send rate (D27) on the real command line: ``connections add|update
--max-rate/--max-calls`` (a number a second, ``off``, ``default``), shown by ``list``, and
every bad value refused as VALIDATION_ERROR naming the field, changing nothing."""

from __future__ import annotations

import asyncio
import os

import pytest
from _cli_support import Cli, refused_for
from fakes._server import serve
from fakes.netgsm import NetgsmFake

from unified_messaging import Messenger, Vault
from unified_messaging._clock import SystemClock
from unified_messaging.store.sql import SqlStore

REDIS_URL = os.environ.get("UM_TEST_REDIS_URL")
_HOUR_OF_SLOTS = 2 * 3600  # at 2 messages a second


def test_rates_are_set_on_add_changed_on_update_and_listed(cli: Cli, workspace_id: str) -> None:
    verimor, telegram = cli.many(
        [
            ("connections", "add", "sms_c", "--default-sender", "ACME", "--max-rate", "100"),
            ("connections", "add", "chatbot"),
        ],
        "--workspace", workspace_id, "--json",
    )  # fmt: skip
    added = verimor.json()
    assert (added["max_rate"], added["max_calls"]) == (
        100,
        4,
    )  # calls: Verimor's own limit (240 a minute)
    assert (telegram.json()["max_rate"], telegram.json()["max_calls"]) == (30, None)

    calls, off = cli.many(
        [
            ("connections", "update", added["id"], "--max-calls", "10", "--json"),
            ("connections", "update", telegram.json()["id"], "--max-rate", "off", "--json"),
        ]
    )
    assert (calls.json()["max_rate"], calls.json()["max_calls"]) == (100, 10)
    assert (calls.json()["breaker"]["cooldown"]) == 30  # the breaker left as it was
    assert off.json()["max_rate"] is None

    back = cli("connections", "update", added["id"], "--max-calls", "default", "--max-rate",
               "0.5", "--json").json()  # fmt: skip
    assert (back["max_rate"], back["max_calls"]) == (0.5, 4)

    as_json, table = cli.many(
        [
            ("connections", "list", "--workspace", workspace_id, "--json"),
            ("connections", "list", "--workspace", workspace_id),
        ]
    )
    assert {r["provider"]: (r["max_rate"], r["max_calls"]) for r in as_json.json()} == {
        "sms_c": (0.5, 4),
        "chatbot": (None, None),
    }
    header, *lines = table.ok().stdout.splitlines()
    assert "MSG/S" in header and "CALLS/S" in header
    verimor_line = next(line for line in lines if "sms_c" in line)
    assert verimor_line.split()[-2:] == ["0.5", "4"]


def test_bad_rates_are_refused_naming_the_field(cli: Cli, workspace_id: str) -> None:
    conn = cli("connections", "add", "sms_a", "--workspace", workspace_id, "--max-rate", "50",
               "--json").json()["id"]  # fmt: skip
    cases = [
        (("connections", "update", conn, "--max-rate", "0"), "max_rate"),
        (("connections", "update", conn, "--max-rate=-3"), "max_rate"),
        (("connections", "update", conn, "--max-rate", "nan"), "max_rate"),
        (("connections", "update", conn, "--max-calls", "inf"), "max_calls"),
        (("connections", "update", conn, "--max-calls", "20000"), "max_calls"),
        (("connections", "update", conn, "--max-rate", "fast"), "max_rate"),
        (("connections", "add", "sms_b", "--workspace", workspace_id, "--max-calls", "0"),
         "max_calls"),
    ]  # fmt: skip
    results = cli.many([argv for argv, _ in cases])
    for refused, (_, field) in zip(results, cases, strict=True):
        assert refused.returncode == 1, refused.args
        assert refused_for(refused.stderr, field), refused.stderr
        assert "Traceback" not in refused.stderr
    [listed] = cli("connections", "list", "--workspace", workspace_id, "--json").json()
    assert (listed["provider"], listed["max_rate"]) == ("sms_a", 50)  # unchanged, no sms_b


@pytest.mark.redis
async def test_with_redis_configured_a_cli_send_shares_the_rate_kept_in_redis(
    cli: Cli, database_url: str, master_keys: str
) -> None:
    """Another process (serve, say) has taken the next seconds of the connection's rate in
    Redis: ``send`` with ``UM_REDIS_URL`` answers ``queued`` and calls nobody; without it, the
    store's empty row lets the message go out."""
    if not REDIS_URL:
        pytest.skip("set UM_TEST_REDIS_URL (e.g. redis://127.0.0.1:6379/5)")
    from unified_messaging._routing.redis_pacing import RedisPacer

    netgsm = NetgsmFake()
    async with serve(netgsm.app) as url:
        messenger = Messenger(SqlStore(database_url), vault=Vault.from_spec(master_keys))
        async with messenger:
            workspace = await messenger.workspaces.create("Acme", recipient_limit=None)
            connection = await messenger.connections.add(
                workspace.id, "sms_a", base_url=url, default_sender="ACME", max_rate=2,
                credentials={"usercode": netgsm.usercode, "password": netgsm.password},
            )  # fmt: skip
        pacer = RedisPacer(REDIS_URL)
        try:
            # An hour of slots, from now: the CLI's start-up on a loaded machine outlasted
            # the five seconds once taken, and its send found the rate free again.
            await pacer.reserve(f"{connection.id}:messages", cost=_HOUR_OF_SLOTS, rate=2,
                                burst=1, max_wait=3600, now=SystemClock().now())  # fmt: skip
            send = ("send", "--workspace", workspace.id, "--to", "05321000001", "--body", "Hi",
                    "--json")  # fmt: skip
            with_redis = await asyncio.to_thread(cli, *send, UM_REDIS_URL=REDIS_URL)
            assert with_redis.ok().json()["status"] == "queued"
            assert netgsm.sends == []

            without = await asyncio.to_thread(cli, *send)
            assert without.ok().json()["status"] == "sent"
            assert len(netgsm.sends) == 1
        finally:
            await pacer.release(f"{connection.id}:messages", cost=_HOUR_OF_SLOTS, rate=2,
                                now=SystemClock().now())  # fmt: skip
            await pacer.aclose()
