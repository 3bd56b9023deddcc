"""The Verifications page over real HTTP (D34): recent verifications with their code message
(the code shown in test mode, masked in live mode), the conversion per channel, the pumping
guard's refusals and its limits changed through the façade (audited), bad limits refused
with the façade's words, CSRF, and a member kept to their own workspace."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
from _dash_support import Console
from fakes._server import serve
from fakes.netgsm import NetgsmFake

from unified_messaging import Messenger
from unified_messaging.testing import TestBed
from unified_messaging.users._store import User
from unified_messaging.verifications import Velocity

RANGE = [f"+90555123{n:04d}" for n in range(5)]


async def _start(url: str, key: str, to: str, **extra: object) -> httpx.Response:
    async with httpx.AsyncClient() as rest:
        return await rest.post(
            url + "/v1/verifications", json={"to": to, **extra},
            headers={"Authorization": f"Bearer {key}"},
        )  # fmt: skip


async def _test_mode(console: Console) -> None:
    assert (await console.post("/view", {"livemode": "test"})).status_code == 303


async def test_the_page_shows_recent_verifications_conversion_and_refusals(
    signed_in: Console, url: str, bed: TestBed, messenger: Messenger
) -> None:
    await messenger.verifications.guard.update_settings(
        bed.workspace.id, prefix_limit=Velocity(2, timedelta(minutes=10))
    )
    started = [await _start(url, bed.api_key, to) for to in RANGE[:3]]
    assert [s.status_code for s in started] == [201, 201, 429]
    code = bed.outbox.last_code(RANGE[0])
    assert code is not None
    await messenger.verifications.check(bed.principal, started[0].json()["id"], {"code": code})
    await _test_mode(signed_in)

    page = await signed_in.get("/verifications")

    assert page.status_code == 200
    text = page.text
    assert "50.0%" in text and "sms: 1 approved of 2 started" in text
    assert text.count('<td><span class="badge approved">') == 1
    assert text.count('<td><span class="badge pending">') == 1
    assert f"Doğrulama kodunuz: {code}." in text  # test mode: the code is shown
    assert "+90555123" in text and "number range" in text  # the refusal
    assert 'value="2/10m"' in text


async def test_a_live_code_is_masked_on_the_page(
    signed_in: Console, url: str, bed: TestBed, messenger: Messenger
) -> None:
    netgsm = NetgsmFake()
    async with serve(netgsm.app) as netgsm_url:
        connections = await messenger.connections.list(bed.workspace.id)
        [simulated] = [c for c in connections if c.provider == "sms_a"]
        await messenger.connections.remove(simulated.id)
        await messenger.connections.add(
            bed.workspace.id, "sms_a", default_sender="ACME", base_url=netgsm_url,
            credentials={"usercode": netgsm.usercode, "password": netgsm.password},
            make_default=True,
        )  # fmt: skip
        live = await messenger.keys.create(bed.workspace.id, livemode=True)
        started = await _start(url, live.secret, RANGE[0])
    assert started.status_code == 201, started.text
    sent = netgsm.sends[-1].json
    assert isinstance(sent, dict)
    assert re.search(r"kodunuz: [0-9]{6}", sent["messages"][0]["msg"])  # the handset's text

    assert (await signed_in.post("/view", {"livemode": "live"})).status_code == 303
    page = await signed_in.get("/verifications")

    assert "Doğrulama kodunuz: ******." in page.text
    assert re.search(r"kodunuz: [0-9]{6}", page.text) is None


async def test_the_limits_are_changed_through_the_facade_and_audited(
    signed_in: Console, bed: TestBed, messenger: Messenger
) -> None:
    changed = await signed_in.post(
        "/verifications/guard",
        {"prefix_limit": "5/1h", "prefix_digits": "4", "address_limit": "off"},
    )

    assert (changed.status_code, changed.headers["location"]) == (303, "/dashboard/verifications")
    settings = await messenger.verifications.guard.settings(bed.workspace.id)
    assert (str(settings.prefix_limit), settings.prefix_digits) == ("5/1h", 4)
    assert settings.address_limit is None
    page = await signed_in.follow(changed)
    assert "The SMS-pumping guard is changed." in page.text
    [event] = (await messenger.audit.list(action="workspace.verify_guard")).data
    assert event.actor == "dashboard:ops@example.com"


async def test_bad_limits_get_the_facades_words_and_change_nothing(
    signed_in: Console, bed: TestBed, messenger: Messenger
) -> None:
    for form, words in [
        ({"prefix_limit": "lots", "prefix_digits": "6", "address_limit": "off"}, "N/WINDOW"),
        ({"prefix_limit": "5/1h", "prefix_digits": "12", "address_limit": "off"}, "3-9"),
        ({"prefix_limit": "5/1h", "prefix_digits": "x", "address_limit": "off"}, "3-9"),
        ({"prefix_limit": "5/9d", "prefix_digits": "6", "address_limit": "off"}, "1 day"),
    ]:
        answer = await signed_in.post("/verifications/guard", form)
        assert answer.status_code == 400, form
        assert words in answer.text
        assert 'role="alert"' in answer.text

    assert await messenger.verifications.guard.settings(bed.workspace.id) == (
        await messenger.verifications.guard.settings("ws_none")
    )


async def test_a_change_without_the_csrf_token_is_refused(
    signed_in: Console, bed: TestBed, messenger: Messenger
) -> None:
    answer = await signed_in.post(
        "/verifications/guard",
        {"prefix_limit": "1/1h", "prefix_digits": "6", "address_limit": "off"},
        csrf="",
    )

    assert answer.status_code == 403
    settings = await messenger.verifications.guard.settings(bed.workspace.id)
    assert str(settings.prefix_limit) == "20/10m"


async def test_a_member_sees_only_their_workspaces_verifications(
    browser: Console, member: User, messenger: Messenger, bed: TestBed, url: str
) -> None:
    other = await messenger.workspaces.create("elsewhere")
    await messenger.connections.add(other.id, "sms_a", credentials={}, default_sender="ACME")
    key = await messenger.keys.create(other.id, livemode=False)
    await _start(url, key.secret, "+905329998877")
    await _start(url, bed.api_key, "+905551112233")
    assert (await browser.sign_in(member.email)).status_code == 303
    await _test_mode(browser)

    page = await browser.get("/verifications")

    assert "+905551112233" in page.text
    assert "+905329998877" not in page.text
