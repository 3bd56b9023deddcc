"""What the library loads only when it is needed.

A Messenger that is built, opened and closed (every one-shot CLI command makes one) imports
no provider adapter, no HTTP client and no phone-number metadata, and makes no HTTP client
or SSL context: the adapters come with the first live adapter or credentials check, the
webhook transport with the first delivery. Checked through ``sys.modules`` in a fresh
interpreter, so the answer never depends on the machine's speed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from unified_messaging import ManualClock, Vault
from unified_messaging._domain import Connection
from unified_messaging._routing.adapters import AdapterPool
from unified_messaging.providers.base import ProviderAdapter
from unified_messaging.providers.registry import LIVE_ADAPTERS
from unified_messaging.providers.simulator import SimulatorSettings
from unified_messaging.vault._core import generate_key_spec
from unified_messaging.webhooks._sender import TargetPolicy, WebhookSender

#: Loaded by a live send, a credentials check, a delivery or a recipient check, never by a
#: Messenger that is only opened and closed.
ON_DEMAND = (
    "httpx",
    "httpcore",
    "anyio",
    "tenacity",
    "phonenumbers",
    "unified_messaging.providers._http",
    "unified_messaging.providers.registry",
    "unified_messaging.providers.netgsm",
    "unified_messaging.webhooks._transport",
    "unified_messaging.webhooks._http11",
)

_PROBE = """
import asyncio, json, sys
from unified_messaging import Messenger
from unified_messaging.webhooks._sender import WebhookSender
from unified_messaging.store.sql import store_from_url

async def main() -> None:
    async with Messenger(store_from_url(sys.argv[1])) as messenger:
        await messenger.workspaces.list()
    async with WebhookSender():
        pass

asyncio.run(main())
print(json.dumps(sorted(sys.modules)))
"""


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("UM_")}


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_messenger_opened_and_closed_loads_nothing_it_did_not_use(
    tmp_path: Path, kind: str
) -> None:
    url = "memory" if kind == "memory" else f"sqlite:///{tmp_path / 'um.db'}"
    proc = subprocess.run(  # noqa: S603 - our own interpreter and fixed code
        [sys.executable, "-c", _PROBE, url],
        env={**_environ(), "UM_MASTER_KEYS": generate_key_spec("k1")},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "unified_messaging._messenger" in modules
    found = [n for n in ON_DEMAND if any(m == n or m.startswith(f"{n}.") for m in modules)]
    assert found == []


def _pool(live_adapters: Mapping[str, object] | None) -> AdapterPool:
    return AdapterPool(
        vault=Vault.generate(),
        clock=ManualClock(),
        live_adapters=live_adapters,  # type: ignore[arg-type]
        simulator_settings=SimulatorSettings(),
        on_simulated=None,
    )


def test_the_credentials_schemas_are_the_shipped_adapters_ones() -> None:
    schemas = _pool(None).credential_schemas
    assert dict(schemas) == {code: spec.credentials for code, spec in LIVE_ADAPTERS.items()}
    assert schemas["sms_a"] is LIVE_ADAPTERS["sms_a"].credentials
    assert "sms_z" not in schemas


def test_an_adapter_a_caller_brings_checks_its_own_credentials() -> None:
    def own(connection: Connection, credentials: Mapping[str, str]) -> ProviderAdapter:
        raise AssertionError("never built here")

    schemas = _pool({"sms_a": LIVE_ADAPTERS["sms_a"].factory, "sms_b": own}).credential_schemas
    # Only a provider served by its shipped adapter is checked against the shipped schema.
    assert dict(schemas) == {"sms_a": LIVE_ADAPTERS["sms_a"].credentials}
    assert len(schemas) == 1
    assert list(schemas) == ["sms_a"]


async def test_a_closed_sender_refuses_to_deliver_rather_than_open_a_new_client() -> None:
    sender = WebhookSender(policy=TargetPolicy(allow_private=True))
    await sender.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await sender.deliver("http://127.0.0.1:9/hook", b"{}", {})
