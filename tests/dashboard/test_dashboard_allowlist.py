"""The allowlist over real HTTP: entries added and removed through the admin methods, the REST
API refusing an address outside them, and the warning before the user shuts themselves out
(the test's client is 127.0.0.1)."""

from __future__ import annotations

import httpx
from _dash_support import Console

from unified_messaging.testing import TestBed


async def _rest_status(url: str, bed: TestBed) -> int:
    async with httpx.AsyncClient() as rest:
        answer = await rest.post(url + "/v1/messages", json={"to": "+905551234567", "body": "x"},
                                 headers={"Authorization": f"Bearer {bed.api_key}"})  # fmt: skip
    return answer.status_code


async def test_an_entry_added_in_the_dashboard_makes_rest_refuse_other_addresses(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    assert await _rest_status(url, bed) == 201
    warned = await signed_in.post("/allowlist", {"cidr": "203.0.113.0/24"})
    assert warned.status_code == 200  # the first entry would shut out 127.0.0.1: asked first
    assert "shuts out your own address (127.0.0.1)" in warned.text
    assert await bed.messenger.allowlist.list(bed.workspace.id) == []
    added = await signed_in.post("/allowlist", {"cidr": "203.0.113.0/24", "confirmed": "1"})
    assert added.status_code == 303
    assert await bed.messenger.allowlist.list(bed.workspace.id) == ["203.0.113.0/24"]
    assert await _rest_status(url, bed) == 403
    page = await signed_in.get("/allowlist")
    assert "203.0.113.0/24" in page.text and "not allowed" in page.text


async def test_an_entry_covering_the_user_is_added_without_a_question(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    assert (await signed_in.post("/allowlist", {"cidr": "127.0.0.0/8"})).status_code == 303
    page = await signed_in.get("/allowlist")
    assert "your address" in page.text
    assert await _rest_status(url, bed) == 201


async def test_removing_the_users_own_entry_asks_first(signed_in: Console, bed: TestBed) -> None:
    for entry in ("127.0.0.1", "198.51.100.7", "198.51.100.8"):
        await bed.messenger.allowlist.add(bed.workspace.id, entry)
    other = await signed_in.post("/allowlist/remove", {"cidr": "198.51.100.8"})
    assert other.status_code == 303  # not the user's: no question
    own = await signed_in.post("/allowlist/remove", {"cidr": "127.0.0.1"})
    assert own.status_code == 200 and "Remove it anyway" in own.text
    assert "127.0.0.1" in await bed.messenger.allowlist.list(bed.workspace.id)
    done = await signed_in.post("/allowlist/remove", {"cidr": "127.0.0.1", "confirmed": "1"})
    assert done.status_code == 303
    assert await bed.messenger.allowlist.list(bed.workspace.id) == ["198.51.100.7"]
    # The last entry going opens the list to everyone: nobody is shut out, so no question.
    last = await signed_in.post("/allowlist/remove", {"cidr": "198.51.100.7"})
    assert last.status_code == 303


async def test_a_bad_entry_gets_the_admin_rules_words(signed_in: Console, bed: TestBed) -> None:
    await bed.messenger.allowlist.add(bed.workspace.id, "127.0.0.1")
    bad = await signed_in.post("/allowlist", {"cidr": "10.0.0.1/8"})
    assert bad.status_code == 400 and "did you mean 10.0.0.0/8" in bad.text
    assert 'value="10.0.0.1/8"' in bad.text
