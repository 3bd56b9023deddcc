"""``simulate inbound``: a recipient's reply in test mode, through the real command line. A
STOP takes the path a provider's push takes: the sender is suppressed (source: the channel)
and the workspace's webhook endpoints get ``message.inbound``."""

from __future__ import annotations

import asyncio

from _cli_support import Cli

from unified_messaging import Messenger, TargetPolicy, Vault
from unified_messaging.store.sql import SqlStore
from unified_messaging.testing import create_testbed


async def _workspace(database_url: str, master_keys: str) -> str:
    messenger = Messenger(
        SqlStore(database_url),
        vault=Vault.from_spec(master_keys),
        webhook_policy=TargetPolicy(allow_private=True),
    )
    try:
        bed = await create_testbed(messenger=messenger)
        await messenger.webhooks.create(bed.workspace.id, "http://127.0.0.1:9/hook")
        return bed.workspace.id
    finally:
        await messenger.aclose()


async def _inbound_events(database_url: str, master_keys: str, workspace_id: str) -> list[str]:
    """The events the workspace's endpoint got, once a worker has run what was queued (as
    ``serve`` or ``worker`` would)."""
    messenger = Messenger(
        SqlStore(database_url),
        vault=Vault.from_spec(master_keys),
        webhook_policy=TargetPolicy(allow_private=True),
    )
    try:
        await messenger.worker().run_until_idle()
        [endpoint] = await messenger.webhooks.list(workspace_id)
        deliveries = await messenger.webhooks.list_deliveries(endpoint.id)
        return [d.event_type for d in deliveries]
    finally:
        await messenger.aclose()


def test_a_simulated_stop_suppresses_and_announces_the_reply(
    cli: Cli, database_url: str, master_keys: str
) -> None:
    workspace_id = asyncio.run(_workspace(database_url, master_keys))
    ws = ("--workspace", workspace_id)

    stop = cli("simulate", "inbound", *ws, "--from", "0555 100 04 01", "--text", "STOP", "--json")
    hello = cli("simulate", "inbound", *ws, "--from", "+905551000402", "--text", "Merhaba")
    listed = cli("suppressions", "list", *ws, "--test", "--json").json()
    sent = cli("send", *ws, "--test", "--to", "+905551000401", "--body", "x")

    record = stop.json()
    assert (record["sender"], record["opt_out"], record["stop_word"]) == (
        "+905551000401", True, "STOP"
    )  # fmt: skip
    assert record["channel"] == "sms" and record["provider"] == "sms_a"
    assert "opt-out" in hello.ok().stdout and "The sender is now suppressed" not in hello.stdout
    assert [(e["recipient"], e["source"]) for e in listed] == [("+905551000401", "sms")]
    assert sent.returncode == 1 and "RECIPIENT_SUPPRESSED" in sent.stderr
    events = asyncio.run(_inbound_events(database_url, master_keys, workspace_id))
    assert events.count("message.inbound") == 2  # the same webhooks as a real reply


def test_a_bad_sender_or_a_missing_connection_is_a_clear_error(
    cli: Cli, database_url: str, master_keys: str
) -> None:
    workspace_id = asyncio.run(_workspace(database_url, master_keys))
    ws = ("--workspace", workspace_id)
    bad, landline = cli.many(
        [
            ("simulate", "inbound", *ws, "--from", "", "--text", "STOP"),
            ("simulate", "inbound", *ws, "--from", "0212 555 12 34", "--text", "STOP"),
        ]
    )

    assert bad.returncode == 1 and "VALIDATION_ERROR" in bad.stderr
    assert landline.returncode == 1 and "INVALID_RECIPIENT" in landline.stderr
    assert "Traceback" not in bad.stderr + landline.stderr
