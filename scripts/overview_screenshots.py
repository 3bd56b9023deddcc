"""Screenshots of the Overview's delivery charts, for docs/dashboard.md.

The real dashboard (``create_app(..., dashboard=True)`` under uvicorn) over a SQLite store
that holds 30 days of made-up live traffic: records written through the store as the send
path writes them (so the store's own triggers count them), five providers with their own
delivery rates and report times, some fallbacks, some one-time codes. The clock is fixed,
so the pictures are the same on every run. Debian's chromium through playwright (never
``playwright install``) takes the page at 1280 px for each window and at 390 px (a phone).

    python scripts/overview_screenshots.py [OUT_DIR]     # default docs/images/dashboard
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import sys
import tempfile
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import uvicorn
from playwright.sync_api import sync_playwright

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging._domain import Attempt, MessageRecord
from unified_messaging.asgi import create_app
from unified_messaging.dashboard import issue_login_link
from unified_messaging.store.sql import SqlStore
from unified_messaging.verifications._records import Verification

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images/dashboard")
CHROMIUM = os.environ.get("UM_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
NOW = datetime(2026, 3, 2, 11, 40, tzinfo=UTC)  # 14:40 in Istanbul
OPERATOR = "support@example.com"
MESSAGES = 9000
_VAULT = Vault.generate()
#: provider: (share of traffic, delivered, refused at submit, median report seconds)
PROVIDERS = {
    "sms_a": (0.45, 0.962, 0.01, 4.0),
    "sms_b": (0.25, 0.931, 0.03, 9.0),
    "sms_c": (0.18, 0.978, 0.005, 2.5),
    "bizchat": (0.08, 0.99, 0.0, 1.2),
    "chatbot": (0.04, 0.995, 0.0, 0.4),
}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as home:
        url = f"sqlite+aiosqlite:///{home}/um.db"
        login = asyncio.run(_seed(url))
        port = _free_port()
        server = _serve(url, port)
        try:
            _shoot(f"http://127.0.0.1:{port}", login)
        finally:
            server.should_exit = True
    print(f"screenshots in {OUT}/")
    return 0


async def _seed(url: str) -> str:
    messenger = Messenger(SqlStore(url), clock=ManualClock(NOW), vault=_VAULT)
    async with messenger:
        workspace = await messenger.workspaces.create("Acme Kargo")
        rng = random.Random(20260302)  # noqa: S311 (made-up traffic, the same every run)
        records = [_record(workspace.id, i, rng) for i in range(MESSAGES)]
        for start in range(0, len(records), 500):
            await messenger.store.insert_messages(records[start : start + 500])
        for i in range(240):
            await messenger.store.add_verification(_verification(workspace.id, i, rng))
        await messenger.users.create(OPERATOR, None, operator=True)
        return await issue_login_link(messenger, OPERATOR)


def _record(workspace_id: str, index: int, rng: random.Random) -> MessageRecord:
    """One live message of the last 30 days, busier by day (Istanbul) and growing lately."""
    while True:
        back = timedelta(days=30) * (rng.random() ** 1.25)
        created = NOW - back
        local_hour = (created.hour + 3) % 24
        if rng.random() < (0.25 if local_hour < 8 or local_hour >= 22 else 1.0):
            break
    names = list(PROVIDERS)
    first = rng.choices(names, [PROVIDERS[n][0] for n in names])[0]
    _, delivered, refused, median = PROVIDERS[first]
    attempts: list[Attempt] = []
    provider = first
    if rng.random() < refused:
        attempts.append(Attempt(first, "rejected", created))
        provider = "sms_c" if first != "sms_c" else "sms_a"
        _, delivered, refused, median = PROVIDERS[provider]
    sent_at = created + timedelta(milliseconds=rng.randrange(80, 400))
    recent = back < timedelta(minutes=3)
    roll = rng.random()
    if recent and roll < 0.6:
        status, state, final = "sent", "accepted", None
    elif roll < delivered:
        status, state = "delivered", "delivered"
        final = sent_at + timedelta(seconds=rng.lognormvariate(0, 0.6) * median)
    elif roll < delivered + (1 - delivered) * 0.5:
        status, state, final = "failed", "failed", sent_at + timedelta(seconds=median * 3)
    elif roll < delivered + (1 - delivered) * 0.8:
        status, state, final = "expired", "expired", sent_at + timedelta(hours=24)
    else:
        status, state, final = "unknown", "unknown", sent_at + timedelta(hours=48)
    attempts.append(Attempt(provider, state, sent_at, provider_message_id=f"p{index}"))
    channel = provider if provider in ("chatbot", "bizchat") else "sms"
    return MessageRecord(
        job_id=f"msg_{index:08d}", workspace_id=workspace_id, livemode=True, status=status,
        to=f"+90555{rng.randrange(10**7):07d}", channel=channel, provider=provider,
        created_at=created, updated_at=final or sent_at, text="Siparişiniz kargoya verildi.",
        sent_at=sent_at, final_at=final, attempts=tuple(attempts), version=1 if final else 0,
    )  # fmt: skip


def _verification(workspace_id: str, index: int, rng: random.Random) -> Verification:
    created = NOW - timedelta(days=30) * rng.random()
    status = rng.choices(["approved", "expired", "failed"], [0.82, 0.15, 0.03])[0]
    verification = Verification(
        id=f"ver_{index:06d}", workspace_id=workspace_id, livemode=True,
        to=f"+90555{index:07d}", channel="sms", status="pending", code_digest="k1.x",
        code_length=6, locale="tr", created_at=created, updated_at=created,
        expires_at=created + timedelta(minutes=10), max_checks=5,
    )  # fmt: skip
    return replace(verification, status=status)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _serve(url: str, port: int) -> uvicorn.Server:
    messenger = Messenger(SqlStore(url), clock=ManualClock(NOW), vault=_VAULT)
    app = create_app(messenger, dashboard=True, mcp=False, worker=False)
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    for _ in range(200):
        if server.started:
            return server
        time.sleep(0.05)
    raise RuntimeError("uvicorn did not start")


def _shoot(url: str, login: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(url + "/dashboard" + login)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(url + "/dashboard/")
        page.get_by_role("button", name="Switch to live data").click()
        for window, name in (("7d", "overview-charts"), ("24h", "overview-charts-24h"),
                             ("30d", "overview-charts-30d")):  # fmt: skip
            page.goto(f"{url}/dashboard/?window={window}")
            page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})
        page.goto(f"{url}/dashboard/?window=7d")
        page.screenshot(path=str(OUT / "overview-charts-phone.png"), full_page=True)
        browser.close()


if __name__ == "__main__":
    sys.exit(main())
