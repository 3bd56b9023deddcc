"""Verify (D34) over real HTTP: the served app on a loopback socket, on SQLite and PostgreSQL.

Each test reads a code as its user would: in test mode from the message's ``body`` (``GET
/v1/messages/{job_id}``), in live mode from what the provider (a local Verimor fake) got.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, timedelta
from pathlib import Path

import pytest
from _sql_apps import BACKENDS
from _support import bearer, error_code
from _verify_bed import TO, Bed, verify_bed

from unified_messaging import parse_quiet_hours


@pytest.fixture(params=BACKENDS)
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Bed]:
    async with verify_bed(request.param, tmp_path) as built:
        yield built


def _wrong(code: str) -> str:
    return "".join(str((int(digit) + 1) % 10) for digit in code)


# ------------------------------------------------------------------------ the happy path


async def test_a_code_read_from_the_test_mode_message_approves_the_verification(
    bed: Bed,
) -> None:
    started = await bed.start(bed.test, to="0555 123 45 67")
    assert started.status_code == 201, started.text
    body = started.json()
    assert body["id"].startswith("ver_")
    assert (body["to"], body["status"], body["channel"]) == (TO, "pending", "sms")
    assert body["checks_remaining"] == 5
    [send] = body["sends"]
    assert (send["channel"], send["provider"]) == ("sms", "sms_c")
    assert send["job_id"].startswith("msg_")
    message = await bed.message(bed.test, send["job_id"])
    assert message["body"].startswith("Doğrulama kodunuz: ")
    assert message["category"] == "informational"  # no İYS check; quiet hours let it pass
    code = await bed.code_of(bed.test, started)
    assert len(code) == 6

    checked = await bed.check(bed.test, body["id"], code)

    assert checked.status_code == 200, checked.text
    assert checked.json() == {"id": body["id"], "status": "approved", "checks_remaining": 0}
    again = await bed.get(bed.test, f"/v1/verifications/{body['id']}")
    assert again.json()["status"] == "approved"
    listed = await bed.get(bed.test, f"/v1/messages?to={TO}")
    assert [m["job_id"] for m in listed.json()["data"]] == [send["job_id"]]


async def test_english_text_code_length_and_app_hash(bed: Bed) -> None:
    started = await bed.start(bed.test, locale="en", code_length=8, app_hash="FA+9qCX9VSu")
    assert started.status_code == 201, started.text
    text = (await bed.message(bed.test, started.json()["sends"][0]["job_id"]))["body"]
    code = await bed.code_of(bed.test, started)
    assert text == f"<#> Your verification code is {code}. Do not share it.\nFA+9qCX9VSu"


async def test_a_template_with_a_code_placeholder_is_the_text(bed: Bed) -> None:
    await bed.messenger.templates.set(bed.workspace_id, "otp", "ACME kodu: {{ code }}")
    started = await bed.start(bed.test, template="otp", code_length=4)
    assert started.status_code == 201, started.text
    code = await bed.code_of(bed.test, started)
    text = (await bed.message(bed.test, started.json()["sends"][0]["job_id"]))["body"]
    assert text == f"ACME kodu: {code}"


async def test_a_template_without_a_code_placeholder_is_refused(bed: Bed) -> None:
    await bed.messenger.templates.set(bed.workspace_id, "hello", "Merhaba {{ name }}")
    refused = await bed.start(bed.test, template="hello")
    assert (refused.status_code, error_code(refused)) == (422, "TEMPLATE_VARIABLE_MISSING")
    missing = await bed.start(bed.test, template="nope")
    assert (missing.status_code, error_code(missing)) == (404, "TEMPLATE_NOT_FOUND")


# ------------------------------------------------------------------------ the rules


async def test_a_second_check_of_an_approved_verification_does_not_approve_it_again(
    bed: Bed,
) -> None:
    started = await bed.start(bed.test)
    code = await bed.code_of(bed.test, started)
    verification_id = started.json()["id"]
    assert (await bed.check(bed.test, verification_id, code)).json()["status"] == "approved"

    replay = await bed.check(bed.test, verification_id, code)

    assert (replay.status_code, error_code(replay)) == (409, "VERIFICATION_ALREADY_APPROVED")


async def test_the_fifth_wrong_code_fails_it_and_the_right_code_no_longer_works(
    bed: Bed,
) -> None:
    started = await bed.start(bed.test)
    code = await bed.code_of(bed.test, started)
    verification_id = started.json()["id"]
    answers = [(await bed.check(bed.test, verification_id, _wrong(code))).json() for _ in range(5)]
    assert [(a["status"], a["checks_remaining"]) for a in answers] == [
        ("pending", 4), ("pending", 3), ("pending", 2), ("pending", 1), ("failed", 0),
    ]  # fmt: skip

    right = await bed.check(bed.test, verification_id, code)

    assert right.status_code == 200
    assert right.json()["status"] == "failed"


async def test_the_wrong_codes_allowed_are_a_workspace_setting(bed: Bed) -> None:
    await bed.messenger.verifications.update_settings(bed.workspace_id, max_checks=2)
    started = await bed.start(bed.test)
    code = await bed.code_of(bed.test, started)
    verification_id = started.json()["id"]
    assert started.json()["checks_remaining"] == 2
    await bed.check(bed.test, verification_id, _wrong(code))
    second = await bed.check(bed.test, verification_id, _wrong(code))
    assert second.json()["status"] == "failed"


async def test_a_code_expires_at_expires_at(bed: Bed) -> None:
    started = await bed.start(bed.test, ttl=60)
    code = await bed.code_of(bed.test, started)
    verification_id = started.json()["id"]
    bed.clock.advance(timedelta(seconds=59))
    assert (await bed.get(bed.test, f"/v1/verifications/{verification_id}")).json()[
        "status"
    ] == "pending"
    bed.clock.advance(timedelta(seconds=1))

    late = await bed.check(bed.test, verification_id, code)

    assert late.json() == {"id": verification_id, "status": "expired", "checks_remaining": 0}
    # An expired verification no longer blocks the recipient: a start makes a new one.
    fresh = await bed.start(bed.test)
    assert fresh.status_code == 201
    assert fresh.json()["id"] != verification_id


async def test_a_second_start_inside_the_cooldown_is_refused_with_retry_after(bed: Bed) -> None:
    first = await bed.start(bed.test)
    bed.clock.advance(timedelta(seconds=12))

    again = await bed.start(bed.test)

    assert (again.status_code, error_code(again)) == (429, "VERIFICATION_RATE_LIMITED")
    assert again.headers["Retry-After"] == "18"
    assert len((await bed.get(bed.test, f"/v1/verifications/{first.json()['id']}")).json()[
        "sends"
    ]) == 1  # fmt: skip


async def test_a_second_start_after_the_cooldown_resends_the_same_verification(bed: Bed) -> None:
    first = await bed.start(bed.test)
    old_code = await bed.code_of(bed.test, first)
    bed.clock.advance(timedelta(seconds=30))

    again = await bed.start(bed.test)

    assert again.status_code == 201, again.text
    assert again.json()["id"] == first.json()["id"]
    assert len(again.json()["sends"]) == 2
    new_code = await bed.code_of(bed.test, again)
    verification_id = first.json()["id"]
    if new_code != old_code:  # one chance in a million that the new code is the old one
        old = await bed.check(bed.test, verification_id, old_code)
        assert old.json()["status"] == "pending"  # only the newest code works
    assert (await bed.check(bed.test, verification_id, new_code)).json()["status"] == "approved"


async def test_a_verification_sends_at_most_five_codes(bed: Bed) -> None:
    first = await bed.start(bed.test)
    for _ in range(4):
        bed.clock.advance(timedelta(seconds=31))
        assert (await bed.start(bed.test)).status_code == 201
    bed.clock.advance(timedelta(seconds=31))

    sixth = await bed.start(bed.test)

    assert (sixth.status_code, error_code(sixth)) == (429, "VERIFICATION_RATE_LIMITED")
    assert "Retry-After" in sixth.headers
    found = await bed.get(bed.test, f"/v1/verifications/{first.json()['id']}")
    assert len(found.json()["sends"]) == 5


async def test_at_most_ten_verifications_per_recipient_per_hour(bed: Bed) -> None:
    for _ in range(10):
        started = await bed.start(bed.test)
        assert started.status_code == 201, started.text
        path = f"/v1/verifications/{started.json()['id']}/cancel"
        canceled = await bed.http.post(path, headers={"Authorization": f"Bearer {bed.test}"})
        assert canceled.json()["status"] == "canceled"
        bed.clock.advance(timedelta(minutes=1))

    eleventh = await bed.start(bed.test)

    assert (eleventh.status_code, error_code(eleventh)) == (429, "VERIFICATION_RATE_LIMITED")
    assert eleventh.headers["Retry-After"] == str(50 * 60)  # the first is an hour old then
    other = await bed.start(bed.test, to="+905551234568")
    assert other.status_code == 201  # per recipient
    bed.clock.advance(timedelta(minutes=50))
    assert (await bed.start(bed.test)).status_code == 201


async def test_a_canceled_verification_approves_nothing(bed: Bed) -> None:
    started = await bed.start(bed.test)
    code = await bed.code_of(bed.test, started)
    verification_id = started.json()["id"]
    path = f"/v1/verifications/{verification_id}/cancel"
    await bed.http.post(path, headers={"Authorization": f"Bearer {bed.test}"})

    checked = await bed.check(bed.test, verification_id, code)

    assert checked.json()["status"] == "canceled"


# ------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("payload", "status", "code"),
    [
        ({"to": ""}, 400, "VALIDATION_ERROR"),
        ({"to": "+4915112345678"}, 422, "INVALID_RECIPIENT"),
        ({"to": "0212 222 33 44"}, 422, "INVALID_RECIPIENT"),  # a landline
        ({"to": "hello"}, 422, "INVALID_RECIPIENT"),
        ({"code_length": 3}, 400, "VALIDATION_ERROR"),
        ({"code_length": 11}, 400, "VALIDATION_ERROR"),
        ({"code_length": 6.5}, 400, "VALIDATION_ERROR"),
        ({"ttl": 0}, 400, "VALIDATION_ERROR"),
        ({"ttl": 3601}, 400, "VALIDATION_ERROR"),
        ({"locale": "de"}, 400, "VALIDATION_ERROR"),
        ({"app_hash": "short"}, 400, "VALIDATION_ERROR"),
        ({"surprise": 1}, 400, "VALIDATION_ERROR"),
        ({"channels": []}, 400, "VALIDATION_ERROR"),
        ({"channel": "fax"}, 422, "CHANNEL_NOT_SUPPORTED"),
        # No WhatsApp authentication template is set for the workspace.
        ({"channel": "bizchat"}, 422, "CHANNEL_NOT_SUPPORTED"),
        ({"channels": ["bizchat", "sms"]}, 422, "CHANNEL_NOT_SUPPORTED"),
        ({"channel": "chatbot"}, 422, "INVALID_RECIPIENT"),  # a phone number is no chat id
        ({"channels": ["fax", "sms"]}, 422, "ESCALATION_INVALID"),
        ({"channels": ["sms", "sms"]}, 422, "ESCALATION_INVALID"),
        ({"channel": "sms", "channels": ["bizchat", "sms"]}, 422, "ESCALATION_INVALID"),
    ],
)
async def test_bad_starts_are_refused_with_a_clear_code(
    bed: Bed, payload: dict[str, object], status: int, code: str
) -> None:
    refused = await bed.start(bed.test, **payload)
    assert (refused.status_code, error_code(refused)) == (status, code), refused.text
    assert bed.verimor.received == []


async def test_bad_checks_are_refused_with_a_clear_code(bed: Bed) -> None:
    verification_id = (await bed.start(bed.test)).json()["id"]
    for body in ({}, {"code": ""}, {"code": 123456}, {"code": "1" * 33}):
        path = f"/v1/verifications/{verification_id}/check"
        refused = await bed.http.post(
            path, json=body, headers={"Authorization": f"Bearer {bed.test}"}
        )
        assert (refused.status_code, error_code(refused)) == (400, "VALIDATION_ERROR"), body
    # None of those was a wrong code.
    found = await bed.get(bed.test, f"/v1/verifications/{verification_id}")
    assert found.json()["checks_remaining"] == 5


async def test_unknown_ids_and_another_workspaces_or_modes_verification_are_404(bed: Bed) -> None:
    verification_id = (await bed.start(bed.test)).json()["id"]
    for key, path in [
        (bed.test, "/v1/verifications/ver_unknown"),
        (bed.test, "/v1/verifications/msg_notaverification"),
        (bed.test, "/v1/verifications/%00"),
        (bed.other, f"/v1/verifications/{verification_id}"),
        (bed.live, f"/v1/verifications/{verification_id}"),
    ]:
        found = await bed.get(key, path)
        assert (found.status_code, error_code(found)) == (404, "VERIFICATION_NOT_FOUND"), path
    stolen = await bed.check(bed.other, verification_id, "123456")
    assert (stolen.status_code, error_code(stolen)) == (404, "VERIFICATION_NOT_FOUND")
    canceled = await bed.http.post(
        f"/v1/verifications/{verification_id}/cancel",
        headers={"Authorization": f"Bearer {bed.other}"},
    )
    assert canceled.status_code == 404
    assert (await bed.get(bed.test, f"/v1/verifications/{verification_id}")).json()[
        "status"
    ] == "pending"


async def test_no_key_is_401(bed: Bed) -> None:
    response = await bed.http.post("/v1/verifications", json={"to": TO})
    assert response.status_code == 401


# ------------------------------------------------------------------------ live: masked


async def test_a_live_code_is_masked_in_the_status_record_webhooks_and_logs(
    bed: Bed, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    started = await bed.start(bed.live, code_length=10)
    assert started.status_code == 201, started.text
    code = bed.live_code()  # what the handset got
    job_id = started.json()["sends"][0]["job_id"]

    record = await bed.get(bed.live, f"/v1/messages/{job_id}")
    listed = await bed.get(bed.live, "/v1/messages")
    await bed.deliver_events()
    checked = await bed.check(bed.live, started.json()["id"], code)

    assert record.json()["body"] == "Doğrulama kodunuz: ******. Kimseyle paylaşmayın."
    assert code not in record.text
    assert code not in listed.text
    assert bed.receiver.deliveries  # message.sent at least
    assert all(code.encode() not in d.body for d in bed.receiver.deliveries)
    assert all(code not in r.getMessage() for r in caplog.records)
    assert checked.json()["status"] == "approved"


async def test_a_live_code_is_stored_only_as_a_keyed_digest(bed: Bed) -> None:
    started = await bed.start(bed.live)
    code = bed.live_code()
    stored = await bed.messenger.store.get_verification(
        bed.workspace_id, True, started.json()["id"]
    )
    assert stored is not None
    assert code not in stored.code_digest
    assert code not in repr(stored)


# ------------------------------------------------------------------------ concurrency


async def test_twenty_concurrent_checks_with_the_right_code_approve_exactly_once(
    bed: Bed,
) -> None:
    started = await bed.start(bed.test)
    code = await bed.code_of(bed.test, started)
    verification_id = started.json()["id"]

    answers = await asyncio.gather(*(bed.check(bed.test, verification_id, code) for _ in range(20)))

    assert sorted(a.status_code for a in answers) == [200] + [409] * 19
    assert {error_code(a) for a in answers if a.status_code == 409} == {
        "VERIFICATION_ALREADY_APPROVED"
    }


async def test_twenty_concurrent_wrong_codes_each_count(bed: Bed) -> None:
    await bed.messenger.verifications.update_settings(bed.workspace_id, max_checks=30)
    started = await bed.start(bed.test)
    wrong = _wrong(await bed.code_of(bed.test, started))
    verification_id = started.json()["id"]

    answers = await asyncio.gather(
        *(bed.check(bed.test, verification_id, wrong) for _ in range(20))
    )

    assert sorted(a.json()["checks_remaining"] for a in answers) == list(range(10, 30))


async def test_twenty_concurrent_starts_for_one_recipient_make_one_verification(
    bed: Bed,
) -> None:
    answers = await asyncio.gather(*(bed.start(bed.test) for _ in range(20)))

    created = [a for a in answers if a.status_code == 201]
    assert len(created) == 1, [a.text for a in answers]
    assert {(a.status_code, error_code(a)) for a in answers if a.status_code != 201} == {
        (429, "VERIFICATION_RATE_LIMITED")
    }
    listed = await bed.get(bed.test, f"/v1/messages?to={TO}")
    assert len(listed.json()["data"]) == 1  # one code went out


# ------------------------------------------------------------------------ the send path


async def test_quiet_hours_hold_a_message_but_not_a_code(bed: Bed) -> None:
    now = bed.clock.now().astimezone(UTC)
    window = f"{(now - timedelta(hours=1)):%H:%M}-{(now + timedelta(hours=1)):%H:%M}"
    await bed.messenger.workspaces.set_quiet_hours(
        bed.workspace_id, parse_quiet_hours(window, zone="UTC", scope="all")
    )
    held = await bed.http.post(
        "/v1/messages", json={"to": TO, "body": "Merhaba"}, headers=bearer(bed.test)
    )

    started = await bed.start(bed.test)

    assert held.json()["status"] == "queued"  # quiet hours hold an ordinary message
    assert started.status_code == 201, started.text
    assert started.json()["sends"][0]["status"] == "sent"
    assert await bed.code_of(bed.test, started)


async def test_a_suppressed_recipient_gets_no_code_and_no_pending_verification(bed: Bed) -> None:
    added = await bed.http.post(
        "/v1/suppressions", json={"channel": "sms", "recipient": TO}, headers=bearer(bed.test)
    )
    assert added.status_code == 201

    refused = await bed.start(bed.test)
    await bed.http.request(
        "DELETE", "/v1/suppressions", params={"channel": "sms", "recipient": TO},
        headers=bearer(bed.test),
    )  # fmt: skip
    bed.clock.advance(timedelta(seconds=1))
    after = await bed.start(bed.test)

    assert (refused.status_code, error_code(refused)) == (422, "RECIPIENT_SUPPRESSED")
    assert after.status_code == 201, after.text  # the refused one blocks nothing


# ------------------------------------------------------------------------ webhook events


async def test_an_approved_verification_is_a_signed_webhook_event_without_its_code(
    bed: Bed,
) -> None:
    started = await bed.start(bed.live)
    code = bed.live_code()
    await bed.check(bed.live, started.json()["id"], code)

    await bed.deliver_events()

    [event] = bed.events("verification.approved")
    assert event["data"]["id"] == started.json()["id"]
    assert (event["data"]["status"], event["data"]["livemode"]) == ("approved", True)
    assert all(code.encode() not in d.body for d in bed.receiver.deliveries)


async def test_the_last_wrong_code_is_a_verification_failed_event(bed: Bed) -> None:
    started = await bed.start(bed.test)
    wrong = _wrong(await bed.code_of(bed.test, started))
    for _ in range(5):
        await bed.check(bed.test, started.json()["id"], wrong)

    await bed.deliver_events()

    [event] = bed.events("verification.failed")
    assert (event["data"]["id"], event["data"]["status"]) == (started.json()["id"], "failed")
    assert bed.events("verification.approved") == []


async def test_a_verification_left_pending_is_a_verification_expired_event_at_its_time(
    bed: Bed,
) -> None:
    started = await bed.start(bed.test, ttl=120)
    bed.clock.advance(timedelta(seconds=119))
    await bed.deliver_events()
    assert bed.events("verification.expired") == []

    bed.clock.advance(timedelta(seconds=1))
    await bed.deliver_events()

    [event] = bed.events("verification.expired")
    assert (event["data"]["id"], event["data"]["status"]) == (started.json()["id"], "expired")
    found = await bed.get(bed.test, f"/v1/verifications/{started.json()['id']}")
    assert found.json()["status"] == "expired"
