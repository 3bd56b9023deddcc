"""The İYS page (D33) in a real browser, against the real ``serve --demo``: it says the
workspace is not connected; a refused connection is explained beside the form and the
password is never put back; connecting through the demo's İletimerkezi connection shows
the connection (never a password), pending registrations and a Disconnect button, whose
forms carry the session's CSRF token; disconnecting forgets it."""

from __future__ import annotations

import os
from pathlib import Path

from _browser_support import Demo
from playwright.sync_api import Page, expect

SHOTS = os.environ.get("UM_DASHBOARD_SCREENSHOTS")
PASSWORD = "iys-pass-Ünique-42"


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def test_connect_through_the_provider_and_disconnect(page: Page, demo: Demo) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="İYS").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("İYS")
    expect(page.get_by_text("not connected", exact=True)).to_be_visible()

    # İYS's own API user, at an address nothing answers: refused, nothing stored.
    direct = page.locator("form", has=page.get_by_role("button", name="Connect", exact=True))
    direct.get_by_label("İYS code").fill("710271")
    direct.get_by_label("Brand code").fill("710272")
    direct.get_by_label("API user").fill("api-user")
    direct.get_by_label("Password").fill(PASSWORD)
    direct.get_by_label("Address").fill("http://127.0.0.1:9")
    direct.get_by_role("button", name="Connect", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("İYS")
    expect(page.get_by_label("API user")).to_have_value("api-user")
    expect(page.get_by_label("Password")).to_have_value("")
    assert PASSWORD not in page.content()
    assert [e for e in page.errors if "502" not in e] == []  # type: ignore[attr-defined]
    page.errors.clear()  # type: ignore[attr-defined]

    # Through the demo's İletimerkezi connection.
    through = page.locator("form", has=page.get_by_role("button", name="Connect through"))
    choice = through.get_by_label("Provider connection")
    connection_id = choice.locator("option", has_text="İletimerkezi").get_attribute("value")
    assert connection_id is not None
    choice.select_option(connection_id)
    through.get_by_label("Brand code").fill("710272")
    through.get_by_role("button", name="Connect through the provider").click()
    expect(page.get_by_role("status").last).to_contain_text(
        f"Connected to İYS through {connection_id}"
    )
    expect(page.get_by_text("connected", exact=True)).to_be_visible()
    expect(page.get_by_role("link", name=connection_id)).to_be_visible()
    expect(page.get_by_text("Pending registrations")).to_be_visible()
    tokens = page.locator("form[action$='/iys/disconnect'] input[name=csrf_token]")
    assert len(tokens.first.input_value()) >= 20
    _shot(page, "iys")

    page.get_by_role("button", name="Disconnect").click()
    expect(page.get_by_role("status").last).to_contain_text("Disconnected from İYS.")
    expect(page.get_by_text("not connected", exact=True)).to_be_visible()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_post_without_the_csrf_token_is_refused(page: Page, demo: Demo) -> None:
    answer = page.request.post(demo.url + "/dashboard/iys/disconnect", form={"x": "1"},
                               max_redirects=0)  # fmt: skip
    assert answer.status == 403
