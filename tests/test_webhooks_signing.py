"""Standard Webhooks signing and verification (D19): our side, the spec's vectors, and interop
with the independent reference package ``standardwebhooks``."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta, timezone

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook as ReferenceWebhook
from starlette.datastructures import Headers

from unified_messaging import StatusRecord
from unified_messaging._lifecycle.rules import EVENT_TYPES
from unified_messaging.webhooks import (
    Webhook,
    WebhookVerificationError,
    generate_secret,
    generate_test_headers,
    sign,
    signature_headers,
    verify,
)
from unified_messaging.webhooks._signing import build_event, event_id, format_timestamp

# The reference libraries' own known-answer vector (libraries/*/tests of standard-webhooks).
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_MSG_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TIMESTAMP = 1614265330
SPEC_PAYLOAD = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
SPEC_NOW = datetime.fromtimestamp(SPEC_TIMESTAMP, UTC)

SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()
OTHER_SECRET = "whsec_" + base64.b64encode(bytes(range(100, 132))).decode()
MSG_ID = "evt_01JTESTTESTTESTTESTTESTTE"
TS = 1_767_225_600  # 2026-01-01T00:00:00Z
AT_TS = datetime.fromtimestamp(TS, UTC)
BODY = '{"type":"message.delivered","data":{"to":"+905551234567","sender":"ŞİRKET"}}'.encode()


def headers_for(body: bytes = BODY, secrets: list[str] | None = None) -> dict[str, str]:
    return signature_headers(secrets or [SECRET], MSG_ID, TS, body)


def failure(
    payload: bytes, headers: Mapping[str, str], secret: str | list[str] = SECRET, **kw: datetime
) -> WebhookVerificationError:
    with pytest.raises(WebhookVerificationError) as caught:
        verify(payload, headers, secret, now=kw.get("now", AT_TS))
    return caught.value


# --------------------------------------------------------------------------- known answers


def test_sign_matches_the_reference_known_answer() -> None:
    assert sign(SPEC_SECRET, SPEC_MSG_ID, SPEC_TIMESTAMP, SPEC_PAYLOAD) == SPEC_SIGNATURE


def test_verify_accepts_the_reference_known_answer() -> None:
    headers = {
        "webhook-id": SPEC_MSG_ID,
        "webhook-timestamp": str(SPEC_TIMESTAMP),
        "webhook-signature": SPEC_SIGNATURE,
    }

    assert verify(SPEC_PAYLOAD, headers, SPEC_SECRET, now=SPEC_NOW) == {"test": 2432232314}


def test_verify_rejects_the_reference_near_miss_signature() -> None:
    headers = {
        "webhook-id": SPEC_MSG_ID,
        "webhook-timestamp": str(SPEC_TIMESTAMP),
        "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=",
    }

    assert failure(SPEC_PAYLOAD, headers, SPEC_SECRET, now=SPEC_NOW).reason == (
        "no_matching_signature"
    )


def test_a_bare_base64_secret_works_like_the_whsec_form() -> None:
    bare = SPEC_SECRET.removeprefix("whsec_")

    assert sign(bare, SPEC_MSG_ID, SPEC_TIMESTAMP, SPEC_PAYLOAD) == SPEC_SIGNATURE


def test_an_unpadded_secret_is_accepted() -> None:
    padded = "whsec_" + base64.b64encode(b"x" * 25).decode()
    assert padded.endswith("=")

    assert sign(padded.rstrip("="), MSG_ID, TS, BODY) == sign(padded, MSG_ID, TS, BODY)


# --------------------------------------------------------------------------- interop


def test_our_signature_verifies_with_the_reference_package() -> None:
    now = int(datetime.now(UTC).timestamp())
    headers = signature_headers([SECRET], MSG_ID, now, BODY)

    assert ReferenceWebhook(SECRET).verify(BODY, headers) == json.loads(BODY)


def test_our_rotation_header_verifies_with_the_reference_package() -> None:
    now = int(datetime.now(UTC).timestamp())
    headers = signature_headers([OTHER_SECRET, SECRET], MSG_ID, now, BODY)

    assert ReferenceWebhook(SECRET).verify(BODY, headers) == json.loads(BODY)


def test_the_reference_packages_signature_verifies_with_ours() -> None:
    signature = ReferenceWebhook(SECRET).sign(MSG_ID, AT_TS, BODY.decode())
    headers = {"webhook-id": MSG_ID, "webhook-timestamp": str(TS), "webhook-signature": signature}

    assert verify(BODY, headers, SECRET, now=AT_TS) == json.loads(BODY)


@given(
    text=st.text(max_size=300),
    msg_id=st.from_regex(r"\Amsg_[A-Za-z0-9]{1,30}\Z"),
    timestamp=st.integers(min_value=0, max_value=4_000_000_000),
)
def test_we_and_the_reference_package_sign_any_text_identically(
    text: str, msg_id: str, timestamp: int
) -> None:
    theirs = ReferenceWebhook(SECRET).sign(msg_id, datetime.fromtimestamp(timestamp, UTC), text)

    assert sign(SECRET, msg_id, timestamp, text.encode()) == theirs


# --------------------------------------------------------------------------- rotation


def test_rotation_header_carries_one_signature_per_secret() -> None:
    headers = headers_for(secrets=[SECRET, OTHER_SECRET])

    entries = headers["webhook-signature"].split(" ")
    assert entries == [sign(SECRET, MSG_ID, TS, BODY), sign(OTHER_SECRET, MSG_ID, TS, BODY)]


@pytest.mark.parametrize("receiver_secret", [SECRET, OTHER_SECRET])
def test_during_rotation_either_secret_verifies(receiver_secret: str) -> None:
    headers = headers_for(secrets=[SECRET, OTHER_SECRET])

    assert verify(BODY, headers, receiver_secret, now=AT_TS) == json.loads(BODY)


def test_a_receiver_holding_old_and_new_secrets_accepts_either_signer() -> None:
    headers = headers_for(secrets=[OTHER_SECRET])

    assert Webhook([SECRET, OTHER_SECRET]).verify(BODY, headers, now=AT_TS) == json.loads(BODY)


def test_a_secret_that_signed_nothing_fails() -> None:
    assert failure(BODY, headers_for(), OTHER_SECRET).reason == "no_matching_signature"


# --------------------------------------------------------------------------- tampering


def test_tampered_body_fails() -> None:
    tampered = BODY.replace(b"delivered", b"failed")

    assert failure(tampered, headers_for()).reason == "no_matching_signature"


def test_tampered_id_fails() -> None:
    headers = {**headers_for(), "webhook-id": "evt_01JOTHEROTHEROTHEROTHEROT"}

    assert failure(BODY, headers).reason == "no_matching_signature"


def test_tampered_timestamp_fails_even_within_tolerance() -> None:
    headers = {**headers_for(), "webhook-timestamp": str(TS + 1)}

    assert failure(BODY, headers).reason == "no_matching_signature"


def test_a_json_body_parsed_and_reserialized_no_longer_verifies() -> None:
    reserialized = json.dumps(json.loads(BODY)).encode()

    assert failure(reserialized, headers_for()).reason == "no_matching_signature"


# --------------------------------------------------------------------------- tolerance


@pytest.mark.parametrize("skew", [0, 300, -300])
def test_timestamps_up_to_five_minutes_either_way_pass(skew: int) -> None:
    now = AT_TS + timedelta(seconds=skew)

    assert verify(BODY, headers_for(), SECRET, now=now) == json.loads(BODY)


def test_a_timestamp_older_than_five_minutes_fails() -> None:
    now = AT_TS + timedelta(seconds=301)

    assert failure(BODY, headers_for(), now=now).reason == "timestamp_too_old"


def test_a_timestamp_more_than_five_minutes_ahead_fails() -> None:
    now = AT_TS - timedelta(seconds=301)

    assert failure(BODY, headers_for(), now=now).reason == "timestamp_too_new"


def test_tolerance_is_settable() -> None:
    now = AT_TS + timedelta(seconds=31)
    hook = Webhook(SECRET, tolerance=timedelta(seconds=30))

    with pytest.raises(WebhookVerificationError) as caught:
        hook.verify(BODY, headers_for(), now=now)
    assert caught.value.reason == "timestamp_too_old"
    assert verify(BODY, headers_for(), SECRET, tolerance=timedelta(hours=1), now=now)


def test_a_stale_timestamp_fails_before_any_signature_is_judged() -> None:
    headers = {**headers_for(), "webhook-signature": "v1,AAAA"}

    assert failure(BODY, headers, now=AT_TS + timedelta(days=1)).reason == "timestamp_too_old"


def test_verify_defaults_to_the_system_clock() -> None:
    headers = generate_test_headers(BODY, SECRET)

    assert verify(BODY, headers, SECRET) == json.loads(BODY)


def test_now_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        verify(BODY, headers_for(), SECRET, now=datetime(2026, 1, 1))


# --------------------------------------------------------------------------- headers


def test_header_names_are_case_insensitive_in_a_plain_dict() -> None:
    headers = {name.upper(): value for name, value in headers_for().items()}

    assert verify(BODY, headers, SECRET, now=AT_TS) == json.loads(BODY)


HeaderKind = Callable[[dict[str, str]], Mapping[str, str]]


@pytest.mark.parametrize("kind", [Headers, httpx.Headers])
def test_framework_header_mappings_work(
    kind: Callable[[dict[str, str]], Mapping[str, str]],
) -> None:
    headers = kind({name.title(): value for name, value in headers_for().items()})

    assert verify(BODY, headers, SECRET, now=AT_TS) == json.loads(BODY)


@pytest.mark.parametrize("name", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_a_missing_header_fails(name: str) -> None:
    headers = headers_for()
    del headers[name]

    error = failure(BODY, headers)
    assert error.reason == "missing_header"
    assert name in str(error)


@pytest.mark.parametrize("name", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_an_empty_header_fails(name: str) -> None:
    headers = {**headers_for(), name: ""}

    assert failure(BODY, headers).reason == "missing_header"


@pytest.mark.parametrize("value", ["hello", f"{TS}.5", f"-{TS}", "1e9", "١٢٣", "9" * 40])
def test_a_timestamp_that_is_not_unix_seconds_fails(value: str) -> None:
    headers = {**headers_for(), "webhook-timestamp": value}

    assert failure(BODY, headers).reason == "invalid_header"


def test_unknown_signature_versions_are_ignored() -> None:
    valid = headers_for()["webhook-signature"]
    noise = "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5Bdqz== v2,Ceo5qEr07ixe2NLpvHk3FH9b="
    headers = {**headers_for(), "webhook-signature": f"{noise} {valid}"}

    assert verify(BODY, headers, SECRET, now=AT_TS) == json.loads(BODY)


def test_only_unknown_versions_is_no_matching_signature() -> None:
    digest = headers_for()["webhook-signature"].removeprefix("v1,")
    headers = {**headers_for(), "webhook-signature": f"v2,{digest} v1a,{digest}"}

    assert failure(BODY, headers).reason == "no_matching_signature"


@pytest.mark.parametrize(
    "junk", ["v1,not*base64!", "v1", "v1,", ",", "garbage", "v1,AAAA", "v1,,,,"]
)
def test_malformed_signature_entries_are_skipped_not_crashed_on(junk: str) -> None:
    valid = headers_for()["webhook-signature"]

    assert failure(BODY, {**headers_for(), "webhook-signature": junk}).reason == (
        "no_matching_signature"
    )
    assert verify(
        BODY, {**headers_for(), "webhook-signature": f"{junk} {valid}"}, SECRET, now=AT_TS
    )


# --------------------------------------------------------------------------- payload and secret


def test_a_str_payload_is_a_type_error_naming_the_fix() -> None:
    with pytest.raises(TypeError, match="raw request body as bytes"):
        verify(BODY.decode(), headers_for(), SECRET, now=AT_TS)  # type: ignore[arg-type]


def test_bytearray_and_memoryview_payloads_work() -> None:
    assert verify(bytearray(BODY), headers_for(), SECRET, now=AT_TS) == json.loads(BODY)
    assert verify(memoryview(BODY), headers_for(), SECRET, now=AT_TS) == json.loads(BODY)


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b"\xff\xfe", b""])
def test_a_genuine_body_that_is_not_a_json_object_is_invalid_payload(body: bytes) -> None:
    assert failure(body, headers_for(body)).reason == "invalid_payload"


@pytest.mark.parametrize("secret", ["whsec_!!!not-base64!!!", "whsec_", "", "whsec_Zqx9K"])
def test_an_unusable_secret_is_a_value_error_that_does_not_repeat_it(secret: str) -> None:
    with pytest.raises(ValueError, match="webhook secret") as caught:
        Webhook(secret)
    if secret.removeprefix("whsec_"):
        assert secret.removeprefix("whsec_") not in str(caught.value)


def test_a_non_string_secret_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="whsec_"):
        Webhook(b"raw-bytes")  # type: ignore[arg-type]


def test_an_empty_secret_list_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        Webhook([])


def test_errors_and_reprs_never_show_the_secret_or_the_expected_signature() -> None:
    expected = headers_for()["webhook-signature"].removeprefix("v1,")
    key_text = SECRET.removeprefix("whsec_")
    cases = [
        failure(b'{"x":1}', headers_for()),
        failure(BODY, {**headers_for(), "webhook-signature": "v1,AAAA"}),
        failure(BODY, headers_for(), now=AT_TS + timedelta(hours=1)),
        failure(BODY, {**headers_for(), "webhook-id": ""}),
    ]
    shown = [str(error) for error in cases] + [repr(error) for error in cases]
    shown.append(repr(Webhook([SECRET, OTHER_SECRET])))

    for text in shown:
        assert key_text not in text
        assert expected not in text


# --------------------------------------------------------------------------- helpers


def test_generate_secret_gives_32_random_bytes_in_whsec_form() -> None:
    first, second = generate_secret(), generate_secret()

    assert first.startswith("whsec_")
    assert len(base64.b64decode(first.removeprefix("whsec_"))) == 32
    assert first != second


@pytest.mark.parametrize("nbytes", [24, 64])
def test_generate_secret_allows_the_spec_range(nbytes: int) -> None:
    assert len(base64.b64decode(generate_secret(nbytes).removeprefix("whsec_"))) == nbytes


@pytest.mark.parametrize("nbytes", [0, 23, 65])
def test_generate_secret_refuses_sizes_outside_the_spec(nbytes: int) -> None:
    with pytest.raises(ValueError, match="24-64"):
        generate_secret(nbytes)


def test_generate_test_headers_make_a_payload_pass_verify() -> None:
    headers = generate_test_headers(BODY, SECRET, timestamp=TS)

    assert headers["webhook-id"].startswith("evt_")
    assert headers["webhook-timestamp"] == str(TS)
    assert verify(BODY, headers, SECRET, now=AT_TS) == json.loads(BODY)


def test_sign_refuses_an_id_with_a_dot() -> None:
    # "{id}.{ts}.{body}" would be ambiguous: the spec forbids "." in the id.
    with pytest.raises(ValueError, match=r"no '\.'"):
        sign(SECRET, "evt.1", TS, BODY)


def test_sign_refuses_text_instead_of_bytes() -> None:
    with pytest.raises(TypeError, match="raw body bytes"):
        sign(SECRET, MSG_ID, TS, BODY.decode())  # type: ignore[arg-type]


def test_signature_headers_need_a_secret() -> None:
    with pytest.raises(ValueError, match="at least one secret"):
        signature_headers([], MSG_ID, TS, BODY)


def test_signature_headers_accept_a_lone_secret_string() -> None:
    headers = signature_headers(SECRET, MSG_ID, TS, BODY)

    assert headers["webhook-signature"] == sign(SECRET, MSG_ID, TS, BODY)


# --------------------------------------------------------------------------- events


def status_record(**changes: object) -> StatusRecord:
    at = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    fields: dict[str, object] = {
        "job_id": "job_01JAAAAAAAAAAAAAAAAAAAAAAA",
        "status": "delivered",
        "to": "+905551234567",
        "channel": "sms",
        "provider": "sms_a",
        "sender": "ŞİRKET",
        "template": None,
        "template_key": None,
        "created_at": at,
        "updated_at": at,
        "sent_at": at,
        "final_at": at,
        "error": None,
        "attempts": [],
        "dlr": None,
        "segments": 1,
        "encoding": "gsm7_turkish",
        "livemode": False,
    }
    return StatusRecord.model_validate({**fields, **changes})


def test_event_body_is_type_timestamp_data_in_that_order() -> None:
    record = status_record()
    body = build_event("message.delivered", record, now=datetime(2026, 1, 1, 12, 0, 1, tzinfo=UTC))

    event = json.loads(body)
    assert list(event) == ["type", "timestamp", "data"]
    assert event["type"] == "message.delivered"
    assert event["timestamp"] == "2026-01-01T12:00:01Z"
    assert event["data"] == record.to_dict()
    assert list(event["data"]) == list(record.to_dict())
    assert event["data"]["livemode"] is False


def test_event_body_is_compact_utf8_and_stable() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    body = build_event("message.sent", status_record(), now=now)

    assert b": " not in body
    assert b", " not in body
    assert "ŞİRKET".encode() in body
    assert body == build_event("message.sent", status_record(), now=now)


def test_event_body_verifies_end_to_end() -> None:
    body = build_event("message.failed", status_record(status="failed"), now=AT_TS)

    event = verify(body, headers_for(body), SECRET, now=AT_TS)
    assert event["type"] == "message.failed"


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_every_event_type_builds(event_type: str) -> None:
    body = build_event(event_type, status_record(), now=AT_TS)  # type: ignore[arg-type]

    assert json.loads(body)["type"] == event_type


def test_an_unknown_event_type_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown event type"):
        build_event("message.read", status_record(), now=AT_TS)  # type: ignore[arg-type]


def test_event_time_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        format_timestamp(datetime(2026, 1, 1))


def test_event_timestamps_keep_microseconds_and_convert_to_utc() -> None:
    istanbul = datetime(2026, 1, 1, 3, 0, 0, 5, tzinfo=timezone(timedelta(hours=3)))

    assert format_timestamp(istanbul) == "2026-01-01T00:00:00.000005Z"


def test_event_ids_are_unique_evt_ids_without_dots() -> None:
    ids = {event_id() for _ in range(1000)}

    assert len(ids) == 1000
    assert all(item.startswith("evt_") and "." not in item for item in ids)


# --------------------------------------------------------------------------- properties


def signature_accepted(payload: bytes, headers: Mapping[str, str]) -> bool:
    """Did the signature check pass? (A genuine non-JSON body then fails only at parsing.)"""
    try:
        verify(payload, headers, SECRET, now=AT_TS)
    except WebhookVerificationError as error:
        return error.reason == "invalid_payload"
    return True


@given(payload=st.binary(max_size=2048))
def test_any_bytes_payload_round_trips_sign_then_verify(payload: bytes) -> None:
    assert signature_accepted(payload, headers_for(payload))


@given(payload=st.binary(min_size=1, max_size=512), data=st.data())
def test_any_single_bit_flip_in_the_payload_fails(payload: bytes, data: st.DataObject) -> None:
    headers = headers_for(payload)
    bit = data.draw(st.integers(min_value=0, max_value=len(payload) * 8 - 1))
    flipped = bytearray(payload)
    flipped[bit // 8] ^= 1 << (bit % 8)

    assert not signature_accepted(bytes(flipped), headers)


@given(bit=st.integers(min_value=0, max_value=255))
def test_any_single_bit_flip_in_the_signature_fails(bit: int) -> None:
    headers = headers_for()
    digest = bytearray(base64.b64decode(headers["webhook-signature"].removeprefix("v1,")))
    digest[bit // 8] ^= 1 << (bit % 8)
    headers["webhook-signature"] = "v1," + base64.b64encode(digest).decode()

    assert not signature_accepted(BODY, headers)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(event=st.dictionaries(st.text(), json_values, max_size=6))
def test_any_json_object_comes_back_equal(event: dict[str, object]) -> None:
    body = json.dumps(event, ensure_ascii=False).encode()

    assert verify(body, headers_for(body), SECRET, now=AT_TS) == event


@given(
    headers=st.dictionaries(
        st.sampled_from(["webhook-id", "webhook-timestamp", "webhook-signature", "other"]),
        st.text(max_size=80),
    ),
    payload=st.binary(max_size=64),
)
def test_arbitrary_headers_only_ever_fail_with_a_verification_error(
    headers: dict[str, str], payload: bytes
) -> None:
    with pytest.raises(WebhookVerificationError):
        verify(payload, headers, SECRET, now=AT_TS)


# --------------------------------------------------------------------------- public surface


def test_the_public_webhooks_module_exports_exactly_the_receiver_api() -> None:
    import unified_messaging.webhooks as public

    assert set(public.__all__) == {
        "DEFAULT_TOLERANCE",
        "EVENT_TYPES",
        "EventType",
        "Payload",
        "VerificationFailure",
        "Webhook",
        "WebhookVerificationError",
        "generate_secret",
        "generate_test_headers",
        "sign",
        "signature_headers",
        "verify",
    }
    assert all(getattr(public, name) is not None for name in public.__all__)
    assert WebhookVerificationError.__module__ == "unified_messaging.webhooks"
