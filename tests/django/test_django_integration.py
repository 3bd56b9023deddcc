"""The Django integration in a real Django project (tests/django_project, set up as
docs/django.md says): its own test suites under Django's runner and pytest-django, and the
live path (``um_migrate``, ``um_send``, ``um_worker`` until SIGTERM) on Django's database."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import pytest

pytest.importorskip("django")
pytest.importorskip("pytest_django")

from unified_messaging import Messenger, TargetPolicy
from unified_messaging._vault import Vault, generate_key_spec
from unified_messaging.store.sql import store_from_url

PROJECT: Final = Path(__file__).resolve().parent.parent / "django_project"


def run(
    argv: list[str], env: dict[str, str], *, check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(  # noqa: S603 - our own interpreter and the project's manage.py
        [sys.executable, *argv], cwd=PROJECT, env=env, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UM_", "DJANGO_"))}
    env |= {"UM_DJANGO_DB": str(tmp_path / "shop.sqlite3"), **extra}
    return env


def test_djangos_test_runner_sends_to_the_simulator_with_a_fresh_outbox(tmp_path: Path) -> None:
    done = run(["manage.py", "test", "shop", "-v", "2"], environment(tmp_path))
    assert "Ran 6 tests" in done.stderr
    assert "OK" in done.stderr


def test_pytest_django_sends_to_the_simulator_with_a_fresh_outbox(tmp_path: Path) -> None:
    done = run(["-m", "pytest", "-c", "pytest.ini", "-q", "test_shop_pytest.py"],
               environment(tmp_path))  # fmt: skip
    assert "2 passed" in done.stdout


def test_an_unknown_settings_key_stops_the_project_at_start(tmp_path: Path) -> None:
    done = run(["manage.py", "check"], environment(tmp_path, UM_DJANGO_TYPO="1"), check=False)
    assert done.returncode != 0
    assert "unknown keys ['DATABASE_ULR']" in done.stderr


def test_the_live_path_migrates_sends_and_the_worker_delivers_until_sigterm(
    tmp_path: Path,
) -> None:
    keys = generate_key_spec("k1")
    env = environment(tmp_path, UM_MASTER_KEYS=keys)
    run(["manage.py", "migrate", "-v", "0"], env)  # Django's own tables
    assert "latest schema" in run(["manage.py", "um_migrate"], env).stdout
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'shop.sqlite3'}"
    port = _free_port()
    workspace_id, secret = _workspace_with_simulated_sms(
        database_url, keys, f"http://127.0.0.1:{port}/messaging/webhooks/"
    )
    signals = tmp_path / "signals.log"
    env |= {"UM_DJANGO_WORKSPACE": workspace_id, "UM_DJANGO_TEST_MODE": "1",
            "UM_DJANGO_WEBHOOK_SECRET": secret, "UM_DJANGO_SIGNAL_LOG": str(signals),
            "UM_WEBHOOK_ALLOW_PRIVATE": "1"}  # fmt: skip
    web = subprocess.Popen(  # noqa: S603 - the shop itself, receiving our webhooks
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=PROJECT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    sent = json.loads(run(["manage.py", "um_send", "--to", "0555 123 45 67", "--body", "Merhaba"],
                          env).stdout)  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "um_worker"], cwd=PROJECT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        status = _wait_for_delivery(database_url, keys, workspace_id, sent["job_id"])
        wanted = f"message.delivered {sent['job_id']}"
        deadline = time.monotonic() + 30  # the worker delivers the event to the shop
        while not (signals.exists() and wanted in signals.read_text()):
            assert time.monotonic() < deadline, "the delivery signal never arrived"
            time.sleep(0.2)
    finally:
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
        web.terminate()
        web.wait(30)

    assert sent["status"] == "sent"
    assert status == "delivered"
    assert f"message.sent {sent['job_id']}" in signals.read_text()  # each event, once verified
    assert worker.returncode == 0, err
    assert out.splitlines() == [
        "unified-messaging worker started",
        "unified-messaging worker stopped",
    ]


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _workspace_with_simulated_sms(database_url: str, keys: str, hook_url: str) -> tuple[str, str]:
    """A workspace with a simulated ``sms_a`` and a webhook endpoint at the shop; its id and
    the endpoint's secret (the shop's WEBHOOK_SECRET)."""
    import asyncio

    async def make() -> tuple[str, str]:
        loopback = TargetPolicy(allow_private=True)  # the shop listens on 127.0.0.1
        vault = Vault.from_spec(keys)
        async with Messenger(
            store_from_url(database_url), vault=vault, webhook_policy=loopback
        ) as m:
            workspace = await m.create_workspace("shop")
            await m.add_connection(workspace.id, "sms_a", default_sender="SHOP")
            endpoint = await m.create_webhook_endpoint(workspace.id, hook_url)
            return workspace.id, endpoint.secret

    return asyncio.run(make())


def _wait_for_delivery(database_url: str, keys: str, workspace_id: str, job_id: str) -> str:
    import asyncio

    async def status() -> str:
        async with Messenger(store_from_url(database_url), vault=Vault.from_spec(keys)) as m:
            principal = await m.principal(workspace_id, livemode=False)
            return (await m.get_message(principal, job_id)).status

    deadline = time.monotonic() + 30  # the simulator reports two seconds after the send
    while (found := asyncio.run(status())) == "sent" and time.monotonic() < deadline:
        time.sleep(0.3)
    return found


def test_a_forked_child_makes_its_own_messenger(tmp_path: Path) -> None:
    script = """
import os, django
from django.conf import settings
settings.configure(INSTALLED_APPS=["unified_messaging.contrib.django"],
                   UNIFIED_MESSAGING={"DATABASE_URL": "memory"})
django.setup()
from unified_messaging.contrib.django import get_messenger
parent = get_messenger()
parent.create_workspace("parent")
pid = os.fork()
if pid == 0:
    child = get_messenger()
    ok = child is not parent and child.list_workspaces() == []  # its own, working loop
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert [w.name for w in get_messenger().list_workspaces()] == ["parent"]
print("ok")
"""
    done = run(["-c", script], environment(tmp_path))
    assert done.stdout.strip() == "ok"


def test_every_event_type_has_its_signal() -> None:
    from unified_messaging.contrib.django.signals import BY_TYPE
    from unified_messaging.webhooks import EVENT_TYPES

    assert set(BY_TYPE) == set(EVENT_TYPES)
    documented = (PROJECT.parent.parent / "docs" / "django.md").read_text("utf-8")
    for event_type in EVENT_TYPES:
        assert f"`message_{event_type.removeprefix('message.')}`" in documented
