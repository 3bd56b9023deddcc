"""``Client`` and ``AsyncClient`` against the real ``serve --demo``: the same models and the same
exception classes as the library, every POST idempotent, the list followed page by page."""

from __future__ import annotations

import pytest
from _served import Served

from unified_messaging import (
    AsyncClient,
    BulkResponse,
    Client,
    InvalidRecipient,
    MessageNotFound,
    NotFound,
    RecipientSuppressed,
    RequestInvalid,
    SendResponse,
    StatusRecord,
    Unauthorized,
    __version__,
)


def test_send_get_and_health_with_the_librarys_models(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        sent = client.send({"to": "0555 100 00 01", "body": "Merhaba"})
        record = client.get_message(sent.job_id)
        health = client.health()

    assert isinstance(sent, SendResponse) and sent.status == "sent"
    assert sent.to == "+905551000001"
    assert isinstance(record, StatusRecord) and record.job_id == sent.job_id
    assert record.livemode is False
    assert (health.status, health.version) == ("ok", __version__)


def test_a_post_with_one_idempotency_key_is_one_job(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        request = {"to": "+905551000002", "body": "bir kez"}
        first = client.send(request, idempotency_key="order-42-shipped")
        again = client.send(request, idempotency_key="order-42-shipped")
        other = client.send(request)  # a key of its own: a second message

    assert again.job_id == first.job_id
    assert other.job_id != first.job_id


def test_bulk_answers_per_item(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        answer = client.send_bulk(
            {"items": [{"to": "+905551000003", "body": "a"}, {"to": "garbage", "body": "b"}]}
        )

    assert isinstance(answer, BulkResponse)
    assert (answer.total, answer.sent, answer.failed) == (2, 1, 1)
    assert answer.results[1].error is not None
    assert answer.results[1].error.code == "INVALID_RECIPIENT"


def test_the_list_follows_the_cursor_to_the_last_page(demo: Served) -> None:
    to = "+905551000004"
    with Client(demo.url, demo.started["api_key"]) as client:
        sent = [client.send({"to": to, "body": f"n{n}"}).job_id for n in range(5)]
        listed = [record.job_id for record in client.list_messages(to=to, limit=2)]

    assert listed == sent[::-1]  # newest first, over three pages


def test_errors_are_the_librarys_classes_with_the_request_id(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        with pytest.raises(InvalidRecipient) as invalid:
            client.send({"to": "0212 555 12 34", "body": "landline"})
        with pytest.raises(MessageNotFound):
            client.get_message("msg_nope")
        with pytest.raises(RequestInvalid) as unknown_field:
            client.send({"to": "+905551000005", "body": "x", "colour": "red"})
    with Client(demo.url, "um_test_wrong") as stranger:
        assert stranger.health().status == "ok"  # health needs no key
        with pytest.raises(Unauthorized):
            stranger.get_message("msg_nope")

    assert invalid.value.http_status == 422
    assert invalid.value.request_id  # the server's X-Request-ID, for its logs
    assert [d.field for d in unknown_field.value.details] == ["colour"]  # refused before sending


async def test_the_async_client_does_the_same(demo: Served) -> None:
    to = "+905551000006"
    async with AsyncClient(demo.url, demo.started["api_key"]) as client:
        sent = await client.send({"to": to, "body": "async"})
        bulk = await client.send_bulk({"items": [{"to": to, "body": "b"}]})
        record = await client.get_message(sent.job_id)
        listed = [r.job_id async for r in client.list_messages(to=to, limit=1)]
        with pytest.raises(MessageNotFound):
            await client.get_message("msg_nope")

    assert record.job_id == sent.job_id
    assert listed == [bulk.results[0].job_id, sent.job_id]


def test_the_repr_never_shows_the_key(demo: Served) -> None:
    key = demo.started["api_key"]
    with Client(demo.url, key) as client:
        assert key not in repr(client)
        assert demo.url in repr(client)


def test_a_scheduled_send_is_queued_and_canceled_through_the_client(demo: Served) -> None:
    from datetime import UTC, datetime, timedelta

    from unified_messaging import MessageNotCancelable, SendAtOutOfRange

    due = datetime.now(UTC) + timedelta(hours=1)
    with Client(demo.url, demo.started["api_key"]) as client:
        waiting = client.send({"to": "+905551000006", "body": "yarın", "send_at": due})
        canceled = client.cancel_message(waiting.job_id)
        again = client.cancel_message(waiting.job_id)
        sent = client.send({"to": "+905551000007", "body": "şimdi"})
        with pytest.raises(MessageNotCancelable):
            client.cancel_message(sent.job_id)
        with pytest.raises(SendAtOutOfRange):
            client.send({"to": "+905551000008", "body": "x", "send_at": due - timedelta(days=1)})

    assert (waiting.status, waiting.send_at) == ("queued", due)
    assert (canceled.status, canceled.error and canceled.error.code) == ("failed", "CANCELED")
    assert again == canceled


async def test_the_async_client_cancels_too(demo: Served) -> None:
    from datetime import UTC, datetime, timedelta

    due = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    async with AsyncClient(demo.url, demo.started["api_key"]) as client:
        bulk = await client.send_bulk({"items": [{"to": "+905551000009", "body": "a"}],
                                       "send_at": due})  # fmt: skip
        canceled = await client.cancel_message(bulk.results[0].job_id)

    assert bulk.results[0].status == "queued"
    assert canceled.error is not None and canceled.error.code == "CANCELED"


def test_the_suppression_list_through_the_client(demo: Served) -> None:
    with Client(demo.url, demo.started["api_key"]) as client:
        added = client.suppressions.add("sms", "0555 100 00 09", reason="asked to stop")
        again = client.suppressions.add("sms", "+905551000009")
        with pytest.raises(RecipientSuppressed):
            client.send({"to": "+905551000009", "body": "x"})
        listed = list(client.suppressions.list(channel="sms", limit=1))
        removed = client.suppressions.remove("sms", "+905551000009")
        with pytest.raises(NotFound):
            client.suppressions.remove("sms", "+905551000009")
        with pytest.raises(RequestInvalid):
            client.suppressions.add("fax", "+905551000009")  # refused before it is sent

    assert (added.recipient, added.source, added.reason) == (
        "+905551000009",
        "api",
        "asked to stop",
    )
    assert again.id == added.id
    assert [entry.id for entry in listed] == [added.id]
    assert removed.id == added.id


async def test_the_async_client_pages_through_the_suppression_list(demo: Served) -> None:
    async with AsyncClient(demo.url, demo.started["api_key"]) as client:
        for n in range(3):
            await client.suppressions.add("bizchat", f"+4915112345{n:03d}")
        entries = [entry async for entry in client.suppressions.list(channel="bizchat", limit=2)]
        await client.suppressions.remove("bizchat", "+4915112345000")
        left = [entry async for entry in client.suppressions.list(channel="bizchat")]

    assert [e.recipient for e in entries] == [f"+4915112345{n:03d}" for n in (2, 1, 0)]
    assert len(left) == 2
