"""The exception tree (D14): one class per code, the right status, extras, builtins, no secrets."""

from __future__ import annotations

import json

import pytest

import unified_messaging
from unified_messaging import (
    ErrorDetail,
    InvalidCredentials,
    MessagingError,
    NotFound,
    ProviderUnavailable,
    RateLimited,
    RequestInvalid,
    StorageUnavailable,
    TooManyRequests,
    Unauthorized,
    Unprocessable,
)
from unified_messaging.asgi._errors import internal_error_response
from unified_messaging.providers.base import SubmitOutcome
from unified_messaging.testing import TestBed

# DESIGN.md D14, verbatim: (HTTP status, code).
D14 = [
    (400, "VALIDATION_ERROR"),
    (401, "UNAUTHORIZED"),
    (403, "IP_NOT_ALLOWED"),
    (404, "PROVIDER_NOT_CONNECTED"),
    (404, "MESSAGE_NOT_FOUND"),
    (404, "TEMPLATE_NOT_FOUND"),
    (409, "IDEMPOTENCY_CONFLICT"),
    (409, "IDEMPOTENCY_IN_PROGRESS"),
    (413, "PAYLOAD_TOO_LARGE"),
    (422, "INVALID_RECIPIENT"),
    (422, "CHAT_UNREACHABLE"),
    (422, "SENDER_NOT_APPROVED"),
    (422, "SENDER_REQUIRED"),
    (422, "FALLBACK_NOT_ALLOWED"),
    (422, "TEMPLATE_VARIABLE_MISSING"),
    (422, "BODY_TOO_LONG"),
    (429, "RATE_LIMITED"),
    (429, "QUOTA_EXCEEDED"),
    (502, "PROVIDER_UNAVAILABLE"),
    (503, "STORAGE_UNAVAILABLE"),
    (500, "INTERNAL_ERROR"),
]


def public_error_classes() -> list[type[MessagingError]]:
    exported = (getattr(unified_messaging, name) for name in unified_messaging.__all__)
    return [c for c in exported if isinstance(c, type) and issubclass(c, MessagingError)]


def every_error_class() -> list[type[MessagingError]]:
    found: list[type[MessagingError]] = []
    pending: list[type[MessagingError]] = [MessagingError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def classes_defining(code: str) -> list[type[MessagingError]]:
    return [c for c in every_error_class() if c.__dict__.get("code") == code]


@pytest.mark.parametrize(("status", "code"), D14, ids=[code for _, code in D14])
def test_each_d14_code_is_defined_by_exactly_one_class_with_its_status(
    status: int, code: str
) -> None:
    (cls,) = classes_defining(code)
    assert cls.http_status == status
    error = cls()
    assert (error.code, error.http_status) == (code, status)
    assert error.message == cls.default_message
    assert error.message


@pytest.mark.parametrize(("status", "code"), D14, ids=[code for _, code in D14])
def test_each_d14_class_is_exported(status: int, code: str) -> None:
    (cls,) = classes_defining(code)
    assert cls in public_error_classes()
    assert getattr(unified_messaging, cls.__name__) is cls


def test_no_two_classes_define_the_same_code() -> None:
    codes = [c.__dict__["code"] for c in every_error_class() if "code" in c.__dict__]
    assert len(codes) == len(set(codes))


def test_every_error_code_of_the_library_is_on_an_exported_class() -> None:
    # "Every error the library raises on purpose" is in the one public tree: a class that
    # brings its own code is exported; an internal subclass only adds data to a public one.
    library = [c for c in every_error_class() if c.__module__.startswith("unified_messaging.")]
    with_own_code = {c for c in library if "code" in c.__dict__}
    assert with_own_code <= set(public_error_classes())


@pytest.mark.parametrize(
    ("family", "status"), [(NotFound, 404), (Unprocessable, 422), (TooManyRequests, 429)]
)
def test_a_family_shares_its_status(family: type[MessagingError], status: int) -> None:
    members = [c for c in every_error_class() if issubclass(c, family)]
    assert len(members) > 1
    assert {c.http_status for c in members} == {status}


def test_every_status_is_an_http_error_status() -> None:
    assert all(400 <= c.http_status <= 599 for c in every_error_class())


def test_a_message_given_replaces_the_default() -> None:
    error = Unauthorized("custom")
    assert (error.message, str(error), error.code) == ("custom", "custom", "UNAUTHORIZED")


def test_the_repr_shows_class_code_and_message() -> None:
    assert repr(Unauthorized()) == (
        "Unauthorized(code='UNAUTHORIZED', message='Missing or invalid API key.')"
    )


# ------------------------------------------------------------------------------ extras


def test_request_invalid_carries_field_details() -> None:
    error = RequestInvalid.for_field("items.3.to", "too long")
    assert error.details == (ErrorDetail("items.3.to", "too long"),)
    assert "items.3.to" in error.message


def test_request_invalid_without_details_has_an_empty_tuple() -> None:
    assert RequestInvalid().details == ()


def test_rate_limited_carries_retry_after() -> None:
    error = RateLimited(retry_after=2.5)
    assert (error.retry_after, error.http_status, error.code) == (2.5, 429, "RATE_LIMITED")
    assert RateLimited().retry_after > 0


def test_provider_unavailable_carries_the_job_id() -> None:
    error = ProviderUnavailable(job_id="msg_1")
    assert (error.job_id, error.http_status) == ("msg_1", 502)
    assert ProviderUnavailable().job_id is None


async def test_a_502_from_a_send_names_a_job_that_can_be_read(bed: TestBed) -> None:
    with pytest.raises(ProviderUnavailable) as info:
        await bed.messenger.send(bed.principal, {"to": "+905550000003", "body": "x"})
    assert info.value.job_id is not None
    record = await bed.messenger.get_message(bed.principal, info.value.job_id)
    assert record.status == "failed"
    assert record.error is not None
    assert record.error.code == "PROVIDER_UNAVAILABLE"


@pytest.mark.parametrize("cls", [ProviderUnavailable, StorageUnavailable])
def test_unavailability_is_also_a_connection_error(cls: type[MessagingError]) -> None:
    with pytest.raises(ConnectionError):
        raise cls()
    with pytest.raises(MessagingError):
        raise cls()


def test_codes_named_outside_the_tree_are_its_classes_codes() -> None:
    # The edge's own 500 and a provider's unavailability read the class attribute, and must
    # still say what D14 says.
    body = json.loads(internal_error_response().body)
    assert body == {"error": {"code": "INTERNAL_ERROR", "message": "Internal error."}}
    outcome = SubmitOutcome.unavailable("down")
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_UNAVAILABLE"


def test_other_errors_are_not_connection_errors() -> None:
    assert not issubclass(RequestInvalid, ConnectionError)
    assert not issubclass(Unauthorized, ConnectionError)


# ------------------------------------------------------------------------------ no secrets


async def test_an_unauthorized_error_does_not_echo_the_key(bed: TestBed) -> None:
    key = bed.api_key[:-1] + ("x" if bed.api_key[-1] != "x" else "y")
    with pytest.raises(Unauthorized) as info:
        await bed.messenger.authenticate(key)
    shown = [repr(info.value), str(info.value), info.value.message]
    assert not any(key[8:] in text for text in shown)


async def test_a_bad_credential_error_does_not_echo_the_credential(bed: TestBed) -> None:
    secret = "hunter2-very-secret-password"
    with pytest.raises(InvalidCredentials) as info:
        await bed.messenger.connections.add(
            bed.workspace.id,
            "sms_a",
            credentials={"username": secret, "password": 12345},  # type: ignore[dict-item]
        )
    shown = repr(info.value) + str(info.value)
    assert secret not in shown
    assert "12345" not in shown


async def test_a_connection_repr_holds_no_credentials(bed: TestBed) -> None:
    secret = "hunter2-very-secret-password"
    workspace = await bed.messenger.workspaces.create("creds")
    connection = await bed.messenger.connections.add(
        workspace.id,
        "sms_a",
        credentials={"usercode": "8501234567", "password": secret},
        default_sender="ACME",
    )
    shown = repr(connection)
    assert secret not in shown
    assert connection.credentials not in shown
    assert connection.dlr_token not in shown


async def test_a_validation_error_does_not_echo_the_rejected_value(bed: TestBed) -> None:
    secret = "sk_live_" + "Z" * 40
    request = {"to": "+905321234567", "body": "x", "sender": secret, "api_key": secret}
    with pytest.raises(RequestInvalid) as info:
        await bed.messenger.send(bed.principal, request)
    shown = repr(info.value) + str(info.value) + repr(info.value.details)
    assert secret not in shown
    assert "api_key" in {d.field for d in info.value.details}
