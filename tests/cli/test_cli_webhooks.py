"""``webhooks`` through the real command line: endpoints, secrets shown once, the log.

Commands of one round do not depend on each other and run side by side.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from _cli_support import Cli

from unified_messaging import ManualClock
from unified_messaging._domain import MessageRecord
from unified_messaging.store.sql import SqlStore
from unified_messaging.vault._core import Vault
from unified_messaging.webhooks._outbox import WebhookOutbox
from unified_messaging.webhooks._sender import WebhookSender

URL = "https://hooks.example.com/um"


def test_an_endpoint_session_shows_each_secret_once(cli: Cli, workspace_id: str) -> None:
    ws = ("--workspace", workspace_id)
    text, failed_only = cli.many(
        [
            ("webhooks", "add", *ws, URL),
            ("webhooks", "add", *ws, URL + "/failed", "--event", "message.failed",
             "--event", "message.expired", "--json"),
        ]
    )  # fmt: skip
    secret_line = next(line for line in text.ok().stdout.splitlines() if line.startswith("secret"))
    first_secret = secret_line.split()[1]
    assert first_secret.startswith("whsec_")
    assert "cannot be shown again" in text.stdout
    created = failed_only.json()
    assert created["events"] == ["message.failed", "message.expired"]
    assert created["secret"].startswith("whsec_")
    endpoint_id = created["id"]

    table, listed, rotated = cli.many(
        [
            ("webhooks", "list", *ws),
            ("webhooks", "list", *ws, "--json"),
            ("webhooks", "rotate-secret", endpoint_id, "--overlap", "3600", "--json"),
        ]
    )
    assert "all" in table.ok().stdout and "message.failed, message.expired" in table.stdout
    # The two endpoints were added by processes running side by side: either may be first.
    assert sorted(e["url"] for e in listed.json()) == [URL, URL + "/failed"]
    new = rotated.json()
    assert new["secret"].startswith("whsec_") and new["secret"] != created["secret"]
    assert new["previous_secret_expires_at"] is not None

    disabled = cli("webhooks", "disable", endpoint_id, "--json").json()
    assert (disabled["enabled"], disabled["disabled_at"] is not None) == (False, True)
    enabled, after_rotation = cli.many(
        [("webhooks", "enable", endpoint_id, "--json"), ("webhooks", "list", *ws, "--json")]
    )
    assert enabled.json()["enabled"] is True
    everything_shown = table.output + listed.output + after_rotation.output + enabled.output
    for secret in (first_secret, created["secret"], new["secret"]):
        assert secret.removeprefix("whsec_") not in everything_shown
    assert "secret" not in json.dumps(after_rotation.json()).replace("previous_secret", "")

    cli("webhooks", "remove", endpoint_id).ok()
    remaining = cli("webhooks", "list", *ws, "--json").json()
    assert [e["url"] for e in remaining] == [URL]


def test_private_targets_need_the_operator_switch(cli: Cli, workspace_id: str) -> None:
    ws = ("--workspace", workspace_id)
    refused, metadata = cli.many(
        [
            ("webhooks", "add", *ws, "http://127.0.0.1:8080/hook"),
            ("webhooks", "add", *ws, "http://169.254.169.254/latest"),
        ]
    )
    allowed = cli(
        "webhooks", "add", *ws, "http://127.0.0.1:8080/hook", "--json",
        UM_WEBHOOK_ALLOW_PRIVATE="1",
    )  # fmt: skip

    assert refused.returncode == 1
    assert "error: VALIDATION_ERROR: The URL points to a loopback address" in refused.stderr
    assert metadata.returncode == 1 and "link-local" in metadata.stderr
    assert allowed.json()["url"] == "http://127.0.0.1:8080/hook"


def test_bad_input_is_refused(cli: Cli, workspace_id: str) -> None:
    ws = ("--workspace", workspace_id)
    scheme, event, overlap, missing, no_workspace = cli.many(
        [
            ("webhooks", "add", *ws, "javascript:alert(1)"),
            ("webhooks", "add", *ws, URL, "--event", "message.opened"),
            ("webhooks", "rotate-secret", "whe_x", "--overlap", "-5"),
            ("webhooks", "deliveries", "whe_missing"),
            ("webhooks", "list", "--workspace", "ws_missing"),
        ]
    )

    assert scheme.returncode == 1
    assert "VALIDATION_ERROR: The URL must use http or https" in scheme.stderr
    assert event.returncode == 2 and "--event" in event.stderr
    assert overlap.returncode == 2 and "--overlap" in overlap.stderr
    assert missing.returncode == 1 and "NOT_FOUND" in missing.stderr
    assert no_workspace.returncode == 1 and "NOT_FOUND" in no_workspace.stderr


def test_deliveries_show_the_log(
    cli: Cli, workspace_id: str, database_url: str, master_keys: str
) -> None:
    endpoint_id = cli("webhooks", "add", "--workspace", workspace_id, URL, "--json").json()["id"]
    assert cli("webhooks", "deliveries", endpoint_id).ok().stdout.strip() == "No deliveries."

    asyncio.run(_emit(database_url, master_keys, workspace_id))
    text, data = cli.many(
        [("webhooks", "deliveries", endpoint_id), ("webhooks", "deliveries", endpoint_id, "--json")]
    )

    [delivery] = data.json()
    assert (delivery["event_type"], delivery["status"], delivery["attempts"]) == (
        "message.delivered",
        "pending",
        0,
    )
    assert delivery["event_id"].startswith("evt_")
    assert "message.delivered" in text.ok().stdout and "pending" in text.stdout


async def _emit(database_url: str, master_keys: str, workspace_id: str) -> None:
    """Queue one event the way the lifecycle does, in this process, on the CLI's database."""
    store = SqlStore(database_url)
    await store.open()
    at = datetime(2026, 1, 1, tzinfo=UTC)
    record = MessageRecord(
        job_id="job_cli", workspace_id=workspace_id, livemode=False, status="delivered",
        to="+905551112233", channel="sms", provider="sms_a", created_at=at, updated_at=at,
        text="hello",
    )  # fmt: skip
    try:
        async with WebhookSender() as sender:
            outbox = WebhookOutbox(
                store, Vault.from_spec(master_keys), ManualClock(at), sender=sender
            )
            assert await outbox.emit(record, "message.delivered") == 1
    finally:
        await store.close()


def test_disable_events_test_and_redeliver_are_the_dashboards_operations(
    cli: Cli, workspace_id: str
) -> None:
    endpoint_id = cli("webhooks", "add", "--workspace", workspace_id, URL, "--json").json()["id"]
    chosen = cli("webhooks", "events", endpoint_id, "--event", "message.failed", "--json").json()
    assert chosen["events"] == ["message.failed"]
    queued = cli("webhooks", "test", endpoint_id, "--json").json()
    assert (queued["event_type"], queued["status"]) == ("message.delivered", "pending")
    pending = cli("webhooks", "redeliver", queued["id"])
    assert pending.returncode == 1 and "still being delivered" in pending.stderr
    disabled = cli("webhooks", "disable", endpoint_id, "--json").json()
    assert disabled["enabled"] is False and disabled["disabled_at"]
    refused = cli("webhooks", "test", endpoint_id)
    assert refused.returncode == 1 and "enable it first" in refused.stderr
