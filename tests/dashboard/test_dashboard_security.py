"""D31's guards over real HTTP: CSRF and ``Origin`` on every state change, the response
headers, markup shown as text, and a member kept to their own workspace whatever the URL."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
import pytest
from _dash_support import PASSWORD, Console, PageAudit

from unified_messaging import Messenger
from unified_messaging.testing import TestBed
from unified_messaging.users._store import User

CSP = "default-src 'self'; frame-ancestors 'none'"
MARKUP = '<script>alert("x")</script><img src=x onerror=alert(1)>'


async def _key_names(messenger: Messenger, workspace_id: str) -> list[str | None]:
    return [k.name for k in await messenger.keys.list(workspace_id)]


@pytest.mark.parametrize(
    ("csrf", "origin", "site"),
    [
        ("", "own", None),  # no token
        ("forged-token", "own", None),  # a wrong token
        (None, "https://evil.example", None),  # the right token, from another site
        (None, "null", None),  # an old browser's sandboxed frame or data: page
        (None, "http://127.0.0.1:1", None),  # the right host on another port
        (None, "null", "cross-site"),  # a browser's own word on where the request came from
        (None, "null", "same-site"),  # a sibling subdomain is another origin too
        (None, "own", "none"),  # typed into the address bar: not a form of ours
    ],
)
async def test_a_state_change_without_the_token_or_from_elsewhere_is_403(
    signed_in: Console, bed: TestBed, csrf: str | None, origin: str, site: str | None
) -> None:
    before = await _key_names(bed.messenger, bed.workspace.id)
    fetch = {} if site is None else {"Sec-Fetch-Site": site}
    answer = await signed_in.post(
        "/keys", {"name": "forged"}, csrf=csrf, origin=origin, headers=fetch
    )
    assert answer.status_code == 403
    assert await _key_names(bed.messenger, bed.workspace.id) == before


async def test_a_same_origin_post_under_no_referrer_is_accepted(
    signed_in: Console, bed: TestBed
) -> None:
    """What a browser sends from our own form under ``Referrer-Policy: no-referrer``: the
    Fetch standard makes its ``Origin`` ``null``; ``Sec-Fetch-Site`` says same-origin."""
    answer = await signed_in.post("/keys", {"name": "from the form"}, origin="null",
                                  headers={"Sec-Fetch-Site": "same-origin"})  # fmt: skip
    assert answer.status_code == 303
    assert "from the form" in await _key_names(bed.messenger, bed.workspace.id)


async def test_the_token_in_the_htmx_header_is_accepted(signed_in: Console, bed: TestBed) -> None:
    token = await signed_in.token("/keys")
    answer = await signed_in.http.post(
        signed_in.base + "/keys", data={"name": "via htmx"},
        headers={"X-CSRF-Token": token, "Origin": signed_in.origin, "HX-Request": "true"},
    )  # fmt: skip
    assert (answer.status_code, answer.headers["hx-redirect"]) == (204, "/dashboard/keys")
    assert "via htmx" in await _key_names(bed.messenger, bed.workspace.id)


async def test_without_an_origin_header_the_token_alone_decides(
    signed_in: Console, bed: TestBed
) -> None:
    assert (await signed_in.post("/keys", {"name": "no origin"}, origin=None)).status_code == 303
    assert (await signed_in.post("/keys", {"name": "x"}, csrf="", origin=None)).status_code == 403


@pytest.mark.parametrize("path", ["/login", "/", "/keys", "/static/dashboard.css", "/nowhere"])
async def test_every_answer_carries_the_security_headers(signed_in: Console, path: str) -> None:
    answer = await signed_in.get(path)
    csp = answer.headers["content-security-policy"]
    assert csp.startswith(CSP)
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert answer.headers["referrer-policy"] == "no-referrer"
    assert answer.headers["x-content-type-options"] == "nosniff"


async def test_no_page_has_inline_script_and_every_control_is_named(
    signed_in: Console, bed: TestBed
) -> None:
    await bed.messenger.keys.create(bed.workspace.id, name="for the revoke button")
    await bed.messenger.templates.set(bed.workspace.id, "greet", "Merhaba {{ name }}!")
    for path in ("/login", "/", "/messages", "/keys", "/templates", "/templates/new",
                 "/templates/greet", "/allowlist", "/webhooks", "/connections",
                 "/connections/new?provider=bizchat", "/audit", "/consents"):  # fmt: skip
        audit = PageAudit((await signed_in.get(path)).text)
        assert audit.inline_scripts == 0, path
        assert audit.handlers == [], path
        assert audit.unlabelled == [], path
        assert audit.empty_buttons == 0, path


async def test_markup_in_names_is_shown_as_text(
    signed_in: Console, messenger: Messenger, bed: TestBed
) -> None:
    await messenger.workspaces.create(MARKUP)
    await messenger.keys.create(bed.workspace.id, name=MARKUP)
    for path in ("/", "/keys"):
        page = (await signed_in.get(path)).text
        assert MARKUP not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in (await signed_in.get("/keys")).text


@dataclass(frozen=True)
class Other:
    workspace_id: str
    job_id: str


@pytest.fixture
async def other(messenger: Messenger) -> Other:
    """A second workspace, with a test key and a test message of its own."""
    workspace = await messenger.workspaces.create("Other Ltd")
    await messenger.connections.add(workspace.id, "sms_a", default_sender="OTHER")
    key = await messenger.keys.create(workspace.id, name="other-key")
    principal = await messenger.authenticate(key.secret)
    sent = await messenger.send(principal, {"to": "+905551112233", "body": "secret order 42"})
    return Other(workspace.id, sent.job_id)


async def test_a_member_never_sees_another_workspace(
    browser: Console, member: User, other: Other, messenger: Messenger
) -> None:
    assert (await browser.sign_in(member.email)).status_code == 303
    job_id = other.job_id
    message = await browser.get(f"/messages/{job_id}")
    assert message.status_code == 404
    assert "+905551112233" not in message.text
    listing = await browser.get("/messages")
    assert job_id not in listing.text
    keys = await browser.get("/keys")
    assert "other-key" not in keys.text
    assert "Other Ltd" not in (await browser.get("/")).text
    other_key = (await messenger.keys.list(other.workspace_id))[0]
    revoke = await browser.post(f"/keys/{other_key.id}/revoke")
    assert revoke.status_code == 404
    assert (await messenger.keys.list(other.workspace_id))[0].revoked_at is None
    # Asking for the other workspace by id changes nothing: a member's workspace is theirs.
    switched = await browser.post("/view", {"workspace_id": other.workspace_id})
    assert switched.status_code == 303
    assert (await browser.get(f"/messages/{job_id}")).status_code == 404
    assert "other-key" not in (await browser.get("/keys")).text


async def test_an_operator_switches_workspaces(
    signed_in: Console, other: Other, bed: TestBed
) -> None:
    job_id = other.job_id
    assert (await signed_in.get(f"/messages/{job_id}")).status_code == 404  # not the one shown
    await signed_in.post("/view", {"workspace_id": other.workspace_id, "back": "/keys"})
    assert "other-key" in (await signed_in.get("/keys")).text
    assert (await signed_in.get(f"/messages/{job_id}")).status_code == 200
    await signed_in.post("/view", {"livemode": "live"})
    assert (await signed_in.get(f"/messages/{job_id}")).status_code == 404  # a test message
    missing = await signed_in.post("/view", {"workspace_id": "ws_nope"})
    assert missing.status_code == 404


async def test_the_users_password_never_appears(signed_in: Console) -> None:
    for path in ("/", "/keys", "/messages"):
        assert PASSWORD not in (await signed_in.get(path)).text


async def test_a_huge_form_is_refused(signed_in: Console) -> None:
    token = await signed_in.token()
    answer = await signed_in.http.post(
        signed_in.base + "/keys", content=b"name=" + b"x" * 70_000,
        headers={"Content-Type": "application/x-www-form-urlencoded", "X-CSRF-Token": token},
    )  # fmt: skip
    assert answer.status_code == 413
    assert isinstance(answer, httpx.Response)
