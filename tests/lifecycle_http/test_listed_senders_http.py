"""A sender the provider does not list as approved, through the REST app on a real socket
(SQLite and PostgreSQL), with the real NetGSM adapter against its loopback fake: before any
reading the provider decides (NetGSM refuses the header itself); once the worker has read the
header list, ``POST /v1/messages`` answers 422 ``SENDER_NOT_APPROVED`` and calls nobody; a
listed sender still goes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from _sql_apps import BACKENDS, sql_store
from _support import bearer, serving
from fakes._server import serve
from fakes.netgsm import NetgsmFake

from unified_messaging import Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.providers.netgsm import NetgsmAdapter


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_unlisted_sender_is_a_422_once_the_list_is_read(
    backend: str, tmp_path: Path
) -> None:
    netgsm = NetgsmFake(headers=("ACME",))
    async with sql_store(backend, tmp_path) as store:
        messenger = Messenger(store, vault=Vault.generate(), live_adapters={"sms_a": NetgsmAdapter})
        async with (
            serve(netgsm.app) as netgsm_url,
            messenger,
            serving(create_app(messenger, worker=False), lifespan=False) as url,
            httpx.AsyncClient(base_url=url, timeout=10) as client,
        ):
            workspace = await messenger.workspaces.create("senders", recipient_limit=None)
            connection = await messenger.connections.add(
                workspace.id, "sms_a", base_url=netgsm_url, default_sender="ACME",
                credentials={"usercode": netgsm.usercode, "password": netgsm.password},
            )  # fmt: skip
            key = await messenger.keys.create(workspace.id, livemode=True)

            async def send(sender: str) -> httpx.Response:
                return await client.post(
                    "/v1/messages", headers=bearer(key.secret),
                    json={"to": "+905321110001", "body": "Merhaba", "sender": sender},
                )  # fmt: skip

            unknown_yet = await send("OTHER")
            assert unknown_yet.status_code in (200, 201, 202), unknown_yet.text
            assert unknown_yet.json()["status"] == "failed"  # NetGSM's own code 40
            assert len(netgsm.sends) == 1

            await messenger.accounts.schedule(connection.id)
            await messenger.worker().run_until_idle()

            refused = await send("OTHER")
            assert refused.status_code == 422, refused.text
            assert refused.json()["error"]["code"] == "SENDER_NOT_APPROVED"
            assert len(netgsm.sends) == 1  # refused before any call

            listed = await send("ACME")
            assert listed.json()["status"] == "sent", listed.text
            assert len(netgsm.sends) == 2
