"""The Audit log page over real HTTP (D32): operators read every change, newest first, with the
dashboard user and address that made it; filters and pages; members are refused."""

from __future__ import annotations

import re

import httpx
from _dash_support import PASSWORD, Console

from unified_messaging import Messenger
from unified_messaging.audit._context import CLI, acting_as
from unified_messaging.testing import TestBed
from unified_messaging.users._store import User

MARKUP = '<script>alert("x")</script>'


def _rows(page: str) -> list[str]:
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0] if "<tbody>" in page else ""
    return re.findall(r"<tr>(.*?)</tr>", body, re.DOTALL)


async def test_a_change_made_in_the_dashboard_is_on_the_audit_page_with_its_user(
    signed_in: Console, bed: TestBed
) -> None:
    made = await signed_in.post("/allowlist", {"cidr": "127.0.0.0/8"})
    assert made.status_code == 303

    page = await signed_in.get("/audit")

    assert page.status_code == 200
    [newest, *_] = _rows(page.text)
    assert "allowlist.add" in newest
    assert "dashboard:ops@example.com" in newest
    assert "127.0.0.0/8" in newest
    assert "127.0.0.1" in newest  # the address the change came from


async def test_filters_and_the_next_page(
    signed_in: Console, messenger: Messenger, bed: TestBed
) -> None:
    other = await messenger.workspaces.create("Other Ltd")
    with acting_as(CLI):
        for n in range(55):
            await messenger.templates.set(bed.workspace.id, f"t{n}", f"body {n}")
        await messenger.workspaces.set_monthly_quota(other.id, 10)

    first = await signed_in.get("/audit", params={"action": "template.set"})
    rows = _rows(first.text)
    assert len(rows) == 50 and all("template.set" in row for row in rows)
    assert ">t54<" in rows[0]  # newest first
    older = re.search(r'href="([^"]*after=[^"]+)"', first.text)
    assert older is not None
    rest = await signed_in.get(older.group(1).replace("&amp;", "&").split("/dashboard", 1)[1])
    assert [">t4<" in r for r in _rows(rest.text)].count(True) == 1
    assert len(_rows(rest.text)) == 5

    theirs = await signed_in.get("/audit", params={"workspace": other.id})
    newest, *_ = _rows(theirs.text)
    assert "workspace.quota" in newest and ">cli<" in newest
    assert all("template.set" not in r for r in _rows(theirs.text))


async def test_an_unknown_action_in_the_url_is_said_not_a_500(signed_in: Console) -> None:
    page = await signed_in.get("/audit", params={"action": "nope", "after": "aud_nope"})
    assert page.status_code == 400
    assert "unknown action" in page.text


async def test_a_member_cannot_read_the_audit_log(url: str, member: User) -> None:
    async with httpx.AsyncClient(follow_redirects=False, timeout=10) as http:
        console = Console(http, url + "/dashboard")
        assert (await console.sign_in(member.email, PASSWORD)).status_code == 303
        page = await console.get("/audit")
    assert page.status_code == 403
    assert "Only operators" in page.text
    assert "<tbody>" not in page.text


async def test_markup_in_a_target_or_actor_is_text(
    signed_in: Console, messenger: Messenger, bed: TestBed
) -> None:
    from unified_messaging.audit._context import Actor

    with acting_as(Actor(MARKUP, client_address=MARKUP)):
        await messenger.workspaces.set_monthly_quota(bed.workspace.id, 5)
    page = (await signed_in.get("/audit")).text
    assert MARKUP not in page
    assert "&lt;script&gt;" in page


async def test_the_audit_page_has_no_test_live_switch_it_covers_both(signed_in: Console) -> None:
    page = await signed_in.get("/audit")
    assert page.status_code == 200
    assert "Switch to live data" not in page.text and "viewing test data" not in page.text
    assert "Test and live changes alike" in page.text
    keys = await signed_in.get("/keys")  # every other page keeps them
    assert "Switch to live data" in keys.text and "viewing test data" in keys.text


async def test_targets_name_what_a_person_recognises(
    signed_in: Console, bed: TestBed, messenger: Messenger
) -> None:
    key = await messenger.keys.create(bed.workspace.id, livemode=False, name="checkout <b>")
    await signed_in.post("/view", {"livemode": "test"})
    sent = await signed_in.post("/compose", {"to": "+905551234567", "body": "x"})
    job_id = sent.headers["location"].rsplit("/", 1)[1]

    rows = _rows((await signed_in.get("/audit")).text)

    [composed] = [r for r in rows if "message.send" in r]
    assert f'<a href="/dashboard/messages/{job_id}">{job_id}</a>' in composed
    [created] = [r for r in rows if key.record.id in r]
    assert "· checkout &lt;b&gt;" in created
    connection = next(r for r in rows if "connection.add" in r)
    assert re.search(r"· (sms_[a-e]|chatbot|bizchat) · ", connection)


async def test_a_suppression_or_consent_target_shows_its_recipient_masked(
    signed_in: Console, bed: TestBed, messenger: Messenger
) -> None:
    live = await messenger.principal(bed.workspace.id, livemode=True)
    entry = await messenger.suppressions.add(
        live, {"channel": "sms", "recipient": "+905551112233", "reason": "asked by phone"}
    )
    consent = await messenger.consents.create(
        bed.principal, {"recipient": "+905554445566", "status": "ONAY", "source": "HS_WEB"}
    )

    rows = _rows((await signed_in.get("/audit")).text)

    [suppressed] = [r for r in rows if entry.id in r]
    assert "· +********2233" in suppressed and "5551112233" not in suppressed
    [recorded] = [r for r in rows if consent.id in r]
    assert "· +********5566" in recorded and "5554445566" not in recorded
