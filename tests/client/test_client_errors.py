"""``error_from_body`` is the inverse of the REST edge's ``error_body``: every error class the
server renders comes back as the same class, message, details and job id."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_messaging import MessagingError
from unified_messaging._client import error_from_body
from unified_messaging._errors import (
    ChatUnreachable,
    ErrorDetail,
    ProviderUnavailable,
    RateLimited,
    RequestInvalid,
)
from unified_messaging.asgi._errors import error_body


def _classes() -> list[type[MessagingError]]:
    found, queue = [], [MessagingError]
    while queue:
        cls = queue.pop(0)
        found.append(cls)
        queue += cls.__subclasses__()
    # One class per code answers on the wire; the others share a code with a more general one.
    seen: set[str] = set()
    return [c for c in found if not (c.code in seen or seen.add(c.code))]


def _make(cls: type[MessagingError], message: str) -> MessagingError:
    if issubclass(cls, RequestInvalid):
        return cls(message, [ErrorDetail("items.0.to", message)])
    if issubclass(cls, ProviderUnavailable | ChatUnreachable):
        return cls(message, job_id="msg_01ABC")
    return cls(message)


@pytest.mark.parametrize("cls", [c for c in _classes() if c.http_status < 500 or c.code ==
                                 "PROVIDER_UNAVAILABLE"], ids=lambda c: c.code)  # fmt: skip
@settings(max_examples=15, deadline=None)
@given(message=st.text(min_size=1, max_size=200))
def test_each_refusal_comes_back_as_its_class(cls: type[MessagingError], message: str) -> None:
    sent = _make(cls, message)
    back = error_from_body(sent.http_status, error_body(sent), {"x-request-id": "req_9"})

    assert type(back) is cls
    assert (back.code, back.message, back.http_status) == (sent.code, sent.message, cls.http_status)
    assert back.request_id == "req_9"
    assert getattr(back, "job_id", None) == getattr(sent, "job_id", None)
    if isinstance(sent, RequestInvalid):
        assert isinstance(back, RequestInvalid)
        assert back.details == sent.details


def test_a_server_error_keeps_its_code_class() -> None:
    back = error_from_body(503, {"error": {"code": "STORAGE_UNAVAILABLE", "message": "down"}})
    assert back.code == "STORAGE_UNAVAILABLE"
    assert isinstance(back, ConnectionError)  # as the library's own is


def test_rate_limited_carries_retry_after() -> None:
    back = error_from_body(429, {"error": {"code": "RATE_LIMITED", "message": "slow"}},
                           {"retry-after": "7"})  # fmt: skip
    assert isinstance(back, RateLimited)
    assert back.retry_after == 7.0


@given(body=st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                         lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)),
       status=st.integers(min_value=400, max_value=599))  # fmt: skip
def test_any_body_becomes_an_error_and_never_raises(body: object, status: int) -> None:
    back = error_from_body(status, body)
    assert isinstance(back, MessagingError)


def test_a_code_this_version_does_not_know_keeps_its_name() -> None:
    back = error_from_body(422, {"error": {"code": "NEW_RULE", "message": "newer server"}})
    assert back.http_status == 422
    assert back.message == "NEW_RULE: newer server"
