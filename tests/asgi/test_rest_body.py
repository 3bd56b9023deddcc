"""Request bodies over HTTP: media type, the 1 MiB cap, malformed JSON, and each SPEC §8 limit
at and just past its edge (a 400 names the field; at the edge it is not a 400)."""

from __future__ import annotations

import json

import httpx
import pytest
from _asgi_support import NORMAL, ClientFactory, bearer, code_of, error_of

from unified_messaging.asgi import create_app
from unified_messaging.testing import TestBed

MiB = 1024 * 1024


def details_of(response: httpx.Response) -> list[dict[str, str]]:
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "VALIDATION_ERROR"
    details = error["details"]
    assert isinstance(details, list)
    assert details
    return details


def fields_of(response: httpx.Response) -> set[str]:
    return {d["field"] for d in details_of(response)}


# --------------------------------------------------------------------------- media type


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin-1"],
)
async def test_anything_but_json_is_400(
    client: httpx.AsyncClient, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    body = json.dumps({"to": NORMAL, "body": "x"}).encode()
    response = await client.post("/v1/messages", content=body, headers=headers)
    assert fields_of(response) == {"Content-Type"}


@pytest.mark.parametrize(
    "content_type", ["application/json", "Application/JSON", "application/json; charset=UTF-8"]
)
async def test_json_media_type_spellings_are_accepted(
    client: httpx.AsyncClient, content_type: str
) -> None:
    body = json.dumps({"to": NORMAL, "body": "x"}).encode()
    headers = {"Content-Type": content_type}
    response = await client.post("/v1/messages", content=body, headers=headers)
    assert response.status_code == 201


# --------------------------------------------------------------------------- malformed JSON


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"{",
        b"{'to': 1}",
        b'{"to": "x",}',
        b"\xff\xfe{}",  # not UTF-8
        '\ufeff{"to": "x"}'.encode(),  # a byte order mark
        b'{"to": NaN}',
        b'{"to": Infinity}',
        b'{"to": 1e999}',
        b'{"to": ' + b"9" * 5000 + b"}",
        b'{"to": "\\ud800", "body": "x"}',  # an unpaired surrogate
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
async def test_malformed_json_is_400(client: httpx.AsyncClient, raw: bytes) -> None:
    response = await client.post(
        "/v1/messages", content=raw, headers={"Content-Type": "application/json"}
    )
    assert fields_of(response) == {"body"}


@pytest.mark.parametrize("value", [[], "text", 42, None, True])
async def test_json_that_is_not_an_object_is_400(client: httpx.AsyncClient, value: object) -> None:
    raw = json.dumps(value).encode()
    headers = {"Content-Type": "application/json"}
    response = await client.post("/v1/messages", content=raw, headers=headers)
    assert fields_of(response) == {"body"}


async def test_escaped_backslash_before_u_d800_is_fine(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": "\\ud800"})
    assert response.status_code == 201


async def test_paired_surrogate_escapes_are_fine(client: httpx.AsyncClient) -> None:
    raw = b'{"to": "+905551234567", "body": "\\ud83d\\ude00"}'
    response = await client.post(
        "/v1/messages", content=raw, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 201


async def test_unknown_fields_are_400_naming_them(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": "x", "colour": 1})
    (detail,) = details_of(response)
    assert detail == {"field": "colour", "message": "unknown field"}


async def test_every_bad_field_is_named(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/messages/bulk",
        json={"items": [{"to": "", "body": "x"}, {"to": NORMAL, "body": 5}], "provider": "sms_z"},
    )
    assert fields_of(response) == {"items.0.to", "items.1.body", "provider"}


async def test_control_characters_are_400(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": "a\x00b"})
    assert fields_of(response) == {"body"}


# --------------------------------------------------------------------------- 413


async def test_body_over_one_mebibyte_by_content_length_is_413(client: httpx.AsyncClient) -> None:
    padding = "x" * MiB
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": padding})
    assert response.status_code == 413
    assert code_of(response) == "PAYLOAD_TOO_LARGE"
    assert response.json()["error"]["message"] == f"The request body is larger than {MiB} bytes."
    assert response.headers["ratelimit-limit"] == "100"


async def test_body_of_exactly_one_mebibyte_is_read(client: httpx.AsyncClient) -> None:
    raw = json.dumps({"to": NORMAL, "body": "x"}).encode()
    raw = raw[:-1] + b" " * (MiB - len(raw)) + b"}"
    assert len(raw) == MiB
    response = await client.post(
        "/v1/messages", content=raw, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 201


async def test_streamed_body_without_length_is_counted(client: httpx.AsyncClient) -> None:
    async def chunks():  # type: ignore[no-untyped-def]
        yield b'{"to": "+905551234567", "body": "'
        for _ in range(17):
            yield b"x" * 65536
        yield b'"}'

    response = await client.post(
        "/v1/messages", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    # Counted while read: the same message as the Content-Length check.
    assert response.json()["error"]["message"] == f"The request body is larger than {MiB} bytes."


async def test_a_lying_content_length_does_not_get_past_the_cap(bed: TestBed) -> None:
    # Raw ASGI: a client can announce 10 bytes and send 2 MiB.
    app = create_app(bed.messenger, max_body_bytes=1000)
    chunks = [b'{"to": "+905551234567", "body": "', b"x" * 2000, b'"}']
    messages = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]
    sent: list[dict[str, object]] = []

    async def receive() -> dict[str, object]:
        return messages.pop(0)

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/messages",
        "raw_path": b"/v1/messages",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"authorization", f"Bearer {bed.api_key}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", b"10"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("test", 80),
    }
    await app(scope, receive, send)
    assert sent[0]["status"] == 413


async def test_max_body_bytes_is_settable(bed: TestBed, make_client: ClientFactory) -> None:
    app = create_app(bed.messenger, max_body_bytes=100)
    client = await make_client(app, headers=bearer(bed.api_key))
    assert (await client.post("/v1/messages", json={"to": NORMAL, "body": "x"})).status_code == 201
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": "x" * 100})
    assert response.status_code == 413


# --------------------------------------------------------------------------- SPEC §8 limits


async def test_to_of_64_characters_is_read_and_65_is_400(client: httpx.AsyncClient) -> None:
    padded = "+90 555 123 45 67".ljust(64)
    assert (await client.post("/v1/messages", json={"to": padded, "body": "x"})).status_code == 201
    response = await client.post("/v1/messages", json={"to": padded + " ", "body": "x"})
    assert fields_of(response) == {"to"}


async def test_empty_to_is_400(client: httpx.AsyncClient) -> None:
    assert fields_of(await client.post("/v1/messages", json={"to": "", "body": "x"})) == {"to"}


async def test_body_of_1600_characters_is_sent_and_1601_is_400(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": "a" * 1600})
    assert response.status_code == 201
    response = await client.post("/v1/messages", json={"to": NORMAL, "body": "a" * 1601})
    assert fields_of(response) == {"body"}


async def test_sender_of_32_characters_is_read_and_33_is_400(client: httpx.AsyncClient) -> None:
    chat = {"to": "@news_channel", "body": "x", "provider": "chatbot"}  # sender is ignored there
    assert (await client.post("/v1/messages", json={**chat, "sender": "S" * 32})).status_code == 201
    response = await client.post("/v1/messages", json={**chat, "sender": "S" * 33})
    assert fields_of(response) == {"sender"}


async def test_sender_of_32_characters_is_judged_by_the_connection(
    client: httpx.AsyncClient,
) -> None:
    body = {"to": NORMAL, "body": "x", "sender": "S" * 32}
    response = await client.post("/v1/messages", json=body)
    assert code_of(response) == "SENDER_NOT_APPROVED"


async def test_provider_pattern_and_length(client: httpx.AsyncClient) -> None:
    for provider in ["SMS_A", "x" * 65, "sms a"]:
        response = await client.post(
            "/v1/messages", json={"to": NORMAL, "body": "x", "provider": provider}
        )
        assert fields_of(response) == {"provider"}


async def test_template_key_pattern(client: httpx.AsyncClient, bed: TestBed) -> None:
    key = "k" * 64
    await bed.messenger.templates.set(bed.workspace.id, key, "hi")
    response = await client.post("/v1/messages", json={"to": NORMAL, "template": key})
    assert response.status_code == 201
    for bad in ["k" * 65, "Upper", "with-dash", ""]:
        response = await client.post("/v1/messages", json={"to": NORMAL, "template": bad})
        assert fields_of(response) == {"template"}


async def test_bulk_of_200_items_is_sent_and_201_is_400(client: httpx.AsyncClient) -> None:
    items = [{"to": NORMAL, "body": str(i)} for i in range(201)]
    response = await client.post("/v1/messages/bulk", json={"items": items[:200]})
    assert response.status_code == 201
    assert response.json()["total"] == 200
    response = await client.post("/v1/messages/bulk", json={"items": items})
    assert fields_of(response) == {"items"}


async def test_bulk_needs_an_item(client: httpx.AsyncClient) -> None:
    assert fields_of(await client.post("/v1/messages/bulk", json={"items": []})) == {"items"}


async def test_three_fallbacks_are_tried_and_four_are_400(client: httpx.AsyncClient) -> None:
    three = ["sms_b", "sms_c", "sms_d"]
    response = await client.post(
        "/v1/messages", json={"to": "+905550000013", "body": "x", "fallback": three}
    )
    assert response.status_code == 201
    assert [a["status"] for a in response.json()["attempts"]] == [
        "rejected",
        "rejected",
        "rejected",
        "accepted",
    ]
    response = await client.post(
        "/v1/messages", json={"to": NORMAL, "body": "x", "fallback": [*three, "sms_e"]}
    )
    assert fields_of(response) == {"fallback"}


async def test_bulk_fallback_limit(client: httpx.AsyncClient) -> None:
    items = [{"to": NORMAL, "body": "x"}]
    four = ["sms_b", "sms_c", "sms_d", "sms_e"]
    response = await client.post("/v1/messages/bulk", json={"items": items, "fallback": four})
    assert fields_of(response) == {"fallback"}
    response = await client.post("/v1/messages/bulk", json={"items": items, "fallback": four[:3]})
    assert response.status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"to": NORMAL}, "body"),
        ({"to": NORMAL, "body": "x", "template": "t"}, "body"),
        ({"to": NORMAL, "body": "x", "variables": {"a": 1}}, "variables"),
        ({"to": NORMAL, "body": "x", "fallback": ["sms_b", "sms_b"]}, "fallback"),
        ({"to": NORMAL, "body": "x", "provider": "sms_b", "fallback": ["sms_b"]}, "fallback"),
        ({"to": NORMAL, "template": "t", "variables": {"a": [1]}}, "variables.a"),
    ],
)
async def test_rules_across_fields_are_400(
    client: httpx.AsyncClient, body: dict[str, object], field: str
) -> None:
    assert field in fields_of(await client.post("/v1/messages", json=body))


async def test_empty_body_beside_a_template_means_none(
    client: httpx.AsyncClient, bed: TestBed
) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "t", "hi")
    response = await client.post(
        "/v1/messages", json={"to": NORMAL, "template": "t", "body": "", "sender": ""}
    )
    assert response.status_code == 201
