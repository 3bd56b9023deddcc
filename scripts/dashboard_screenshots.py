"""Screenshots of each dashboard page from a seeded demo, for docs/dashboard.md.

Starts the real ``unified-messaging serve --demo`` on a fresh SQLite file, sends a few test
messages over REST (the simulator's magic numbers give a delivered one, a fallback, an IYS
refusal, an expired one), waits until the server's worker has settled them, signs in with the
printed one-time link in Debian's chromium (playwright, never ``playwright install``) and
saves one PNG per page. Run it as ``scripts/screenshots`` (it installs what it needs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from playwright.sync_api import Page, sync_playwright

from unified_messaging.vault._core import generate_key_spec

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images/dashboard")
CHROMIUM = os.environ.get("UM_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
SENDS = (
    {"to": "+90 532 111 22 33", "body": "Siparişiniz kargoya verildi."},
    {"to": "+905550000012", "body": "Doğrulama kodunuz: 482913", "fallback": ["sms_b", "sms_c"]},
    {"to": "+905550000002", "body": "Kampanya: kargo bedava!"},
    {"to": "+905550000004", "body": "Randevunuz yarın 10:00."},
    {"to": "+90 533 444 55 66", "template": "order_shipped",
     "variables": {"name": "Ayşe", "order": "A-1042"}},
)  # fmt: skip
FINAL = {"delivered", "expired", "rejected", "failed", "unknown"}
#: İYS consents for the Consents page: the second one's history has a RET after its ONAY.
CONSENTS = (
    {"recipient": "+90 532 111 22 33", "status": "ONAY", "source": "HS_WEB"},
    {"recipient": "+90 533 444 55 66", "status": "ONAY", "source": "HS_ISLAK_IMZA"},
    {"recipient": "+90 533 444 55 66", "status": "RET", "source": "HS_MESAJ"},
    {"recipient": "+90 542 000 11 22", "status": "ONAY", "recipient_type": "TACIR"},
    {"recipient": "ayse@example.com", "type": "EPOSTA", "status": "ONAY", "source": "HS_EPOSTA"},
)
COMMERCIAL_DRAFT = "Kışa özel tüm ürünlerde %20 indirim! Son gün pazar."


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
        env |= {"UM_MASTER_KEYS": generate_key_spec("k1"), "UM_WEBHOOK_ALLOW_PRIVATE": "1",
                "UM_DATABASE_URL": f"sqlite+aiosqlite:///{home}/um.db"}  # fmt: skip
        server = subprocess.Popen(
            [sys.executable, "-m", "unified_messaging", "serve", "--port", "0", "--demo",
             "--json"],
            cwd=home, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            demo = json.loads(server.stdout.readline())
            job_id = _seed(demo["url"], demo["api_key"])
            _seed_verifications(demo["url"], demo["api_key"])
            _shoot(demo["dashboard_login_url"], demo["url"], job_id)
        finally:
            server.terminate()
            server.wait(30)
    print(f"screenshots in {OUT}/")
    return 0


def _seed(url: str, key: str) -> str:
    """Send the messages and wait (a script, not a test) until the worker settled them."""
    headers = {"Authorization": f"Bearer {key}"}
    jobs = [httpx.post(f"{url}/v1/messages", json=body, headers=headers, timeout=10).json()
            for body in SENDS]  # fmt: skip
    ids = [job["job_id"] for job in jobs if "job_id" in job]
    for consent in CONSENTS:
        httpx.post(f"{url}/v1/consents", json=consent, headers=headers, timeout=10)
        time.sleep(1.1)  # İYS's dates are to the second: a change comes after its record
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        states = [httpx.get(f"{url}/v1/messages/{i}", headers=headers, timeout=10).json()
                  for i in ids]  # fmt: skip
        if all(s["status"] in FINAL for s in states):
            break
        time.sleep(0.5)
    return str(ids[1])  # the fallback: its timeline has the most to show


def _seed_verifications(url: str, key: str) -> None:
    """Eleven sign-ups from one address: ten codes sent, seven checked, the eleventh refused
    by the SMS-pumping guard (10 per address in 10 minutes by default)."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as rest:
        for n in range(11):
            body = {"to": f"+90532{n:03d}4567", "client_ip": "203.0.113.7"}
            started = rest.post("/v1/verifications", json=body)
            if started.status_code != 201 or n >= 7:
                continue
            job_id = started.json()["sends"][0]["job_id"]
            text = rest.get(f"/v1/messages/{job_id}").json()["body"]
            code = "".join(c for c in text if c.isdigit())
            rest.post(f"/v1/verifications/{started.json()['id']}/check", json={"code": code})


def _shoot(login_url: str, url: str, job_id: str) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(login_url)
        page.screenshot(path=str(OUT / "sign-in-link.png"))
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(url + "/dashboard/")
        for name, path in (("overview", "/"), ("messages", "/messages"),
                           ("message", f"/messages/{job_id}"), ("api-keys", "/keys"),
                           ("templates", "/templates"), ("allowlist", "/allowlist"),
                           ("webhooks", "/webhooks"), ("connections", "/connections"),
                           ("verifications", "/verifications"),
                           ("connection-new", "/connections/new?provider=sms_a")):  # fmt: skip
            page.goto(url + "/dashboard" + path)
            page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
        page.goto(url + "/dashboard/connections")
        page.locator("tbody a").first.click()  # the first connection: its settings
        page.screenshot(path=str(OUT / "connection.png"), full_page=True)
        page.goto(url + "/dashboard/templates/order_shipped")
        page.get_by_label("name", exact=True).fill("Ayşe")
        page.get_by_label("order", exact=True).fill("A-1042")
        page.locator("#preview pre").filter(has_text="Ayşe").wait_for()
        page.screenshot(path=str(OUT / "template-editor.png"), full_page=True)
        page.goto(url + "/dashboard/templates/new")
        page.get_by_label("Text").fill(COMMERCIAL_DRAFT)
        page.locator("#preview pre").filter(has_text="Son gün").wait_for()
        page.screenshot(path=str(OUT / "template-hints.png"), full_page=True)
        page.goto(url + "/dashboard/consents")
        page.screenshot(path=str(OUT / "consents.png"), full_page=True)
        page.get_by_role("link", name="+905334445566").click()
        page.get_by_role("heading", name="History").wait_for()
        page.screenshot(path=str(OUT / "consent.png"), full_page=True)
        # İYS: connected through the demo's İletimerkezi connection.
        page.goto(url + "/dashboard/iys")
        through = page.locator("form", has=page.get_by_role("button", name="Connect through"))
        through.get_by_label("Brand code").fill("710272")
        through.get_by_role("button", name="Connect through the provider").click()
        page.get_by_text("Pending registrations").wait_for()
        page.screenshot(path=str(OUT / "iys.png"), full_page=True)
        _webhook(page, url)
        page.goto(url + "/dashboard/suppressions")
        page.locator("#channel").select_option("sms")
        page.locator("#recipient").fill("0555 123 45 99")
        page.get_by_label("Reason").fill("replied DUR by phone")
        page.get_by_role("button", name="Suppress").click()
        page.get_by_role("cell", name="+905551234599").wait_for()
        page.screenshot(path=str(OUT / "suppressions.png"), full_page=True)
        page.goto(url + "/dashboard/keys")
        page.get_by_label("Name (what uses it)").fill("checkout service")
        page.get_by_role("button", name="Create key").click()
        page.screenshot(path=str(OUT / "api-key-created.png"), full_page=True)
        # A refused form: the error beside its field, what was typed still there.
        page.get_by_label("Name (what uses it)").fill("nightly export")
        page.get_by_label("Expires (UTC, optional)").fill("2020-01-31T00:00")
        page.get_by_role("button", name="Create key").click()
        page.locator("#expires_at-error").wait_for()
        page.screenshot(path=str(OUT / "form-error.png"), full_page=True)
        _compose(page, url)
        # Phone width (390 px): the folded navigation, tables scrolling in their own box.
        page.set_viewport_size({"width": 390, "height": 844})
        for name, path in (("overview-390", "/"), ("compose-390", "/compose"),
                           ("messages-390", "/messages"),
                           ("message-390", f"/messages/{job_id}")):  # fmt: skip
            page.goto(url + "/dashboard" + path)
            page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 800})
        # Last: the changes made above are on it, with the demo operator as their actor.
        page.goto(url + "/dashboard/audit")
        page.screenshot(path=str(OUT / "audit-log.png"), full_page=True)
        browser.close()


def _compose(page: Page, url: str) -> None:
    """A test message typed into Send a message, and the message's page it opens."""
    page.goto(url + "/dashboard/compose")
    page.get_by_label("Recipient").fill("0532 765 43 21")
    text = "Randevunuz yarın 14:30'da. Bilgi: 0850 000 00 00"
    page.get_by_label("Text (when sending text)").fill(text)
    page.screenshot(path=str(OUT / "compose.png"), full_page=True)
    page.get_by_role("button", name="Send test message").click()
    page.wait_for_url(url + "/dashboard/messages/msg_*")
    page.screenshot(path=str(OUT / "compose-sent.png"), full_page=True)


def _webhook(page: Page, url: str) -> None:
    """An endpoint on a receiver of the script's own, its test event delivered."""
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    try:
        page.goto(url + "/dashboard/webhooks")
        page.get_by_label("URL").fill(f"http://127.0.0.1:{receiver.server_address[1]}/hooks")
        page.get_by_role("button", name="Add endpoint").click()
        page.get_by_role("link", name="Open the endpoint").click()
        page.get_by_role("button", name="Send a test event").click()
        page.locator("#deliveries .badge", has_text="delivered").wait_for(timeout=20_000)
        page.screenshot(path=str(OUT / "webhook.png"), full_page=True)
    finally:
        receiver.shutdown()


class _Ok(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return None


if __name__ == "__main__":
    sys.exit(main())
