"""The whole loop over loopback sockets, for every magic recipient of DESIGN.md §6.

A real uvicorn serves ``create_app(messenger)`` with the worker in its lifespan; the test
sends through REST with a test key, moves the ManualClock until the message is final (the
worker sees the clock within milliseconds), and checks the status record and the webhook
events a real loopback receiver got, each verified with our ``verify`` and with the
independent ``standardwebhooks`` package.

The clock starts at the real time and moves by seconds (DLR time-outs of 10 s, reports due
after 1 s), so the events' ``webhook-timestamp`` stays within ``standardwebhooks``' fixed
five-minute tolerance of the real clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from _support import (
    Delivery,
    Loop,
    Receiver,
    attempts_of,
    check_signed,
    eventually,
    magic,
    pmid,
    running_loop,
)

FB = ["sms_b", "sms_c"]


@pytest.fixture
async def loop() -> AsyncIterator[Loop]:
    async with running_loop() as value:
        yield value


# --------------------------------------------------------------------------- the table

REJECTED = "PROVIDER_REJECTED"
UNREACHABLE = "RECIPIENT_UNREACHABLE"
UNAVAILABLE = "PROVIDER_UNAVAILABLE"


@dataclass(frozen=True)
class Case:
    to: str
    fallback: list[str]
    http_status: int
    status: str
    error: str | None
    #: (provider, attempt status, has a provider message id, error code) per attempt.
    attempts: list[tuple[str, str, bool, str | None]]
    events: list[str]


def _three(status: str, error: str | None, *, accepted: bool) -> list[Any]:
    return [(code, status, accepted, error) for code in ("sms_a", "sms_b", "sms_c")]


RELAY = ["message.sent", "message.fallback"] * 2 + ["message.sent"]

CASES = {
    "normal": Case(
        magic("99"),
        FB,
        201,
        "delivered",
        None,
        [("sms_a", "delivered", True, None)],
        ["message.sent", "message.delivered"],
    ),
    "01-rejected-at-submit": Case(
        magic("01"),
        FB,
        201,
        "failed",
        REJECTED,
        _three("rejected", REJECTED, accepted=False),
        ["message.failed"],
    ),
    "02-no-iys-consent-stops-fallback": Case(
        magic("02"),
        FB,
        201,
        "failed",
        "IYS_CONSENT_MISSING",
        [("sms_a", "rejected", False, "IYS_CONSENT_MISSING")],
        ["message.failed"],
    ),
    "03-timed-out-everywhere": Case(
        magic("03"),
        FB,
        502,
        "failed",
        UNAVAILABLE,
        _three("unavailable", UNAVAILABLE, accepted=False),
        ["message.failed"],
    ),
    "04-expired": Case(
        magic("04"),
        FB,
        201,
        "expired",
        None,
        [("sms_a", "expired", True, None)],
        ["message.sent", "message.expired"],
    ),
    "05-rejected-by-report": Case(
        magic("05"),
        FB,
        201,
        "rejected",
        REJECTED,
        _three("rejected", REJECTED, accepted=True),
        [*RELAY, "message.rejected"],
    ),
    "06-failed-by-report": Case(
        magic("06"),
        FB,
        201,
        "failed",
        UNREACHABLE,
        _three("failed", UNREACHABLE, accepted=True),
        [*RELAY, "message.failed"],
    ),
    "07-unknown-by-report": Case(
        magic("07"),
        FB,
        201,
        "unknown",
        None,
        [("sms_a", "unknown", True, None)],
        ["message.sent", "message.unknown"],
    ),
    "08-no-report-ever": Case(
        magic("08"),
        FB,
        201,
        "unknown",
        None,
        _three("unknown", None, accepted=True),
        [*RELAY, "message.unknown"],
    ),
    "11-first-rejects": Case(
        magic("11"),
        FB,
        201,
        "delivered",
        None,
        [("sms_a", "rejected", False, REJECTED), ("sms_b", "delivered", True, None)],
        ["message.sent", "message.delivered"],
    ),
    "12-first-two-reject": Case(
        magic("12"),
        FB,
        201,
        "delivered",
        None,
        [
            ("sms_a", "rejected", False, REJECTED),
            ("sms_b", "rejected", False, REJECTED),
            ("sms_c", "delivered", True, None),
        ],
        ["message.sent", "message.delivered"],
    ),
    "13-three-reject-with-three-providers": Case(
        magic("13"),
        FB,
        201,
        "failed",
        REJECTED,
        _three("rejected", REJECTED, accepted=False),
        ["message.failed"],
    ),
    "13-fourth-provider-accepts": Case(
        magic("13"),
        [*FB, "sms_d"],
        201,
        "delivered",
        None,
        [
            *_three("rejected", REJECTED, accepted=False),
            ("sms_d", "delivered", True, None),
        ],
        ["message.sent", "message.delivered"],
    ),
    "01-without-fallback": Case(
        magic("01"),
        [],
        201,
        "failed",
        REJECTED,
        [("sms_a", "rejected", False, REJECTED)],
        ["message.failed"],
    ),
    "03-without-fallback": Case(
        magic("03"),
        [],
        502,
        "failed",
        UNAVAILABLE,
        [("sms_a", "unavailable", False, UNAVAILABLE)],
        ["message.failed"],
    ),
    "06-without-fallback": Case(
        magic("06"),
        [],
        201,
        "failed",
        UNREACHABLE,
        [("sms_a", "failed", True, UNREACHABLE)],
        ["message.sent", "message.failed"],
    ),
    "08-without-fallback": Case(
        magic("08"),
        [],
        201,
        "unknown",
        None,
        [("sms_a", "unknown", True, None)],
        ["message.sent", "message.unknown"],
    ),
}


def _job_id(response: httpx.Response) -> str:
    document = response.json()
    job_id = document.get("job_id") or document["error"]["job_id"]
    assert isinstance(job_id, str)
    return job_id


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
async def test_the_full_loop_for_each_magic_recipient(loop: Loop, case: Case) -> None:
    payload: dict[str, object] = {"to": case.to, "body": "Kodunuz 123456"}
    if case.fallback:
        payload["fallback"] = case.fallback

    response = await loop.send(payload)

    assert response.status_code == case.http_status, response.text
    job_id = _job_id(response)
    record = await loop.final(job_id)
    assert record["status"] == case.status
    assert (record["error"] or {}).get("code") == case.error
    expected_attempts = [
        (code, status, pmid(code, job_id, index) if accepted else None, error)
        for index, (code, status, accepted, error) in enumerate(case.attempts)
    ]
    assert attempts_of(record) == expected_attempts
    assert record["provider"] == case.attempts[-1][0]
    deliveries = await loop.events(job_id, Counter(case.events))
    check_signed(loop, deliveries)
    last = max(deliveries, key=lambda d: len(d.event["data"]["attempts"]) * 10 + _rank(d.type))
    assert last.event["data"]["status"] == case.status


def _rank(event_type: str) -> int:
    """Within one attempt: ``sent`` comes first, ``fallback`` or a final event after it."""
    return 0 if event_type == "message.sent" else 1


# --------------------------------------------------------------------------- the details


async def test_a_delivered_message_carries_its_report(loop: Loop) -> None:
    sent = await loop.send({"to": "+905551234567", "body": "Selam"})
    job_id = sent.json()["job_id"]

    record = await loop.final(job_id)

    assert record["status"] == "delivered"
    assert record["dlr"]["status"] == "delivered"
    assert record["dlr"]["provider_status"] == "DELIVERED"
    assert record["sent_at"] is not None
    assert record["final_at"] is not None
    assert record["livemode"] is False


async def test_a_retried_webhook_keeps_its_webhook_id(loop: Loop) -> None:
    sent = await loop.send({"to": "+905551234567", "body": "Selam"})
    job_id = sent.json()["job_id"]
    loop.receiver.fail_once.add((job_id, "message.delivered"))

    await loop.final(job_id)
    deliveries = await loop.events(job_id, Counter(["message.sent", "message.delivered"]))

    delivered = [d for d in deliveries if d.type == "message.delivered"]
    assert [d.answered for d in delivered] == [500, 200]
    assert delivered[0].webhook_id == delivered[1].webhook_id
    assert delivered[0].body == delivered[1].body
    check_signed(loop, deliveries)
    [sent_event] = [d for d in deliveries if d.type == "message.sent"]
    assert sent_event.webhook_id != delivered[0].webhook_id


async def test_a_chatbot_message_is_delivered_at_send(loop: Loop) -> None:
    response = await loop.send({"to": "123456789", "body": "Selam", "provider": "chatbot"})

    assert response.status_code == 201, response.text
    job_id = response.json()["job_id"]
    record = await loop.get(job_id)
    assert record["status"] == "delivered"
    assert record["channel"] == "chatbot"
    assert attempts_of(record) == [("chatbot", "delivered", pmid("chatbot", job_id, 0), None)]
    check_signed(loop, await loop.events(job_id, Counter(["message.delivered"])))


@pytest.mark.parametrize("to", ["0", "@unreachable_bot_user"])
async def test_an_unreachable_chat_is_422(loop: Loop, to: str) -> None:
    response = await loop.send({"to": to, "body": "Selam", "provider": "chatbot"})

    assert response.status_code == 422
    assert response.json()["error"]["code"] == "CHAT_UNREACHABLE"


async def test_the_422_of_an_unreachable_chat_names_the_job_its_webhook_is_about(
    loop: Loop,
) -> None:
    response = await loop.send({"to": "0", "body": "Selam", "provider": "chatbot"})
    assert response.status_code == 422

    delivery = await eventually(
        lambda: _first_delivery(loop.receiver), lambda found: found is not None
    )

    assert delivery is not None
    assert delivery.type == "message.failed"
    assert response.json()["error"].get("job_id") == delivery.job_id


async def _first_delivery(receiver: Receiver) -> Delivery | None:
    return receiver.deliveries[0] if receiver.deliveries else None
