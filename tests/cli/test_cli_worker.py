"""``worker --once`` runs what a send left due, from its own process, on the shared database."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from _cli_support import Cli

from unified_messaging import Messenger
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.store.sql import SqlStore
from unified_messaging.vault._core import Vault


async def test_worker_once_delivers_the_reports_a_send_left_due(
    cli: Cli, database_url: str, master_keys: str
) -> None:
    messenger = Messenger(
        SqlStore(database_url),
        vault=Vault.from_spec(master_keys),
        simulator_settings=SimulatorSettings(report_delay=timedelta(0)),
    )
    async with messenger:
        workspace = await messenger.workspaces.create("Acme")
        await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME")
        key = await messenger.keys.create(workspace.id, livemode=False)
        auth = await messenger.authenticate(key.secret)
        jobs = [
            (await messenger.send(auth, {"to": to, "body": "Merhaba"})).job_id
            for to in ("+905551234567", "+905550000006")
        ]

        first = await asyncio.to_thread(cli, "worker", "--once", "--json")
        again = await asyncio.to_thread(cli, "worker", "--once")

        statuses = [(await messenger.get_message(auth, job)).status for job in jobs]
    assert first.json() == {"processed": 2}
    assert "Processed 0 items." in again.ok().stdout
    assert statuses == ["delivered", "failed"]


def test_connections_show_where_reports_go(cli: Cli, workspace_id: str) -> None:
    added = cli("connections", "add", "--workspace", workspace_id, "sms_c", "--json").json()
    listed = cli("connections", "list", "--workspace", workspace_id, "--json").json()

    assert added["dlr_path"].startswith(f"/v1/dlr/{added['id']}/")
    assert len(added["dlr_path"].rsplit("/", 1)[1]) >= 24
    assert listed[0]["dlr_path"] == added["dlr_path"]
