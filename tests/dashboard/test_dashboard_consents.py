"""The Consents page over real HTTP (D33): consents recorded through the form and a CSV are
the ones REST reads; a consent's page shows its history; İYS's rules and the façade's words
for bad input; CSRF; markup shown as text; a member kept to their own workspace."""

from __future__ import annotations

import httpx
from _dash_support import Console, PageAudit

from unified_messaging import Messenger
from unified_messaging.dashboard._auth import User
from unified_messaging.testing import TestBed

NUMBER = "+905321234567"
MARKUP_MAIL = '<script>alert("x")</script>@example.com'


async def _test_mode(console: Console) -> None:
    # The testbed's API key is a test key: the page must show (and change) the test list.
    assert (await console.post("/view", {"livemode": "test"})).status_code == 303


async def _rest_consents(url: str, bed: TestBed) -> list[dict[str, object]]:
    async with httpx.AsyncClient() as rest:
        answer = await rest.get(url + "/v1/consents",
                                headers={"Authorization": f"Bearer {bed.api_key}"})  # fmt: skip
    data: list[dict[str, object]] = answer.json()["data"]
    return data


async def test_a_consent_recorded_in_the_dashboard_is_the_one_rest_reads(
    signed_in: Console, url: str, bed: TestBed, messenger: Messenger
) -> None:
    await _test_mode(signed_in)
    added = await signed_in.post("/consents", {"recipient": "0532 123 45 67", "status": "ONAY",
                                               "source": "HS_WEB"})  # fmt: skip

    assert (added.status_code, added.headers["location"]) == (303, "/dashboard/consents")
    page = (await signed_in.follow(added)).text
    assert f"Recorded ONAY for {NUMBER} (MESAJ, BIREYSEL)." in page
    [consent] = await _rest_consents(url, bed)
    assert (consent["recipient"], consent["status"], consent["source"]) == (
        NUMBER, "ONAY", "HS_WEB"
    )  # fmt: skip
    assert f'/consents/{consent["id"]}">{NUMBER}</a>' in page
    [event] = (await messenger.audit.list(action="consent.record")).data
    assert event.actor == "dashboard:ops@example.com"


async def test_a_consents_page_shows_its_history_newest_first(
    signed_in: Console, bed: TestBed, clock: object
) -> None:
    await _test_mode(signed_in)
    await signed_in.post("/consents", {"recipient": NUMBER, "status": "ONAY",
                                       "source": "HS_ISLAK_IMZA"})  # fmt: skip
    bed.clock.advance(5)  # type: ignore[attr-defined]
    await signed_in.post("/consents", {"recipient": NUMBER, "status": "RET", "source": "HS_MESAJ"})
    [consent] = (await bed.messenger.consents.list(bed.principal)).data

    page = (await signed_in.get(f"/consents/{consent.id}")).text

    assert "History" in page and consent.id in page
    assert page.index("HS_MESAJ") < page.index("HS_ISLAK_IMZA")  # the RET first
    assert "not registered with İYS" in page
    audit = PageAudit(page)
    assert (audit.inline_scripts, audit.handlers, audit.unlabelled) == (0, [], [])
    missing = await signed_in.get("/consents/cns_nope")
    assert missing.status_code == 404 and "No consent &#39;cns_nope&#39;." in missing.text


async def test_bad_input_gets_the_facades_and_iys_words(signed_in: Console, bed: TestBed) -> None:
    first_ret = await signed_in.post("/consents", {"recipient": NUMBER, "status": "RET",
                                                   "source": "HS_WEB"})  # fmt: skip
    no_source = await signed_in.post("/consents", {"recipient": NUMBER, "status": "ONAY"})
    unknown = await signed_in.post("/consents", {"recipient": NUMBER, "status": "MAYBE"})
    garbage = await signed_in.post("/consents", {"recipient": "12ab", "status": "ONAY",
                                                 "source": "HS_WEB"})  # fmt: skip
    early = {"recipient": NUMBER, "status": "ONAY", "source": "HS_WEB",
             "consent_date": "2015-04-30T23:59:59"}  # fmt: skip
    too_old = await signed_in.post("/consents", early)

    assert first_ret.status_code == 422 and "The first record for an address" in first_ret.text
    assert no_source.status_code == 422 and "required for a BIREYSEL consent" in no_source.text
    assert unknown.status_code == 400 and 'id="status-error"' in unknown.text
    assert garbage.status_code == 422 and 'value="12ab"' in garbage.text  # kept for correcting
    assert too_old.status_code == 422 and "2015-05-01" in too_old.text
    assert (await bed.messenger.consents.list(bed.principal)).data == []
    listing = await signed_in.get("/consents", params={"recipient": "'; DROP TABLE x;--"})
    assert listing.status_code in (200, 400) and "No consents" in listing.text


async def test_a_csv_is_imported_row_by_row_and_the_refused_rows_are_named(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    await _test_mode(signed_in)
    csv = (
        "recipient,type,recipient_type,status,source,consent_date\n"
        "0532 100 00 01,MESAJ,BIREYSEL,ONAY,HS_WEB,\n"
        "+905321000002,MESAJ,TACIR,ONAY,,\n"
        "+905321000003,MESAJ,BIREYSEL,RET,HS_WEB,\n"  # a first record cannot be RET
        "not-a-number,MESAJ,BIREYSEL,ONAY,HS_WEB,\n"
    )

    imported = await signed_in.post("/consents/import", {"csv": "\ufeff" + csv})

    page = (await signed_in.follow(imported)).text
    assert "Recorded 2 consents. 2 rows refused: row 4: The first record for an address" in page
    assert "row 5: " in page
    assert {c["recipient"] for c in await _rest_consents(url, bed)} == {
        "+905321000001", "+905321000002"
    }  # fmt: skip


async def test_a_csv_that_cannot_be_read_imports_nothing(signed_in: Console, bed: TestBed) -> None:
    wrong_header = await signed_in.post(
        "/consents/import", {"csv": "phone,status\n+905321000001,ONAY\n"}
    )
    empty = await signed_in.post("/consents/import", {"csv": "  \n"})
    header_only = await signed_in.post("/consents/import", {"csv": "recipient,status\n"})

    assert wrong_header.status_code == 400
    assert "no column &#39;recipient&#39;" in wrong_header.text
    assert "--to-column" not in wrong_header.text
    assert "phone,status" in wrong_header.text  # the text stays, for correcting
    assert empty.status_code == 400 and "Paste the CSV or choose a file." in empty.text
    assert header_only.status_code == 400
    for livemode in (True, False):
        principal = await bed.messenger.principal(bed.workspace.id, livemode=livemode)
        assert (await bed.messenger.consents.list(principal)).data == []


async def test_a_change_without_the_csrf_token_is_refused(signed_in: Console, bed: TestBed) -> None:
    body = {"recipient": NUMBER, "status": "ONAY", "source": "HS_WEB"}
    forged = await signed_in.post("/consents", body, csrf="")
    foreign = await signed_in.post("/consents/import", {"csv": "recipient,status\n"},
                                   origin="https://evil.example")  # fmt: skip

    assert (forged.status_code, foreign.status_code) == (403, 403)
    for livemode in (True, False):
        principal = await bed.messenger.principal(bed.workspace.id, livemode=livemode)
        assert (await bed.messenger.consents.list(principal)).data == []


async def test_markup_in_an_address_is_shown_as_text(signed_in: Console, bed: TestBed) -> None:
    await _test_mode(signed_in)
    consent = await bed.messenger.consents.create(
        bed.principal,
        {
            "recipient": MARKUP_MAIL,
            "type": "EPOSTA",
            "status": "ONAY",
            "source": "HS_EPOSTA",
        },
    )
    for path in ("/consents", f"/consents/{consent.id}"):
        page = (await signed_in.get(path)).text
        assert MARKUP_MAIL not in page and "&lt;script&gt;" in page


async def test_the_list_filters_by_recipient_in_any_form_and_by_status(
    signed_in: Console, bed: TestBed
) -> None:
    await _test_mode(signed_in)
    for number, status in (("+905321000011", "ONAY"), ("+905321000012", "ONAY")):
        await bed.messenger.consents.create(
            bed.principal, {"recipient": number, "status": status, "source": "HS_WEB"}
        )

    one = (await signed_in.get("/consents", params={"recipient": "0532 100 00 11"})).text
    rets = (await signed_in.get("/consents", params={"status": "RET"})).text
    bad = await signed_in.get("/consents", params={"status": "MAYBE"})

    assert "+905321000011" in one and "+905321000012" not in one
    assert "No consents that match the filter" in rets
    assert bad.status_code == 400 and "+905321000012" in bad.text  # the whole list, and why


async def test_a_member_sees_and_changes_only_their_workspace(
    browser: Console, member: User, messenger: Messenger, bed: TestBed
) -> None:
    other = await messenger.workspaces.create("Other Ltd")
    for livemode in (True, False):
        theirs = await messenger.principal(other.id, livemode=livemode)
        await messenger.consents.create(
            theirs, {"recipient": "+905329998877", "status": "ONAY", "source": "HS_WEB"}
        )
    [their_consent] = (await messenger.consents.list(theirs)).data
    assert (await browser.sign_in(member.email)).status_code == 303
    for mode in ("live", "test"):
        await browser.post("/view", {"livemode": mode})
        assert "+905329998877" not in (await browser.get("/consents")).text
        assert (await browser.get(f"/consents/{their_consent.id}")).status_code == 404
    await browser.post("/view", {"workspace_id": other.id})
    assert "+905329998877" not in (await browser.get("/consents")).text
