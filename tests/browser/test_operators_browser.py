"""What support looks at, in a real browser against the real ``serve --demo``: a message's
text (hostile text shown as text, never run) and the API key that sent it."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from _browser_support import Demo
from playwright.sync_api import Page, expect

#: ``scripts/screenshots`` sets this to keep a screenshot of each page visited.
SHOTS = os.environ.get("UM_DASHBOARD_SCREENSHOTS")
HOSTILE = '<img src=x onerror="alert(1)"><script>alert(2)</script> Siparişiniz & "yolda"'


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def test_a_hostile_text_is_shown_as_text_with_the_key_that_sent_it(page: Page, demo: Demo) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    sent = httpx.post(
        demo.url + "/v1/messages",
        json={"to": "+905551234567", "body": HOSTILE},
        headers={"Authorization": f"Bearer {demo.api_key}"},
        timeout=10,
    )
    assert sent.status_code == 201, sent.text
    job_id = sent.json()["job_id"]

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Messages").click()
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=job_id))
    expect(row).to_contain_text(HOSTILE)
    _shot(page, "messages")
    page.get_by_role("link", name=job_id).click()
    expect(page.locator(".message-text")).to_have_text(HOSTILE)
    expect(page.locator("#message")).to_contain_text("API key")
    expect(page.locator("#message img[src=x]")).to_have_count(0)
    _shot(page, "message-text")
    assert dialogs == []
    assert page.errors == []  # type: ignore[attr-defined]
