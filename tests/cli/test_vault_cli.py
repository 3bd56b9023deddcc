"""The vault through the real command line (items 1, 7 and 12).

- ``vault rotate`` re-seals connection credentials and webhook secrets (current and
  previous), says how many of each, and afterwards the old key can go: everything opens with
  the new key alone.
- Without ``UM_MASTER_KEYS`` the CLI warns and uses the 0600 development key file, so what one
  process seals the next opens; ``serve`` starts that way too.
- A malformed ``UM_MASTER_KEYS`` or a token under a key id that is not configured is a
  configuration error: one line naming the variable, exit 78 (``EX_CONFIG``), no traceback,
  no key material; ``serve`` answers such a send 500 ``INTERNAL_ERROR`` and logs what to fix.
"""

from __future__ import annotations

import asyncio
import json
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from _cli_support import Cli, Result
from fakes._server import serve
from fakes.netgsm import NetgsmFake

from unified_messaging.store.sql import SqlStore
from unified_messaging.vault._core import Vault, generate_key_spec
from unified_messaging.webhooks._admin import open_secret

USERCODE, PASSWORD = "8501112233", "pw-sealed-never-printed-4d1"
EX_CONFIG = 78


def add_netgsm(cli: Cli, workspace_id: str, base_url: str, **env: str) -> str:
    added = cli(
        "connections", "add", "--workspace", workspace_id, "sms_a", "--json",
        "--credential", f"usercode={USERCODE}", "--credential", f"password={PASSWORD}",
        "--default-sender", "ACME", "--base-url", base_url, **env,
    ).json()  # fmt: skip
    return str(added["id"])


def one_configuration_line(result: Result) -> str:
    """The one stderr line of a configuration error, checked for shape."""
    assert result.returncode == EX_CONFIG, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: configuration: "), lines[0]
    assert "Traceback" not in result.output
    assert PASSWORD not in result.output
    return lines[0]


# -------------------------------------------------------------------------- item 1


async def test_vault_rotate_reseals_credentials_and_webhook_secrets_then_the_old_key_can_go(
    cli: Cli, workspace_id: str, master_keys: str, database_url: str
) -> None:
    fake = NetgsmFake(usercode=USERCODE, password=PASSWORD)
    new_key = generate_key_spec("k2")
    async with serve(fake.app) as netgsm_url:
        connection_id = await asyncio.to_thread(add_netgsm, cli, workspace_id, netgsm_url)
        hook = ("webhooks", "add", "--workspace", workspace_id, "https://hooks.example/um")
        created = cli(*hook, "--json").json()
        endpoint_id = created["id"]
        rotated = cli("webhooks", "rotate-secret", endpoint_id, "--json").json()

        both = {"UM_MASTER_KEYS": f"{new_key},{master_keys}"}
        report = cli("vault", "rotate", "--json", **both).json()
        again = cli("vault", "rotate", **both).ok()
        # The old key is gone: the provider still gets the stored credentials.
        checked = await asyncio.to_thread(
            cli, "connections", "test", connection_id, "--json", UM_MASTER_KEYS=new_key
        )

    assert report == {
        "rotated": 3,
        "connections": 1,
        "webhook_secrets": 2,
        "expired_secrets_removed": 0,
        "iys_passwords": 0,
        "active_key_id": "k2",
    }
    assert again.stdout.strip() == (
        "Re-encrypted under key k2: connections: 0, webhook secrets: 0."
    )
    assert checked.json() == {
        "id": connection_id,
        "provider": "sms_a",
        "ok": True,
        "max_parts": None,
    }

    # Everything opens under the new key alone, read straight from the file.
    new_only = Vault.from_spec(new_key)
    store = SqlStore(database_url)
    await store.open()
    try:
        endpoint = await store.get_webhook_endpoint(endpoint_id)
        connection = await store.get_connection(connection_id)
    finally:
        await store.close()
    assert endpoint is not None and connection is not None
    ids = {"workspace_id": workspace_id, "endpoint_id": endpoint_id}
    assert open_secret(new_only, endpoint.secret_ciphertext, **ids) == rotated["secret"]
    assert endpoint.previous_secret_ciphertext is not None
    assert open_secret(new_only, endpoint.previous_secret_ciphertext, **ids) == created["secret"]
    assert new_only.decrypt_json(
        connection.credentials, workspace_id=workspace_id, connection_id=connection_id
    ) == {"usercode": USERCODE, "password": PASSWORD}


# -------------------------------------------------------------------------- item 7


async def test_without_master_keys_the_dev_key_file_carries_credentials_to_the_next_process(
    cli: Cli, workspace_id: str, tmp_path: Path
) -> None:
    fake = NetgsmFake(usercode=USERCODE, password=PASSWORD)
    no_keys = {"UM_MASTER_KEYS": ""}
    async with serve(fake.app) as netgsm_url:
        connection_id = await asyncio.to_thread(
            add_netgsm, cli, workspace_id, netgsm_url, **no_keys
        )
        checked = await asyncio.to_thread(
            cli, "connections", "test", connection_id, "--json", **no_keys
        )

    key_file = tmp_path / ".um_master_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert checked.json() == {
        "id": connection_id,
        "provider": "sms_a",
        "ok": True,
        "max_parts": None,
    }
    assert "warning: No UM_MASTER_KEYS configured: using the development master key file" in (
        checked.stderr
    )
    assert key_file.read_text().strip().partition(":")[2] not in checked.output


@contextmanager
def serving(cli: Cli, **env: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``serve --json`` in the background on a free port: (its URL, the process)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "unified_messaging", "serve", "--port", "0", "--json"],
        cwd=cli.cwd,
        env=cli.environ(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    watchdog = threading.Timer(60, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.communicate()[1]
        yield json.loads(line)["url"], proc
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_serve_without_master_keys_starts_on_the_dev_key_file_and_says_so(
    cli: Cli, tmp_path: Path
) -> None:
    with serving(cli, UM_MASTER_KEYS="") as (url, proc):
        health = httpx.get(f"{url}/v1/health", timeout=10)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)

    assert health.status_code == 200
    assert proc.returncode == 0, stderr
    assert "No UM_MASTER_KEYS configured: created the development master key file" in stderr
    assert stat.S_IMODE((tmp_path / ".um_master_key").stat().st_mode) == 0o600


# -------------------------------------------------------------------------- item 12

KEY = generate_key_spec("k1").partition(":")[2]
MALFORMED = {
    ",": "UM_MASTER_KEYS: entry 1 is empty (expected 'kid:base64key').",
    "k1:": "UM_MASTER_KEYS: entry 1 (kid 'k1') has no key after ':'.",
    "k1:notbase64": "UM_MASTER_KEYS: entry 1 (kid 'k1'): the key is not valid base64.",
    f"k1:{KEY[:22]}": (
        "UM_MASTER_KEYS: entry 1 (kid 'k1'): the key must decode to 32 bytes (AES-256), got 16."
    ),
    f"k1:{KEY},k1:{KEY[::-1]}": "UM_MASTER_KEYS: entry 2: duplicate key id 'k1'.",
    f"k1:{KEY[:20]} {KEY[20:]}": "UM_MASTER_KEYS: entry 1 (kid 'k1'): the key is not valid base64.",
    f"kı:{KEY}": "UM_MASTER_KEYS: entry 1: invalid key id; key ids must match [A-Za-z0-9_-]{1,32}.",
    f"k1:{KEY[:-1]}é": "UM_MASTER_KEYS: entry 1 (kid 'k1'): the key is not valid base64.",
}


def test_a_malformed_um_master_keys_is_one_line_naming_it_and_exit_78(cli: Cli) -> None:
    values = list(MALFORMED)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda v: cli("workspaces", "list", UM_MASTER_KEYS=v), values))

    for value, result in zip(values, results, strict=True):
        line = one_configuration_line(result)
        assert line == f"error: configuration: {MALFORMED[value]}", value
        assert result.stdout == ""
        for fragment in (KEY[:20], KEY[20:], KEY[::-1][:20], "notbase64"):
            assert fragment not in result.output, value


async def test_a_token_under_a_key_id_not_configured_is_exit_78_naming_the_variable_and_id(
    cli: Cli, workspace_id: str, database_url: str
) -> None:
    connection_id = add_netgsm(cli, workspace_id, "http://127.0.0.1:9")
    other = {"UM_MASTER_KEYS": generate_key_spec("k2")}

    checked, rotate = cli.many(
        [("connections", "test", connection_id), ("vault", "rotate")], **other
    )

    expected = (
        "error: configuration: Sealed data uses master key id 'k1', which is not configured "
        "(keys from UM_MASTER_KEYS: k2). Add key 'k1' back to UM_MASTER_KEYS after the "
        "active key, and run 'vault rotate' before dropping it."
    )
    assert one_configuration_line(checked) == expected
    assert one_configuration_line(rotate) == expected


def test_serve_answers_500_and_logs_which_key_is_missing(cli: Cli, workspace_id: str) -> None:
    add_netgsm(cli, workspace_id, "http://127.0.0.1:9")
    live_key = cli("keys", "create", "--workspace", workspace_id, "--json").json()["api_key"]

    with serving(cli, UM_MASTER_KEYS=generate_key_spec("k2")) as (url, proc):
        sent = httpx.post(
            f"{url}/v1/messages",
            headers={"Authorization": f"Bearer {live_key}"},
            json={"to": "+905551234567", "body": "Merhaba"},
            timeout=10,
        )
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)

    body: Any = sent.json()
    assert sent.status_code == 500
    assert body == {"error": {"code": "INTERNAL_ERROR", "message": "Internal error."}}
    assert "configuration error: Sealed data uses master key id 'k1'" in stderr
    assert "UM_MASTER_KEYS" in stderr
    assert "Traceback" not in stderr
    assert PASSWORD not in stderr
