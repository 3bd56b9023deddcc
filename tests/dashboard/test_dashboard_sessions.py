"""D31's sessions over real HTTP: the cookie, rotation at sign-in, sign-out, the idle and
absolute lifetimes, the sign-in throttle, and the one-time login link."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import httpx
from _dash_support import PASSWORD, Console, csrf_of

from unified_messaging import ManualClock, Messenger
from unified_messaging.dashboard import issue_login_link
from unified_messaging.users._store import User


def _session_cookie(answer: httpx.Response) -> str:
    return next(v for k, v in answer.headers.multi_items() if k == "set-cookie"
                and v.startswith("um_session="))  # fmt: skip


async def test_signing_in_sets_a_strict_session_cookie(
    browser: Console, operator: User, messenger: Messenger
) -> None:
    answer = await browser.sign_in("OPS@example.com ")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/dashboard/"
    header = _session_cookie(answer)
    attributes = [part.strip().lower() for part in header.split(";")]
    assert "httponly" in attributes
    assert "samesite=lax" in attributes
    assert "path=/dashboard" in attributes
    assert "secure" not in attributes  # plain HTTP here: a Secure cookie would never return
    session_id = browser.http.cookies["um_session"]
    assert len(session_id) >= 43  # 256 bits, URL-safe base64
    # The store keeps its hash only: a copy of the database signs nobody in.
    assert await messenger.store.get_session(session_id) is None
    digest = hashlib.sha256(session_id.encode()).hexdigest()
    assert await messenger.store.get_session(digest) is not None
    overview = await browser.get("/")
    assert overview.status_code == 200 and "Overview" in overview.text


async def test_a_wrong_password_signs_nobody_in(browser: Console, operator: User) -> None:
    answer = await browser.sign_in(operator.email, "not the password at all")
    assert answer.status_code == 401
    assert "Wrong e-mail or password." in answer.text
    assert "um_session" not in browser.http.cookies
    unknown = await browser.sign_in("nobody@example.com")
    assert unknown.status_code == 401 and "Wrong e-mail or password." in unknown.text


async def test_pages_need_a_session(browser: Console) -> None:
    answer = await browser.get("/messages?status=sent")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/dashboard/login?next=/dashboard/messages%3Fstatus%3Dsent"
    post = await browser.post("/keys", {"name": "x"}, csrf="anything")
    assert post.status_code == 401


async def test_signing_in_rotates_the_session_id(signed_in: Console, operator: User) -> None:
    before = signed_in.http.cookies["um_session"]
    again = await signed_in.sign_in(operator.email)
    assert again.status_code == 303
    after = signed_in.http.cookies["um_session"]
    assert after != before
    signed_in.http.cookies.set("um_session", before, path="/dashboard")
    assert (await signed_in.get("/")).status_code == 303  # the old id ended with the sign-in


async def test_a_signed_out_session_id_no_longer_works(signed_in: Console) -> None:
    session_id = signed_in.http.cookies["um_session"]
    answer = await signed_in.post("/logout")
    assert answer.status_code == 303 and answer.headers["location"] == "/dashboard/login"
    assert "um_session" not in signed_in.http.cookies  # the browser was told to drop it
    signed_in.http.cookies.set("um_session", session_id, path="/dashboard")
    assert (await signed_in.get("/")).status_code == 303


async def test_a_session_ends_after_12_idle_hours(signed_in: Console, clock: ManualClock) -> None:
    clock.advance(timedelta(hours=11, minutes=59))
    assert (await signed_in.get("/")).status_code == 200  # in use: the idle clock restarts
    clock.advance(timedelta(hours=11, minutes=59))
    assert (await signed_in.get("/")).status_code == 200
    clock.advance(timedelta(hours=12, seconds=1))
    assert (await signed_in.get("/")).status_code == 303


async def test_a_session_ends_7_days_after_sign_in_however_busy(
    signed_in: Console, clock: ManualClock
) -> None:
    for _ in range(15):  # 15 x 11 h = 6 d 21 h, never idle for long
        clock.advance(timedelta(hours=11))
        assert (await signed_in.get("/")).status_code == 200
    clock.advance(timedelta(hours=3, seconds=1))
    assert (await signed_in.get("/")).status_code == 303


async def test_a_disabled_user_is_signed_out_at_once(
    signed_in: Console, operator: User, messenger: Messenger
) -> None:
    await messenger.users.disable(operator.email)
    assert (await signed_in.get("/")).status_code == 303
    again = await signed_in.sign_in(operator.email)
    assert again.status_code == 401


async def test_five_failed_sign_ins_per_account_and_address_give_429(
    browser: Console, operator: User, messenger: Messenger, clock: ManualClock
) -> None:
    await messenger.users.create("other@example.com", PASSWORD, operator=True)
    for _ in range(5):
        assert (await browser.sign_in(operator.email, "wrong password!!")).status_code == 401
    blocked = await browser.sign_in(operator.email)  # even the right password now
    assert blocked.status_code == 429
    assert int(blocked.headers["retry-after"]) > 0
    assert "Too many sign-in attempts" in blocked.text
    assert "um_session" not in browser.http.cookies
    # Another account from the same address is not held up by it.
    assert (await browser.sign_in("other@example.com")).status_code == 303
    clock.advance(timedelta(minutes=15, seconds=1))
    assert (await browser.sign_in(operator.email)).status_code == 303


async def test_a_sign_in_from_another_site_is_refused(browser: Console, operator: User) -> None:
    form = await browser.get("/login")
    data = {"email": operator.email, "password": PASSWORD, "csrf_token": csrf_of(form.text)}
    foreign = await browser.http.post(
        browser.base + "/login", data=data, headers={"Origin": "https://evil.example"}
    )
    assert foreign.status_code == 403
    no_token = await browser.http.post(
        browser.base + "/login", data={**data, "csrf_token": "made-up"},
        headers={"Origin": browser.origin},
    )  # fmt: skip
    assert no_token.status_code == 403
    assert "um_session" not in browser.http.cookies


async def test_after_sign_in_the_browser_goes_back_but_never_off_site(
    browser: Console, operator: User
) -> None:
    for wanted, landing in [
        ("/dashboard/keys", "/dashboard/keys"),
        ("//evil.example/x", "/dashboard/"),
        ("https://evil.example/", "/dashboard/"),
        ("/dashboard/\\evil", "/dashboard/"),
    ]:
        form = await browser.http.get(browser.base + "/login", params={"next": wanted})
        answer = await browser.http.post(
            browser.base + "/login",
            params={"next": wanted},
            data={"email": operator.email, "password": PASSWORD,
                  "csrf_token": csrf_of(form.text)},
            headers={"Origin": browser.origin},
        )  # fmt: skip
        assert answer.headers["location"] == landing, wanted


async def test_a_login_link_signs_in_once(
    browser: Console, messenger: Messenger, operator: User, clock: ManualClock
) -> None:
    path = await issue_login_link(messenger, operator.email)
    page = await browser.get(path)
    assert page.status_code == 200 and "Sign in" in page.text
    assert "um_session" not in browser.http.cookies  # a GET (a link preview) signs nobody in
    token = csrf_of(page.text)
    data = {"csrf_token": token}
    used = await browser.http.post(browser.base + path, data=data,
                                   headers={"Origin": browser.origin})  # fmt: skip
    assert used.status_code == 303
    assert (await browser.get("/")).status_code == 200
    again = await browser.get(path)
    second = await browser.http.post(browser.base + path, data={"csrf_token": csrf_of(again.text)},
                                     headers={"Origin": browser.origin})  # fmt: skip
    assert second.status_code == 410
    late = await issue_login_link(messenger, operator.email)
    clock.advance(timedelta(hours=24, seconds=1))
    page = await browser.get(late)
    expired = await browser.http.post(browser.base + late, data={"csrf_token": csrf_of(page.text)},
                                      headers={"Origin": browser.origin})  # fmt: skip
    assert expired.status_code == 410


async def test_the_throttle_counts_across_dashboards_on_one_store(
    messenger: Messenger, operator: User
) -> None:
    """Two dashboards over one store stand for two ``serve`` processes: failures at either
    count at both."""
    from fakes._server import serve
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from unified_messaging.dashboard import create_dashboard

    host = Starlette(routes=[Mount("/one", app=create_dashboard(messenger)),
                             Mount("/two", app=create_dashboard(messenger))])  # fmt: skip
    async with serve(host) as url, httpx.AsyncClient() as http:
        one, two = Console(http, url + "/one"), Console(http, url + "/two")
        for console in (one, one, one, two, two):
            assert (await console.sign_in(operator.email, "wrong password!!")).status_code == 401
        assert (await one.sign_in(operator.email)).status_code == 429
        assert (await two.sign_in(operator.email)).status_code == 429


async def test_a_sign_in_sweeps_sessions_that_can_no_longer_be_used(
    browser: Console, operator: User, messenger: Messenger, clock: ManualClock
) -> None:
    assert (await browser.sign_in(operator.email)).status_code == 303
    abandoned = hashlib.sha256(browser.http.cookies["um_session"].encode()).hexdigest()
    browser.http.cookies.clear()  # the browser forgot it; nobody signed out
    clock.advance(timedelta(hours=13))
    assert (await browser.sign_in(operator.email)).status_code == 303
    assert await messenger.store.get_session(abandoned) is None
