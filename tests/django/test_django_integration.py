"""The Django integration in a real Django project (tests/django_project, set up as
docs/django.md says): its own test suites under Django's runner and pytest-django, the live
path (``um_migrate``, ``um_send``, ``um_worker`` until SIGTERM) beside Django's SQLite
database, sends inside the request's transaction (``ATOMIC_REQUESTS``), and a clean exit."""

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
from unified_messaging.store.sql import store_from_url
from unified_messaging.vault._core import Vault, generate_key_spec

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
    assert "Ran 12 tests" in done.stderr
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
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'shop.unified_messaging.sqlite3'}"
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

    done = run(["manage.py", "um_send", "--to", "0555 123 45 67", "--body", "Merhaba"], env)
    sent = json.loads(done.stdout)
    assert done.stderr == ""  # no atexit traceback as the command's messenger closes
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
            workspace = await m.workspaces.create("shop")
            await m.connections.add(workspace.id, "sms_a", default_sender="SHOP")
            endpoint = await m.webhooks.create(workspace.id, hook_url)
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
parent.workspaces.create("parent")
pid = os.fork()
if pid == 0:
    child = get_messenger()
    ok = child is not parent and child.workspaces.list() == []  # its own, working loop
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert [w.name for w in get_messenger().workspaces.list()] == ["parent"]
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
        assert f"`{event_type.replace('.', '_')}`" in documented


def _live_shop(tmp_path: Path, *, ours: Path | None = None) -> dict[str, str]:
    """The shop migrated (Django's tables and ours), with a workspace whose simulated ``sms_a``
    its views send through; the environment to run it in. Our tables: in ``ours`` if given
    (``DATABASE_URL`` set to it), else where ``"django"`` puts them."""
    keys = generate_key_spec("k1")
    env = environment(tmp_path, UM_MASTER_KEYS=keys)
    if ours is not None:
        env["UM_DJANGO_DATABASE_URL"] = f"sqlite+aiosqlite:///{ours}"
    run(["manage.py", "migrate", "-v", "0"], env)
    run(["manage.py", "um_migrate"], env)
    ours = ours or tmp_path / "shop.unified_messaging.sqlite3"  # beside Django's shop.sqlite3
    assert ours.exists()
    workspace_id, _ = _workspace_with_simulated_sms(
        f"sqlite+aiosqlite:///{ours}", keys, "https://shop.example/messaging/webhooks/"
    )
    return env | {"UM_DJANGO_WORKSPACE": workspace_id, "UM_DJANGO_TEST_MODE": "1"}


#: Ships orders through the shop's view, in its request transaction (ATOMIC_REQUESTS), as a
#: browser would; prints each answer, then what unified-messaging stored.
_SHIP: Final = """
import json
from django.test import Client
from unified_messaging.contrib.django import get_messenger, get_principal
from shop.models import Order

client = Client()
for form in FORMS:
    answer = client.post("/ship/", form)
    print(json.dumps({"status": answer.status_code, **answer.json()}))
page = get_messenger().list_messages(get_principal())
print(json.dumps({"stored": sorted(r.to for r in page.data),
                  "orders": {o.number: o.sms_job_id for o in Order.objects.all()}}))
"""


def _ship(env: dict[str, str], forms: list[dict[str, str]]) -> tuple[list[dict[str, object]], str]:
    script = f"FORMS = {forms!r}\n{_SHIP}"
    done = run(["manage.py", "shell", "--no-imports", "-c", script], env)
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_a_send_inside_the_request_transaction_on_sqlite_is_sent_and_the_order_kept(
    tmp_path: Path,
) -> None:
    env = _live_shop(tmp_path)

    (answer, stored), stderr = _ship(env, [{"order": "A-1", "to": "0555 123 45 67"}])

    assert answer["status"] == 201, answer  # not a 503 after waiting for the write lock
    assert stored == {"stored": ["+905551234567"], "orders": {"A-1": answer["job_id"]}}
    assert stderr == ""


def test_send_on_commit_sends_after_a_commit_and_nothing_after_a_rollback(
    tmp_path: Path,
) -> None:
    env = _live_shop(tmp_path)

    (rolled_back, committed, stored), _ = _ship(env, [
        {"order": "B-1", "to": "0555 123 45 68", "on_commit": "1", "fail": "1"},
        {"order": "B-2", "to": "0555 123 45 69", "on_commit": "1"},
    ])  # fmt: skip

    assert (rolled_back["status"], committed["status"]) == (402, 201)
    assert stored["stored"] == ["+905551234569"]  # B-1's message was never sent
    orders = stored["orders"]
    assert isinstance(orders, dict)
    assert list(orders) == ["B-2"]
    assert str(orders["B-2"]).startswith("msg_")  # on_sent kept the job id


def test_the_settings_repr_masks_the_database_password(tmp_path: Path) -> None:
    show = "import django; django.setup()\n"  # the settings only: no database is opened
    show += "from unified_messaging.contrib.django.settings import get_settings\n"
    show += "print(repr(get_settings()))"
    env = environment(tmp_path, UM_DJANGO_DATABASE_URL="postgresql://shop:s3cret-pw@db/shop",
                      DJANGO_SETTINGS_MODULE="shop.settings")  # fmt: skip

    shown = run(["-c", show], env).stdout

    assert "s3cret-pw" not in shown
    assert "'postgresql://shop:***@db/shop'" in shown, shown


def test_the_settings_repr_masks_the_password_of_djangos_postgresql_database(
    tmp_path: Path,
) -> None:
    # Our app alone (no models), so Django never loads its PostgreSQL driver.
    script = """
import django
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["unified_messaging.contrib.django"],
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "shop",
                           "USER": "shop", "PASSWORD": "s3cret-pw", "HOST": "db"}},
    UNIFIED_MESSAGING={"DATABASE_URL": "django"},
)
django.setup()
from unified_messaging.contrib.django.settings import get_settings
print(repr(get_settings()))
"""
    shown = run(["-c", script], environment(tmp_path)).stdout

    assert "s3cret-pw" not in shown
    assert "'postgresql+asyncpg://shop:***@db/shop'" in shown, shown


def test_a_management_command_that_sent_exits_without_a_traceback(tmp_path: Path) -> None:
    # The messenger closes at exit, after concurrent.futures has stopped every executor: the
    # SQLite writer's lock must still be let go without a traceback.
    env = _live_shop(tmp_path, ours=tmp_path / "messaging.sqlite3")

    done = run(["manage.py", "um_send", "--to", "0555 123 45 67", "--body", "Merhaba"], env)

    assert json.loads(done.stdout)["status"] == "sent"
    assert done.stderr == ""


def test_a_send_needs_no_master_keys_until_a_secret_is_opened(tmp_path: Path) -> None:
    env = _live_shop(tmp_path, ours=tmp_path / "messaging.sqlite3")
    del env["UM_MASTER_KEYS"]  # the workspace's secrets were sealed with them, elsewhere

    checked = run(["manage.py", "check"], env)
    done = run(["manage.py", "um_send", "--to", "0555 123 45 67", "--body", "Merhaba"], env)

    assert "no issues" in checked.stdout
    assert json.loads(done.stdout)["status"] == "sent"  # test mode: no credential is opened
