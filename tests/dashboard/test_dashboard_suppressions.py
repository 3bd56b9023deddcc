"""The Suppressions page over real HTTP: entries added and removed through the
façade, the REST API refusing a suppressed recipient, the façade's words for bad input, CSRF,
markup shown as text, and a member kept to their own workspace."""

from __future__ import annotations

import httpx
from _dash_support import Console

from unified_messaging import Messenger
from unified_messaging.dashboard._auth import User
from unified_messaging.testing import TestBed

NUMBER = "+905551234567"
MARKUP = '<script>alert("x")</script>'


async def _rest_send(url: str, bed: TestBed) -> httpx.Response:
    async with httpx.AsyncClient() as rest:
        return await rest.post(url + "/v1/messages", json={"to": NUMBER, "body": "x"},
                               headers={"Authorization": f"Bearer {bed.api_key}"})  # fmt: skip


async def _test_mode(console: Console) -> None:
    # The testbed's API key is a test key: the page must show (and change) the test list.
    assert (await console.post("/view", {"livemode": "test"})).status_code == 303


async def test_a_recipient_suppressed_in_the_dashboard_is_refused_by_rest(
    signed_in: Console, url: str, bed: TestBed, messenger: Messenger
) -> None:
    await _test_mode(signed_in)
    assert (await _rest_send(url, bed)).status_code == 201
    added = await signed_in.post(
        "/suppressions", {"channel": "sms", "recipient": "0555 123 45 67", "reason": MARKUP}
    )
    # Post/redirect/get: the change answers 303, its notice is shown once, by the next page.
    assert (added.status_code, added.headers["location"]) == (303, "/dashboard/suppressions")
    refused = await _rest_send(url, bed)
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "RECIPIENT_SUPPRESSED")
    page = (await signed_in.get("/suppressions")).text
    assert f"{NUMBER} is suppressed on sms." in page
    assert NUMBER in page and "dashboard" in page
    assert MARKUP not in page and "&lt;script&gt;" in page
    assert "is suppressed on sms." not in (await signed_in.get("/suppressions")).text
    [event] = (await messenger.audit.list(action="suppression.add")).data
    assert event.actor == "dashboard:ops@example.com"

    removed = await signed_in.post("/suppressions/remove", {"channel": "sms", "recipient": NUMBER})
    assert removed.status_code == 303
    after = (await signed_in.get("/suppressions")).text
    assert f"{NUMBER} is no longer suppressed on sms." in after
    assert f'mono">{NUMBER}' not in after and "Nobody is suppressed" in after
    assert (await _rest_send(url, bed)).status_code == 201


async def test_bad_input_gets_the_facades_words(signed_in: Console) -> None:
    unknown = await signed_in.post("/suppressions", {"channel": "fax", "recipient": NUMBER})
    assert unknown.status_code == 400 and "unknown channel" in unknown.text
    garbage = await signed_in.post("/suppressions", {"channel": "sms", "recipient": "12ab"})
    assert garbage.status_code == 422 and "Not a phone number" in garbage.text
    assert 'value="12ab"' in garbage.text  # kept for correcting
    huge = await signed_in.post("/suppressions", {"channel": "sms", "recipient": "9" * 500})
    assert huge.status_code == 400
    listing = await signed_in.get("/suppressions", params={"recipient": "'; DROP TABLE x;--"})
    assert listing.status_code == 200 and "Nobody is suppressed" in listing.text


async def test_a_change_without_the_csrf_token_is_refused(
    signed_in: Console, messenger: Messenger, bed: TestBed
) -> None:
    forged = await signed_in.post("/suppressions", {"channel": "sms", "recipient": NUMBER}, csrf="")
    assert forged.status_code == 403
    for livemode in (True, False):
        principal = await messenger.principal(bed.workspace.id, livemode=livemode)
        assert (await messenger.suppressions.list(principal)).data == []


async def test_a_member_sees_and_changes_only_their_workspace(
    browser: Console, member: User, messenger: Messenger, bed: TestBed
) -> None:
    other = await messenger.workspaces.create("Other Ltd")
    for livemode in (True, False):
        theirs = await messenger.principal(other.id, livemode=livemode)
        await messenger.suppressions.add(theirs, {"channel": "sms", "recipient": "+905559998877"})
    assert (await browser.sign_in(member.email)).status_code == 303
    for mode in ("live", "test"):
        await browser.post("/view", {"livemode": mode})
        assert "+905559998877" not in (await browser.get("/suppressions")).text
        removed = await browser.post(
            "/suppressions/remove", {"channel": "sms", "recipient": "+905559998877"}
        )
        assert removed.status_code == 303
    await browser.post("/view", {"workspace_id": other.id})
    assert "+905559998877" not in (await browser.get("/suppressions")).text
    for livemode in (True, False):
        theirs = await messenger.principal(other.id, livemode=livemode)
        assert len((await messenger.suppressions.list(theirs)).data) == 1
