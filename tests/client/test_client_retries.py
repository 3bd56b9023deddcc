"""What the client repeats and what it raises, at the httpx seam (``MockTransport`` playing the
server's answers in order): the same Idempotency-Key on every try of one call, waits from
``Retry-After``, and the library's exception once an answer is final."""

from __future__ import annotations

import json
from collections.abc import Sequence

import httpx
import pytest

from unified_messaging import (
    AsyncClient,
    Client,
    IdempotencyInProgress,
    InvalidRecipient,
    ProviderUnavailable,
    QuotaExceeded,
    RateLimited,
    StorageUnavailable,
)

SENT = {
    "job_id": "msg_1",
    "status": "sent",
    "to": "+905551234567",
    "provider": "sms_a",
    "created_at": "2026-11-27T08:00:00Z",
}
REQUEST = {"to": "+905551234567", "body": "x"}
Answer = httpx.Response | Exception


def error(status: int, code: str, headers: dict[str, str] | None = None, **extra: str) -> Answer:
    body = {"error": {"code": code, "message": f"{code} happened", **extra}}
    return httpx.Response(status, json=body, headers={"X-Request-ID": "req_1", **(headers or {})})


class Script:
    """Answers in order; records every request and every wait."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.waits: list[float] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def client(self, max_retries: int = 3) -> Client:
        http = httpx.Client(transport=httpx.MockTransport(self.handle), base_url="http://srv")
        return Client("http://srv", "um_test_x", http_client=http, max_retries=max_retries,
                      sleep=self.waits.append)  # fmt: skip

    @property
    def keys(self) -> list[str | None]:
        return [r.headers.get("idempotency-key") for r in self.requests]


def ok() -> Answer:
    return httpx.Response(201, json=SENT)


@pytest.mark.parametrize(
    "first",
    [
        httpx.ConnectError("refused"),
        httpx.ReadError("reset by peer"),
        httpx.ReadTimeout("no answer"),
        httpx.RemoteProtocolError("server disconnected"),
        error(500, "INTERNAL_ERROR"),
        error(503, "STORAGE_UNAVAILABLE"),
        httpx.Response(502, text="<html>bad gateway</html>"),  # a proxy's, not ours
        httpx.Response(504, text="gateway timeout"),
        error(409, "IDEMPOTENCY_IN_PROGRESS"),
    ],
    ids=lambda a: type(a).__name__ if isinstance(a, Exception) else str(a.status_code),
)
def test_a_send_is_repeated_with_the_same_key_after(first: Answer) -> None:
    script = Script(first, ok())
    with script.client() as client:
        sent = client.send(REQUEST)

    assert sent.job_id == "msg_1"
    assert len(script.requests) == 2
    assert script.keys[0] is not None and script.keys[0] == script.keys[1]
    assert script.waits == [0.5]  # the first back-off


def test_rate_limited_waits_what_retry_after_says() -> None:
    script = Script(error(429, "RATE_LIMITED", {"Retry-After": "3"}), ok())
    with script.client() as client:
        client.send(REQUEST)

    assert script.waits == [3.0]


@pytest.mark.parametrize(
    ("answer", "raised"),
    [
        (error(429, "QUOTA_EXCEEDED"), QuotaExceeded),  # the month's, not a moment's
        (error(429, "RATE_LIMITED", {"Retry-After": "3600"}), RateLimited),  # too long to sleep
        (error(422, "INVALID_RECIPIENT"), InvalidRecipient),
        (error(502, "PROVIDER_UNAVAILABLE", job_id="msg_9"), ProviderUnavailable),  # D7: final
    ],
)
def test_final_answers_are_raised_at_once(answer: Answer, raised: type[Exception]) -> None:
    script = Script(answer)
    with script.client() as client, pytest.raises(raised) as caught:
        client.send(REQUEST)

    assert len(script.requests) == 1
    assert getattr(caught.value, "request_id", None) == "req_1"
    if raised is ProviderUnavailable:
        assert caught.value.job_id == "msg_9"  # type: ignore[attr-defined]


def test_after_the_last_retry_the_last_answer_is_raised() -> None:
    script = Script(*[error(503, "STORAGE_UNAVAILABLE")] * 3)
    with script.client(max_retries=2) as client, pytest.raises(StorageUnavailable):
        client.get_message("msg_1")

    assert len(script.requests) == 3
    assert script.waits == [0.5, 1.0]


def test_in_progress_gives_up_as_the_conflict_it_is() -> None:
    script = Script(*[error(409, "IDEMPOTENCY_IN_PROGRESS")] * 2)
    with script.client(max_retries=1) as client, pytest.raises(IdempotencyInProgress):
        client.send(REQUEST)


def test_no_answer_at_all_is_httpx_error_after_the_retries() -> None:
    script = Script(*[httpx.ConnectError("refused")] * 2)
    with script.client(max_retries=1) as client, pytest.raises(httpx.ConnectError):
        client.health()


def test_every_call_gets_a_key_of_its_own_and_gets_carry_none() -> None:
    script = Script(ok(), ok(), httpx.Response(200, json={"status": "ok", "version": "1"}))
    with script.client() as client:
        client.send(REQUEST)
        client.send(REQUEST)
        client.health()

    first, second, health = script.keys
    assert first and second and first != second
    assert health is None
    assert json.loads(script.requests[0].content) == REQUEST  # what was given, nothing added


async def test_the_async_client_retries_the_same_way() -> None:
    answers: list[Answer] = [httpx.ReadError("reset"), error(409, "IDEMPOTENCY_IN_PROGRESS"), ok()]
    seen: list[httpx.Request] = []
    waits: list[float] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://srv")
    async with AsyncClient("http://srv", "k", http_client=http, sleep=sleep) as client:
        sent = await client.send(REQUEST)

    assert sent.job_id == "msg_1"
    assert len({r.headers["idempotency-key"] for r in seen}) == 1
    assert waits == [0.5, 1.0]


def _public(cls: type) -> dict[str, Sequence[str]]:
    import inspect

    return {
        name: list(inspect.signature(member).parameters)
        for name, member in vars(cls).items()
        if callable(member) and not name.startswith("_")
    }


def test_the_twins_have_the_same_methods() -> None:
    sync, async_ = _public(Client), _public(AsyncClient)
    sync["aclose"] = sync.pop("close")  # the one name each side spells its own way
    assert sync == async_
