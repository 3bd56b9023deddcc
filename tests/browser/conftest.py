"""Browser tests: Debian's chromium, driven by playwright, against the real
``unified-messaging serve --demo`` on a SQLite file (DESIGN §5: never ``playwright install``).

One server and one browser per module, since each start costs seconds. Without
``/usr/bin/chromium`` these tests are skipped with the reason printed; ``.ci/run`` installs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _browser_support import Demo

from unified_messaging.vault._core import generate_key_spec

CHROMIUM = Path(os.environ.get("UM_TEST_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)

if not CHROMIUM.exists():
    pytest.skip(
        f"browser tests need chromium at {CHROMIUM}: apt-get install -y chromium",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    home = tmp_path_factory.mktemp("serve")
    env = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
    env |= {
        "UM_MASTER_KEYS": generate_key_spec("k1"),
        "UM_DATABASE_URL": f"sqlite+aiosqlite:///{home / 'um.db'}",
        "UM_WEBHOOK_ALLOW_PRIVATE": "1",
    }
    with (home / "serve.log").open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "unified_messaging", "serve", "--port", "0", "--demo",
             "--json"],
            cwd=home, env=env, stdout=subprocess.PIPE, stderr=log, text=True,
        )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, (home / "serve.log").read_text()
        printed = json.loads(line)
        yield Demo(printed["url"], printed["api_key"], printed["workspace_id"],
                   printed["dashboard_login_url"])  # fmt: skip
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def page(browser: Browser, demo: Demo) -> Iterator[Page]:
    """One tab, signed in with the demo's one-time link; console errors (a Content-Security-
    Policy violation among them) are collected in ``page.errors``."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.errors = errors  # type: ignore[attr-defined]
    tab.goto(demo.login_url)
    tab.get_by_role("button", name="Sign in").click()
    tab.wait_for_url(demo.url + "/dashboard/")
    try:
        yield tab
    finally:
        context.close()
