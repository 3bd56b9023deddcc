"""A provider account in a real browser against the real ``serve --demo``: a connection to a
fake Verimor (a real socket, Verimor's wire format) added through the dashboard, read with
"Read now": its balance shows on Connections and Overview, sender names the provider lists
are shown as text however hostile, and a threshold above the balance puts the warning on the
Overview."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from _browser_support import Demo
from fakes._server import serve
from fakes.verimor import FakeVerimor
from playwright.sync_api import Page, expect

from unified_messaging.vault._core import generate_key_spec

SHOTS = os.environ.get("UM_DASHBOARD_SCREENSHOTS")
HOSTILE = '<img src=x onerror="alert(1)"><b>BAŞLIK</b> & "X"'


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """``serve --demo`` as the shared fixture runs it, with its environment kept so that the
    command line can change its connections (the demo's sms_c serves test keys only)."""
    home = tmp_path_factory.mktemp("serve")
    env = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
    env |= {
        "UM_MASTER_KEYS": generate_key_spec("k1"),
        "UM_DATABASE_URL": f"sqlite+aiosqlite:///{home / 'um.db'}",
    }
    with (home / "serve.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "unified_messaging", "serve", "--port", "0", "--demo",
             "--json"],
            cwd=home, env=env, stdout=subprocess.PIPE, stderr=log, text=True,
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        printed = json.loads(proc.stdout.readline())
        demo = Demo(printed["url"], printed["api_key"], printed["workspace_id"],
                    printed["dashboard_login_url"])  # fmt: skip
        _ENV.update(env)
        yield demo
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


_ENV: dict[str, str] = {}


def _cli(*args: str) -> str:
    done = subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
        [sys.executable, "-m", "unified_messaging", *args],
        env=_ENV, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout


@pytest.fixture(scope="module")
def verimor() -> Iterator[tuple[FakeVerimor, str]]:
    fake = FakeVerimor(credits=4321, headers=("UMTEST", HOSTILE))
    ready: list[str] = []
    started, stop = threading.Event(), threading.Event()

    async def run() -> None:
        async with serve(fake.app) as url:
            ready.append(url)
            started.set()
            await asyncio.to_thread(stop.wait)

    thread = threading.Thread(target=lambda: asyncio.run(run()), daemon=True)
    thread.start()
    assert started.wait(10)
    yield fake, ready[0]
    stop.set()
    thread.join(10)


def test_balance_and_hostile_senders_show_as_text(
    page: Page, demo: Demo, verimor: tuple[FakeVerimor, str]
) -> None:
    fake, url = verimor
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))

    listed = json.loads(_cli("connections", "list", "--workspace", demo.workspace_id, "--json"))
    [old] = [c["id"] for c in listed if c["provider"] == "sms_c"]
    _cli("connections", "remove", old)
    page.goto(demo.url + "/dashboard/connections/new?provider=sms_c")
    page.fill("[name=cred_username]", fake.username)
    page.fill("[name=cred_password]", fake.password)
    page.fill("[name=default_sender]", "UMTEST")
    page.fill("[name=base_url]", url)
    page.get_by_role("button", name="Add connection").click()
    expect(page.locator("#account-h")).to_have_text("Provider account")
    expect(page.locator("section[aria-labelledby=account-h]")).to_contain_text("not read yet")

    page.get_by_role("button", name="Read now").click()
    account = page.locator("section[aria-labelledby=account-h]")
    expect(account).to_contain_text("4321.0 SMS")
    expect(account.locator("ul.senders li")).to_have_text(["UMTEST", HOSTILE])
    expect(page.locator("img[src=x]")).to_have_count(0)
    _shot(page, "connection-account")

    page.fill("[name=threshold]", "5000")
    page.get_by_role("button", name="Save alert").click()
    expect(account).to_contain_text("low")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Connections").click()
    row = page.get_by_role("row").filter(has_text="sms_c")
    expect(row).to_contain_text("4321.0 SMS")
    expect(row).to_contain_text("(Europe/Istanbul)")  # read time in the workspace's zone
    expect(row).to_contain_text("low")
    _shot(page, "connections-balance")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview").click()
    expect(page.get_by_role("alert")).to_contain_text("account is low: 4321.0 SMS left")
    _shot(page, "overview-balance-low")
    assert fake.password not in page.content()
    assert dialogs == []
    assert page.errors == []  # type: ignore[attr-defined]
