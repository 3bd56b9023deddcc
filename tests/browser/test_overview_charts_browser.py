"""The Overview's delivery charts in Debian's chromium, against the real ``serve --demo``:
messages sent over REST appear in the charts; the wide drawing at 1280 px and the narrow one
at 390 px, neither page scrolling sideways; the period switch; no console or CSP error.

``UM_DASHBOARD_SCREENSHOTS=DIR`` keeps a screenshot of each width to look at."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import httpx
from _browser_support import Demo
from playwright.sync_api import Page, expect

SHOTS = os.environ.get("UM_DASHBOARD_SCREENSHOTS")
SENDS = (
    {"to": "+905552220001", "body": "Merhaba"},
    {"to": "+905552220002", "body": "Merhaba"},
    {"to": "+905550000011", "body": "Yedek", "fallback": ["sms_b"]},
    {"to": "+905550000004", "body": "Süresi dolacak"},
)
FINAL = {"delivered", "expired", "rejected", "failed", "unknown"}


def _send_and_settle(demo: Demo) -> None:
    headers = {"Authorization": f"Bearer {demo.api_key}"}
    ids = []
    for body in SENDS:
        sent = httpx.post(f"{demo.url}/v1/messages", json=body, headers=headers, timeout=10)
        assert sent.status_code == 201, sent.text
        ids.append(sent.json()["job_id"])
    for _ in range(400):  # the demo's worker applies the simulated reports (about 2 s)
        states = [
            httpx.get(f"{demo.url}/v1/messages/{i}", headers=headers, timeout=10).json()["status"]
            for i in ids
        ]
        if set(states) <= FINAL:
            return
        time.sleep(0.05)
    raise AssertionError(f"not settled: {states}")


def _no_sideways_scroll(page: Page) -> None:
    wide, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert wide <= inner, (wide, inner)


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def test_sent_messages_show_in_the_charts_at_laptop_and_phone_width(page: Page, demo: Demo) -> None:
    _send_and_settle(demo)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview").click()

    volume = page.get_by_role("img", name="Messages per hour by status").first
    expect(volume).to_be_visible()
    expect(page.locator("svg.narrow").first).to_be_hidden()
    bars = page.locator("svg.wide rect title")
    expect(bars.filter(has_text="delivered of")).not_to_have_count(0)
    expect(bars.filter(has_text="expired of")).not_to_have_count(0)
    rates = page.locator("svg.wide").nth(1)
    expect(rates.locator("text", has_text="sms_a · NetGSM")).to_have_count(1)
    expect(page.locator("ul.legend li", has_text="expired")).to_have_count(1)
    expect(page.get_by_text("Times in Europe/Istanbul (UTC+03:00)")).to_be_visible()
    _no_sideways_scroll(page)
    _shot(page, "overview-charts-browser")

    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.reload()
        expect(page.locator("svg.narrow").first).to_be_visible()
        expect(page.locator("svg.wide").first).to_be_hidden()
        _no_sideways_scroll(page)
        _shot(page, "overview-charts-browser-phone")
    finally:
        page.set_viewport_size({"width": 1280, "height": 860})
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_period_switch_redraws_by_day(page: Page) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview").click()
    page.get_by_role("navigation", name="Period").get_by_role("link", name="Last 30 days").click()

    expect(page).to_have_url(re.compile(r".*/dashboard/\?window=30d$"))
    expect(page.get_by_role("heading", name="Messages per day, by status")).to_be_visible()
    link = page.get_by_role("link", name="Last 30 days")
    expect(link).to_have_attribute("aria-current", "page")
    description = page.locator("svg.wide desc").first.text_content() or ""
    assert " in 30 bars" in description
    _no_sideways_scroll(page)
    assert page.errors == []  # type: ignore[attr-defined]
