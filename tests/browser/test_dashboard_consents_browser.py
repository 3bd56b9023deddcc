"""The Consents page and the template editor's content hints (D33) in a real browser,
against the real ``serve --demo``: a consent recorded in the form is the one REST reads, its
page shows its history, a CSV chosen with the file field is read into the form by the page's
script and imported; the editor names what a commercial text misses as it is typed."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from _browser_support import Demo
from playwright.sync_api import Page, expect

SHOTS = os.environ.get("UM_DASHBOARD_SCREENSHOTS")


def _shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def _rest_consents(demo: Demo) -> dict[str, str]:
    answer = httpx.get(demo.url + "/v1/consents", params={"limit": 100}, timeout=10,
                       headers={"Authorization": f"Bearer {demo.api_key}"})  # fmt: skip
    return {c["recipient"]: c["status"] for c in answer.json()["data"]}


def test_a_consent_recorded_in_the_browser_is_read_by_rest_with_its_history(
    page: Page, demo: Demo
) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Consents").click()
    page.get_by_label("Recipient", exact=True).fill("0532 700 00 01")
    page.get_by_label("Source").select_option("HS_WEB")
    page.get_by_role("button", name="Record consent").click()
    expect(page.get_by_role("status").last).to_contain_text("Recorded ONAY for +905327000001")
    assert _rest_consents(demo)["+905327000001"] == "ONAY"
    # A first RET is refused by İYS's rule, beside the form, and what was typed stays.
    page.get_by_label("Recipient", exact=True).fill("0532 700 00 02")
    page.get_by_label("Status", exact=True).select_option("RET")
    page.get_by_label("Source").select_option("HS_WEB")
    page.get_by_role("button", name="Record consent").click()
    expect(page.get_by_role("alert")).to_contain_text("The first record for an address")
    expect(page.get_by_label("Recipient", exact=True)).to_have_value("0532 700 00 02")
    # The refusal is a 422, which chromium logs to the console as a failed load: expected.
    assert [e for e in page.errors if "422" not in e] == []  # type: ignore[attr-defined]
    page.errors.clear()  # type: ignore[attr-defined]
    page.get_by_role("link", name="+905327000001").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("+905327000001")
    expect(page.get_by_role("heading", name="History")).to_be_visible()
    _shot(page, "consent")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_csv_chosen_in_the_file_field_is_imported(page: Page, demo: Demo, tmp_path: Path) -> None:
    chosen = tmp_path / "consents.csv"
    chosen.write_text(
        "recipient,type,recipient_type,status,source,consent_date\n"
        "0532 700 00 11,MESAJ,BIREYSEL,ONAY,HS_FIZIKSEL_ORTAM,\n"
        "+905327000012,MESAJ,TACIR,ONAY,,\n"
        "+905327000013,MESAJ,BIREYSEL,RET,HS_WEB,\n",
        encoding="utf-8",
    )
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Consents").click()
    page.get_by_label("CSV file").set_input_files(str(chosen))
    expect(page.get_by_label("or its text")).to_have_value(chosen.read_text(encoding="utf-8"))
    page.get_by_role("button", name="Import").click()
    expect(page.get_by_role("alert").last).to_contain_text(
        "Recorded 2 consents. 1 row refused: row 4"
    )
    expect(page.get_by_role("link", name="+905327000011")).to_be_visible()
    _shot(page, "consents")
    assert {"+905327000011", "+905327000012"} <= set(_rest_consents(demo))
    assert "+905327000013" not in _rest_consents(demo)
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_template_editor_names_what_a_commercial_text_misses(page: Page) -> None:
    page.get_by_role("link", name="Templates").click()
    page.get_by_role("link", name="New template").click()
    page.get_by_label("Text").fill("Yeni sezonda %20 indirim!")
    preview = page.locator("#preview")
    expect(preview).to_contain_text("OPT_OUT_MISSING")
    expect(preview).to_contain_text("COMMERCIAL_TAG_MISSING")
    page.get_by_label("Text").fill("KAMPANYA: yeni sezonda %20 indirim! RET yazıp 3338'e gönderin.")
    expect(preview).not_to_contain_text("OPT_OUT_MISSING")
    expect(preview).not_to_contain_text("COMMERCIAL_TAG_MISSING")
    expect(preview).to_contain_text("BRAND_NOT_SET")
    _shot(page, "template-hints")
    assert page.errors == []  # type: ignore[attr-defined]
