"""``messages show`` says what was sent and with which key; ``workspaces update
--mask-live-text`` hides the text of live messages, audited as the command line's. Run as
the real command line on the test's SQLite file."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass

import pytest
from _cli_support import Cli

from unified_messaging import Messenger, ProviderUnavailable, Vault
from unified_messaging.store.sql import SqlStore


@dataclass(frozen=True)
class Sent:
    workspace_id: str
    key_id: str
    live: str
    test: str


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def _send(database_url: str, master_keys: str) -> Sent:
    messenger = Messenger(SqlStore(database_url), vault=Vault.from_spec(master_keys))
    async with messenger:
        workspace = await messenger.workspaces.create("Acme", recipient_limit=None)
        # A live account nobody answers for: the send fails and is kept, with its text.
        await messenger.connections.add(
            workspace.id, "sms_a", credentials={"usercode": "u", "password": "p"},
            default_sender="ACME", base_url=f"http://127.0.0.1:{_closed_port()}",
        )  # fmt: skip
        live_key = await messenger.keys.create(workspace.id, livemode=True, name="checkout")
        test_key = await messenger.keys.create(workspace.id, livemode=False, name="ci")
        live = await messenger.authenticate(live_key.secret)
        text = "Sipariş 12 yolda\n2. satır"
        with pytest.raises(ProviderUnavailable):  # 502: the job is kept
            await messenger.send(live, {"to": "+905551234567", "body": text})
        (record,) = (await messenger.list_messages(live)).data
        test = await messenger.authenticate(test_key.secret)
        sent = await messenger.send(test, {"to": "+905551234567", "body": "deneme"})
        return Sent(workspace.id, live_key.record.id, record.job_id, sent.job_id)


@pytest.fixture
def sent(database_url: str, master_keys: str) -> Sent:
    return asyncio.run(_send(database_url, master_keys))


def test_messages_show_prints_the_text_and_the_key_that_sent_it(cli: Cli, sent: Sent) -> None:
    text, as_json = cli.many(
        [["messages", "show", sent.live], ["messages", "show", sent.live, "--json"]]
    )

    lines = text.ok().stdout.splitlines()
    assert "text:     Sipariş 12 yolda" in lines and "          2. satır" in lines
    assert f"API key:  checkout ({sent.key_id})" in lines
    message = as_json.json()["message"]
    assert message["body"] == "Sipariş 12 yolda\n2. satır"
    assert message["api_key"] == {"id": sent.key_id, "name": "checkout"}


def test_mask_live_text_hides_live_text_only_and_is_audited(cli: Cli, sent: Sent) -> None:
    updated = cli("workspaces", "update", sent.workspace_id, "--mask-live-text", "--json").json()
    assert updated["mask_live_text"] is True

    live, test, audit = cli.many(
        [
            ["messages", "show", sent.live, "--json"],
            ["messages", "show", sent.test, "--json"],
            ["audit", "list", "--action", "workspace.text_masking", "--json"],
        ]
    )
    assert live.json()["message"]["body"] == "******"
    assert test.json()["message"]["body"] == "deneme"
    (row,) = audit.json()["data"]
    assert (row["actor"], row["target"]) == ("cli", sent.workspace_id)
    shown = cli("workspaces", "update", sent.workspace_id, "--show-live-text", "--json").json()
    assert shown["mask_live_text"] is False
    again = cli("messages", "show", sent.live, "--json").json()
    assert again["message"]["body"] == "Sipariş 12 yolda\n2. satır"


def test_both_masking_flags_at_once_are_refused(cli: Cli, sent: Sent) -> None:
    both = cli("workspaces", "update", sent.workspace_id, "--mask-live-text", "--show-live-text")

    assert both.returncode == 2 and "not allowed with argument" in both.stderr
