"""The dashboard in a real browser, against the real ``serve --demo``: sign in, every page,
a key made in the browser sending over REST, its message reaching ``delivered``."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from _browser_support import Demo, Receiver
from playwright.sync_api import Page, expect

#: ``scripts/screenshots`` sets this to keep a screenshot of each page visited.
SHOTS = os.environ.get("UM_DASHBOARD_SCREENSHOTS")
PAGES = (
    ("Overview", "Overview of"),
    ("Messages", "Messages"),
    ("API keys", "API keys"),
    ("Connections", "Connections"),
    ("Templates", "Templates"),
    ("Allowlist", "IP allowlist"),
    ("Suppressions", "Suppressions"),
    ("Consents", "Consents"),
    ("Verifications", "Verifications"),
    ("Webhooks", "Webhooks"),
    ("Audit log", "Audit log"),
)


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def test_every_page_opens_from_the_navigation_without_an_error(page: Page) -> None:
    for link, heading in PAGES:
        page.get_by_role("navigation", name="Main").get_by_role("link", name=link).click()
        expect(page.get_by_role("heading", level=1)).to_contain_text(heading)
        expect(page.get_by_role("link", name=link)).to_have_attribute("aria-current", "page")
        _shot(page, link.lower().replace(" ", "-"))
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_key_made_in_the_browser_sends_and_its_message_is_delivered(
    page: Page, demo: Demo
) -> None:
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name (what uses it)").fill("browser test")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key-secret").inner_text()
    assert secret.startswith("um_test_")
    _shot(page, "api-keys-created")
    # Post/redirect/get: a refresh loads the list again; it neither makes a second key nor
    # shows the secret again.
    page.reload()
    expect(page.get_by_text(secret)).to_have_count(0)
    expect(page.get_by_role("cell", name="browser test", exact=True)).to_have_count(1)
    sent = httpx.post(
        demo.url + "/v1/messages",
        json={"to": "+905551234567", "body": "Merhaba from the browser test"},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=10,
    )
    assert sent.status_code == 201, sent.text
    job_id = sent.json()["job_id"]
    page.get_by_role("link", name="Messages").click()
    page.get_by_role("link", name=job_id).click()
    # The page asks again by itself until the simulated report (2 s) has arrived.
    expect(page.locator("#message .badge").first).to_have_text("delivered", timeout=20_000)
    expect(page.get_by_text("delivery report:")).to_be_visible()
    _shot(page, "message")
    page.reload()  # the key list no longer shows the secret
    page.get_by_role("link", name="API keys").click()
    expect(page.get_by_text(secret)).to_have_count(0)
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_test_data_switch_changes_what_is_shown(page: Page) -> None:
    page.get_by_role("link", name="API keys").click()
    expect(page.get_by_role("status").first).to_contain_text("viewing test data")
    page.get_by_role("button", name="Switch to live data").click()
    expect(page.get_by_role("heading", name="Live keys")).to_be_visible()
    _shot(page, "api-keys-live")
    page.get_by_role("button", name="Switch to test data").click()
    expect(page.get_by_role("heading", name="Test keys")).to_be_visible()


def test_a_template_is_written_with_its_live_preview_and_saved(page: Page) -> None:
    page.get_by_role("link", name="Templates").click()
    page.get_by_role("link", name="New template").click()
    page.get_by_label("Key").fill("browser_greeting")
    page.get_by_label("Text").fill("Merhaba {{ name }}, siparişiniz yolda.")
    preview = page.locator("#preview")
    expect(preview).to_contain_text("Merhaba {{ name }}, siparişiniz yolda.")
    expect(preview).to_contain_text("gsm7_turkish")
    # The variable's sample field appears by itself; a value typed there fills the preview.
    page.get_by_label("name", exact=True).fill("Ayşe")
    expect(preview.locator("pre")).to_have_text("Merhaba Ayşe, siparişiniz yolda.")
    _shot(page, "template-editor")
    page.get_by_role("button", name="Save template").click()
    expect(page.get_by_role("link", name="browser_greeting")).to_be_visible()
    assert page.errors == []  # type: ignore[attr-defined]


def test_an_allowlist_entry_makes_rest_refuse_an_address_outside_it(page: Page, demo: Demo) -> None:
    def rest_status() -> int:
        answer = httpx.post(
            demo.url + "/v1/messages",
            json={"to": "+905551234567", "body": "x"},
            headers={"Authorization": f"Bearer {demo.api_key}"},
            timeout=10,
        )
        return answer.status_code

    page.get_by_role("link", name="Allowlist").click()
    page.get_by_label("Address or CIDR").fill("203.0.113.0/24")
    page.get_by_role("button", name="Add to the allowlist").click()
    # This browser calls from 127.0.0.1: the page asks before shutting it out.
    expect(page.get_by_role("alert")).to_contain_text("shuts out your own address")
    _shot(page, "allowlist-warning")
    page.get_by_role("button", name="Add it anyway").click()
    expect(page.get_by_role("cell", name="203.0.113.0/24")).to_be_visible()
    try:
        assert rest_status() == 403
    finally:
        page.once("dialog", lambda dialog: dialog.accept())  # "Remove 203.0.113.0/24 …?"
        page.get_by_role("button", name="Remove").click()
        expect(page.get_by_text("The list is empty")).to_be_visible()
    assert rest_status() == 201
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_recipient_suppressed_in_the_browser_is_refused_by_rest(page: Page, demo: Demo) -> None:
    def rest_send() -> httpx.Response:
        return httpx.post(
            demo.url + "/v1/messages",
            json={"to": "+905551234599", "body": "x"},
            headers={"Authorization": f"Bearer {demo.api_key}"},
            timeout=10,
        )

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Suppressions").click()
    page.locator("#channel").select_option("sms")
    page.locator("#recipient").fill("0555 123 45 99")
    page.get_by_label("Reason").fill("asked by phone")
    page.get_by_role("button", name="Suppress").click()
    expect(page.get_by_role("status").last).to_contain_text("+905551234599 is suppressed on sms")
    expect(page.get_by_role("cell", name="+905551234599")).to_be_visible()
    _shot(page, "suppressions")
    refused = rest_send()
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "RECIPIENT_SUPPRESSED")
    page.once("dialog", lambda dialog: dialog.accept())  # "Let +90… get sms messages again?"
    page.get_by_role("button", name="Remove").click()
    expect(page.get_by_text("Nobody is suppressed")).to_be_visible()
    assert rest_send().status_code == 201
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_webhook_endpoint_gets_a_test_event_and_a_redelivery(page: Page) -> None:
    receiver = Receiver()
    try:
        page.get_by_role("link", name="Webhooks").click()
        page.get_by_label("URL").fill(receiver.url)
        # Only an event the demo's other messages never cause: the list then holds the test
        # event alone (a test event goes out whatever the endpoint chose).
        page.get_by_label("message.expired").check()
        page.get_by_role("button", name="Add endpoint").click()
        expect(page.locator("#new-webhook-secret")).to_contain_text("whsec_")
        page.get_by_role("link", name="Open the endpoint").click()
        page.get_by_role("button", name="Send a test event").click()
        # The list follows the delivery by itself until the server's worker has made it.
        row = page.locator("#deliveries tbody tr").first
        expect(row.locator(".badge")).to_have_text("delivered", timeout=20_000)
        expect(row).to_contain_text("HTTP 200")
        _shot(page, "webhook")
        row.get_by_role("button", name="Redeliver").click()
        expect(page.get_by_text("Sent again")).to_be_visible()
        expect(page.locator("#deliveries tbody tr").first.locator(".badge")).to_have_text(
            "delivered", timeout=20_000
        )
        # Only the test event: the demo's own messages may send theirs to this endpoint too.
        tests = [h for h, body in receiver.seen if b'"msg_test_webhook"' in body]
        assert len(tests) == 2
        first, second = (headers["webhook-id"] for headers in tests)
        assert first == second  # a redelivery is the same event
    finally:
        receiver.close()
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_connections_senders_are_changed_and_a_bad_one_is_said_beside_it(page: Page) -> None:
    page.get_by_role("link", name="Connections").click()
    page.locator("tbody a").first.click()
    approved = page.get_by_label("Approved senders, comma-separated (empty: any)")
    approved.fill("DEMO, " + "B" * 33)  # a header over the 32 characters D3 allows
    page.get_by_role("button", name="Save senders").click()
    expect(approved).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#approved_senders-error")).to_have_text("must be 1-32 characters")
    # The refusal is a 400, which chromium logs to the console as a failed load: expected.
    assert [e for e in page.errors if "400" not in e] == []  # type: ignore[attr-defined]
    page.errors.clear()  # type: ignore[attr-defined]
    page.get_by_label("Default sender (empty: each send names one)").fill("DEMO")
    approved.fill("DEMO, SHOP")
    page.get_by_role("button", name="Save senders").click()
    expect(page.get_by_role("status").filter(has_text="Senders saved.")).to_be_visible()
    page.reload()  # a GET: the notice is gone, the values are the stored ones
    expect(page.get_by_text("Senders saved.")).to_have_count(0)
    expect(page.get_by_label("Approved senders, comma-separated (empty: any)")).to_have_value(
        "DEMO, SHOP"
    )
    assert page.errors == []  # type: ignore[attr-defined]


def test_verifications_show_conversion_codes_and_the_guards_refusals(
    page: Page, demo: Demo
) -> None:
    rest = httpx.Client(
        base_url=demo.url, headers={"Authorization": f"Bearer {demo.api_key}"}, timeout=10
    )
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Verifications").click()
    expect(page.get_by_role("status").first).to_contain_text("viewing test data")
    # The limits, changed in the browser: two starts per range of +90 555 77X.
    page.get_by_label("Per number range").fill("2/10m")
    page.get_by_label("Range: first digits").fill("5")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").last).to_contain_text("The SMS-pumping guard is changed")

    started = [rest.post("/v1/verifications", json={"to": f"+90555770000{n}"}) for n in range(3)]
    assert [s.status_code for s in started] == [201, 201, 429]
    assert started[2].json()["error"]["code"] == "VERIFICATION_FRAUD_SUSPECTED"
    job_id = started[0].json()["sends"][0]["job_id"]
    body = rest.get(f"/v1/messages/{job_id}").json()["body"]
    code = "".join(c for c in body if c.isdigit())
    checked = rest.post(f"/v1/verifications/{started[0].json()['id']}/check", json={"code": code})
    assert checked.json()["status"] == "approved"

    page.reload()
    expect(page.get_by_text("sms: 1 approved of 2 started")).to_be_visible()
    recent = page.get_by_role("table", name="Recent verifications")
    expect(recent.get_by_text(f"Doğrulama kodunuz: {code}.")).to_be_visible()  # test mode
    refusals = page.get_by_role("table", name="Fraud refusals")
    expect(refusals.get_by_role("cell", name="+9055577", exact=True)).to_be_visible()
    expect(refusals.get_by_role("cell", name="number range")).to_be_visible()
    _shot(page, "verifications")
    assert page.errors == []  # type: ignore[attr-defined]
    rest.close()
