"""Send a message, and every page at phone and laptop width, in Debian's chromium against
the real ``serve --demo``: a hostile text typed into the compose form is sent, lands on the
message's page with its text shown as text, and the audit log names the user; each page of
the navigation (and a message, a template, a connection) opens at 390 px and 1280 px without
a console or Content-Security-Policy error and without scrolling sideways; at 390 px the
navigation is folded behind its button.

``UM_DASHBOARD_SCREENSHOTS=DIR`` keeps a screenshot of each page at each width."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _browser_support import Demo
from playwright.sync_api import Page, expect

SHOTS = os.environ.get("UM_DASHBOARD_SCREENSHOTS")
HOSTILE = '<img src=x onerror="alert(1)"> Kargonuz </textarea><script>alert(2)</script>'
PAGES = (
    "/", "/compose", "/messages", "/keys", "/connections", "/connections/new?provider=sms_a",
    "/templates", "/templates/new", "/allowlist", "/suppressions", "/consents",
    "/iys", "/verifications", "/webhooks", "/audit",
)  # fmt: skip
WIDTHS = (390, 1280)


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def _fits(page: Page) -> None:
    wide, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert wide <= inner, (page.url, wide, inner)


def test_a_message_composed_in_the_browser_is_sent_and_shown_as_text(
    page: Page, demo: Demo
) -> None:
    page.set_viewport_size({"width": 1280, "height": 860})
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(demo.url + "/dashboard/compose")
    page.get_by_label("Recipient").fill("0532 111 22 33")
    page.get_by_label("Text (when sending text)").fill(HOSTILE)
    page.get_by_role("button", name="Send test message").click()

    page.wait_for_url(demo.url + "/dashboard/messages/msg_*")
    expect(page.locator("main .notice")).to_contain_text("The test message to +905321112233")
    expect(page.locator(".message-text")).to_have_text(HOSTILE)
    expect(page.locator("main img")).to_have_count(0)
    expect(page.locator(".timeline")).to_contain_text("accepted by the API")
    _shot(page, "compose-sent")
    page.goto(demo.url + "/dashboard/audit")
    expect(page.locator("main")).to_contain_text("message.send")
    assert dialogs == [] and page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_fits_the_width_without_an_error(page: Page, demo: Demo, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 844 if width < 600 else 860})
    page.goto(demo.url + "/dashboard/messages")
    message = page.locator("tbody a").first.get_attribute("href")
    page.goto(demo.url + "/dashboard/connections")
    connection = page.locator("tbody a").first.get_attribute("href")
    assert message and connection
    for path in (*PAGES, message.removeprefix("/dashboard"), connection.removeprefix("/dashboard")):
        page.goto(demo.url + "/dashboard" + path)
        expect(page.locator("h1").first).to_be_visible()
        _fits(page)
        name = path.strip("/").split("?")[0].replace("/", "-") or "overview"
        if name.startswith("messages-msg_"):
            name = "message"
        elif name.startswith("connections-con"):
            name = "connection"
        _shot(page, f"{name}-{width}")
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_navigation_folds_at_phone_width(page: Page, demo: Demo) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(demo.url + "/dashboard/messages")
    menu = page.locator("nav.main .nav-button")
    expect(menu).to_be_visible()
    audit = page.get_by_role("navigation", name="Main").get_by_role("link", name="Audit log")
    expect(audit).to_be_hidden()
    menu.click()
    audit.click()
    page.wait_for_url(demo.url + "/dashboard/audit")
    _fits(page)
    page.set_viewport_size({"width": 1280, "height": 860})
    expect(page.locator("nav.main .nav-button")).to_be_hidden()
    expect(audit).to_be_visible()
    assert page.errors == []  # type: ignore[attr-defined]
