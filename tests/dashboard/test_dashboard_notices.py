"""Post/redirect/get over real HTTP: every change made through a form answers 303, so a
refresh or the back button repeats a GET and never the change; what the post had to say is
a one-time notice, shown by the next full page of that session only, once, never in a URL.
"""

from __future__ import annotations

import re

import httpx
import pytest
from _dash_support import Console

from unified_messaging import Messenger
from unified_messaging.testing import TestBed
from unified_messaging.users._store import User


def _secret(page: str) -> str:
    found = re.search(r'<code id="new-key-secret">([^<]+)</code>', page)
    assert found, "no key shown"
    return found.group(1)


async def test_a_refresh_after_creating_a_key_neither_repeats_it_nor_shows_the_secret(
    signed_in: Console, bed: TestBed
) -> None:
    before = len(await bed.messenger.keys.list(bed.workspace.id))
    created = await signed_in.post("/keys", {"name": "once"})
    location = created.headers["location"]
    assert (created.status_code, location) == (303, "/dashboard/keys")
    secret = _secret((await signed_in.follow(created)).text)
    assert secret not in location and secret not in created.text

    for _ in range(2):  # the refresh (and the back button: the page is no-store) is a GET
        again = await signed_in.get("/keys")
        assert again.status_code == 200 and secret not in again.text
    assert len(await bed.messenger.keys.list(bed.workspace.id)) == before + 1


async def test_an_htmx_reload_leaves_the_notice_for_the_page(
    signed_in: Console, bed: TestBed
) -> None:
    created = await signed_in.post("/keys", {"name": "htmx"})
    # A partial reload (the messages list, a timeline asking again) does not take it...
    partial = await signed_in.get("/messages", headers={"HX-Request": "true"})
    assert partial.status_code == 200 and "new-key-secret" not in partial.text
    # ...the page the post redirected to does.
    assert _secret((await signed_in.follow(created)).text).startswith("um_test_")


async def test_a_notice_is_for_its_own_session_only(
    signed_in: Console, url: str, operator: User
) -> None:
    async with httpx.AsyncClient(follow_redirects=False, timeout=10) as http:
        other = Console(http, url + "/dashboard")  # the same user in another browser
        assert (await other.sign_in(operator.email)).status_code == 303
        created = await signed_in.post("/keys", {"name": "mine"})
        assert "new-key-secret" not in (await other.get("/keys")).text
    assert "new-key-secret" in (await signed_in.follow(created)).text


async def test_the_stored_notice_holds_no_readable_secret(
    signed_in: Console, messenger: Messenger
) -> None:
    await signed_in.post("/keys", {"name": "sealed"})
    session_hash = next(iter(messenger.store._notices))  # type: ignore[attr-defined]
    [(_, sealed)] = await messenger.store.take_notices(session_hash)
    assert "um_test_" not in sealed and "sealed" not in sealed
    # Taken by someone else first (another process), the page shows nothing, and no error.
    page = await signed_in.get("/keys")
    assert page.status_code == 200 and "new-key-secret" not in page.text


@pytest.mark.parametrize(
    ("path", "data", "location"),
    [
        ("/allowlist", {"cidr": "127.0.0.0/8"}, "/dashboard/allowlist"),
        ("/templates", {"key": "prg", "body": "x"}, "/dashboard/templates"),
        ("/webhooks", {"url": "https://hooks.example.com/x"}, "/dashboard/webhooks"),
    ],
)
async def test_every_change_answers_with_a_redirect_and_says_what_it_did(
    signed_in: Console, path: str, data: dict[str, str], location: str
) -> None:
    made = await signed_in.post(path, data)
    assert (made.status_code, made.headers["location"]) == (303, location)
    shown = await signed_in.follow(made)
    assert 'class="notice" role="status"' in shown.text
    assert 'class="notice" role="status"' not in (await signed_in.get(path)).text
