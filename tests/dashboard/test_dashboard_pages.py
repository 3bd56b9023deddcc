"""The first pages over real HTTP, each through the same ``Messenger`` methods as the CLI:
Overview, Messages (the list and a message's timeline) and API keys."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import httpx
import pytest
from _dash_support import Console

from unified_messaging._schedule import parse_quiet_hours
from unified_messaging.testing import TestBed


def _secret_in(page: str) -> str:
    found = re.search(r'<code id="new-key-secret">([^<]+)</code>', page)
    assert found, "no key shown"
    return found.group(1)


async def _send(url: str, key: str, body: dict[str, object]) -> httpx.Response:
    async with httpx.AsyncClient() as rest:
        return await rest.post(
            url + "/v1/messages", json=body, headers={"Authorization": f"Bearer {key}"}
        )


async def test_a_key_made_in_the_dashboard_sends_over_rest_and_is_shown_once(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    created = await signed_in.post("/keys", {"name": "checkout", "rate_limit": "5"})
    assert created.status_code == 303 and created.headers["location"] == "/dashboard/keys"
    shown = await signed_in.follow(created)
    assert "cannot be shown again" in shown.text
    secret = _secret_in(shown.text)
    assert secret.startswith("um_test_")  # the test-data view makes test keys
    assert shown.headers["cache-control"] == "no-store"
    # A refresh (or the back button: no-store) loads the page again: the secret is gone.
    listing = await signed_in.get("/keys")
    assert secret not in listing.text and "checkout" in listing.text
    assert "5/s, burst 100" in listing.text
    sent = await _send(url, secret, {"to": "+905551234567", "body": "Merhaba"})
    assert sent.status_code == 201, sent.text
    assert sent.json()["status"] == "sent"


async def test_a_key_revoked_in_the_dashboard_stops_working(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    secret = _secret_in(
        (await signed_in.follow(await signed_in.post("/keys", {"name": "old"}))).text
    )
    key = next(k for k in await bed.messenger.keys.list(bed.workspace.id) if k.name == "old")
    revoked = await signed_in.post(f"/keys/{key.id}/revoke")
    assert revoked.status_code == 303 and revoked.headers["location"] == "/dashboard/keys"
    assert "revoked" in (await signed_in.get("/keys")).text
    assert (await _send(url, secret, {"to": "+905551234567", "body": "x"})).status_code == 401


async def test_a_bad_rate_limit_is_refused_by_the_admin_rule(signed_in: Console) -> None:
    refused = await signed_in.post("/keys", {"name": "fast", "rate_limit": "-1"})
    assert refused.status_code == 400
    assert "The rate limit must be positive" in refused.text  # Messenger.create_api_key's words
    assert 'value="fast"' in refused.text  # what was typed stays in the form
    typo = await signed_in.post("/keys", {"name": "fast", "rate_burst": "ten"})
    assert typo.status_code == 400 and "The rate burst must be a whole number" in typo.text


async def test_the_live_view_makes_and_lists_live_keys_only(
    signed_in: Console, bed: TestBed
) -> None:
    await signed_in.post("/view", {"livemode": "live"})
    live = _secret_in(
        (await signed_in.follow(await signed_in.post("/keys", {"name": "prod"}))).text
    )
    assert live.startswith("um_live_")
    page = await signed_in.get("/keys")
    assert "prod" in page.text and "pytest" not in page.text  # the testbed's key is a test key
    assert "viewing test data" not in page.text


async def test_a_message_reaches_delivered_on_the_messages_page(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    fell_back = await _send(url, bed.api_key, {"to": "+905550000011", "body": "Kodunuz: 1234",
                                               "fallback": ["sms_b"]})  # fmt: skip
    job_id = fell_back.json()["job_id"]
    listing = await signed_in.get("/messages")
    assert job_id in listing.text and ">sent<" in listing.text
    await bed.settle()
    detail = await signed_in.get(f"/messages/{job_id}")
    assert detail.status_code == 200
    assert ">delivered<" in detail.text
    assert "fell back to" in detail.text and "PROVIDER_REJECTED" in detail.text
    assert "delivery report" in detail.text
    assert "gsm7, 1 segment<" in detail.text  # said as English, never "1 segment(s)"
    delivered = await signed_in.get("/messages", params={"status": "delivered"})
    assert job_id in delivered.text
    failed = await signed_in.get("/messages", params={"status": "failed"})
    assert job_id not in failed.text


async def test_the_date_pickers_times_are_read_in_the_workspaces_zone(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    job_id = (await _send(url, bed.api_key, {"to": "+905551234567", "body": "x"})).json()["job_id"]
    now = bed.clock.now().astimezone(ZoneInfo("Europe/Istanbul"))
    before = now.strftime("%Y-%m-%dT%H:%M")  # what <input type="datetime-local"> sends
    earlier = await signed_in.get("/messages", params={"created_before": before})
    assert earlier.status_code == 200 and job_id not in earlier.text
    assert "Created before (Europe/Istanbul)" in earlier.text
    since = await signed_in.get("/messages", params={"created_after": before})
    assert since.status_code == 200 and job_id in since.text
    # The same wall-clock time read as UTC would be three hours later: nothing after it.
    as_utc = bed.clock.now().strftime("%Y-%m-%dT%H:%M")
    if as_utc != before:
        after_utc = await signed_in.get("/messages", params={"created_before": as_utc})
        assert job_id not in after_utc.text


async def test_times_are_shown_in_the_workspaces_zone_and_named(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    job_id = (await _send(url, bed.api_key, {"to": "+905551234567", "body": "x"})).json()["job_id"]
    created = bed.clock.now()
    istanbul = created.astimezone(ZoneInfo("Europe/Istanbul")).strftime("%Y-%m-%d %H:%M:%S")
    page = await signed_in.get(f"/messages/{job_id}")
    assert f"<strong>{istanbul}</strong> accepted by the API" in page.text
    assert "Times in Europe/Istanbul." in page.text
    assert re.search(r"<dt>Provider</dt><dd>sms_[a-e] · [^<]+</dd>", page.text)
    # A workspace with quiet hours in another zone shows its times in that zone.
    await bed.messenger.workspaces.set_quiet_hours(
        bed.workspace.id, parse_quiet_hours("22:00-08:00", zone="Europe/London")
    )
    london = created.astimezone(ZoneInfo("Europe/London")).strftime("%Y-%m-%d %H:%M:%S")
    page = await signed_in.get(f"/messages/{job_id}")
    assert f"<strong>{london}</strong> accepted by the API" in page.text
    assert "Times in Europe/London." in page.text
    # The API stays in UTC.
    async with httpx.AsyncClient() as rest:
        record = await rest.get(f"{url}/v1/messages/{job_id}",
                                headers={"Authorization": f"Bearer {bed.api_key}"})  # fmt: skip
    assert record.json()["created_at"].endswith("Z")


async def test_a_bad_filter_is_said_next_to_the_form(signed_in: Console) -> None:
    answer = await signed_in.get("/messages", params={"created_after": "yesterday"})
    assert answer.status_code == 400
    assert "created_after" in answer.text
    rows = await signed_in.get("/messages", params={"status": "sent"},
                               headers={"HX-Request": "true"})  # fmt: skip
    assert rows.status_code == 200 and "<nav" not in rows.text  # htmx gets the rows only


async def test_the_overview_counts_the_last_24_hours_and_shows_the_breakers(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    for _ in range(3):
        await _send(url, bed.api_key, {"to": "+905551234567", "body": "x"})
    # Rejected by sms_a, then delivered by sms_b: one delivered message, not a failed one.
    await _send(url, bed.api_key, {"to": "+905550000011", "body": "x", "fallback": ["sms_b"]})
    await bed.settle()
    page = await signed_in.get("/")
    assert page.status_code == 200
    assert re.search(
        r'<div class="value">4</div><div class="label">delivered \(100.0%\)<', page.text
    )
    assert re.search(r'<div class="value">0</div><div class="label">failed or rejected<', page.text)
    assert "fell back to another provider (1 of 4 sent)" in page.text
    # Per provider by attempt: sms_a tried all 4 and delivered 3; sms_b delivered the fourth.
    assert re.search(r'<td>sms_a · NetGSM</td><td class="num">4</td>', page.text)
    assert re.search(r'<td>sms_b · İletimerkezi</td><td class="num">1</td>', page.text)
    assert "75.0%" in page.text and "100.0%" in page.text
    assert "closed" in page.text


async def test_a_key_expires_when_the_form_says_read_as_utc(
    signed_in: Console, bed: TestBed, url: str
) -> None:
    made = await signed_in.post("/keys", {"name": "temp", "expires_at": "2099-01-31T10:30"})
    assert made.status_code == 303
    key = next(k for k in await bed.messenger.keys.list(bed.workspace.id) if k.name == "temp")
    assert key.expires_at == datetime(2099, 1, 31, 10, 30, tzinfo=UTC)
    assert "2099-01-31 10:30" in (await signed_in.get("/keys")).text


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        ("2001-01-01T00:00", "must be in the future"),  # the admin rule's words
        ("next tuesday", "must be a date and time"),
        ("2099-02-30T00:00", "is not a real date and time"),
    ],
)
async def test_a_bad_expiry_is_said_beside_its_field(
    signed_in: Console, bed: TestBed, typed: str, words: str
) -> None:
    before = await bed.messenger.keys.list(bed.workspace.id)
    refused = await signed_in.post("/keys", {"name": "temp", "expires_at": typed})
    assert refused.status_code == 400
    assert f'<p class="field-error" id="expires_at-error">{words}' in refused.text
    assert await bed.messenger.keys.list(bed.workspace.id) == before
