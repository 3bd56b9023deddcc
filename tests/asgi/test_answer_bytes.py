"""The REST answers' bytes: ``to_json()`` is pydantic-core's serialiser, and it must
give exactly the bytes the edge sent before, ``json.dumps(to_dict(), ensure_ascii=False,
separators=(",", ":"))``, for any text a message can carry (Turkish letters, emoji, control
characters, quotes, U+2028) and any time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from unified_messaging._models import (
    AttemptOut,
    BulkResponse,
    BulkResult,
    ErrorObject,
    SendResponse,
)
from unified_messaging.asgi._errors import json_bytes

# Any text a JSON string can hold (no lone surrogates: storable text never has them).
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
times = st.datetimes(
    min_value=datetime(1970, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=3))]),
)
errors = st.none() | st.builds(ErrorObject, code=texts, message=texts)
attempts = st.builds(
    AttemptOut,
    provider=st.sampled_from(["sms_a", "chatbot"]),
    status=st.sampled_from(["accepted", "unknown"]),
    provider_message_id=st.none() | texts,
    error=errors,
    at=times,
)
sends = st.builds(
    SendResponse,
    job_id=texts,
    status=st.sampled_from(["queued", "sent", "failed", "unknown"]),
    to=texts,
    provider=st.just("sms_a"),
    created_at=times,
    error=errors,
    template=st.none() | texts,
    template_key=st.none() | texts,
    attempts=st.none() | st.lists(attempts, max_size=3),
)


@settings(max_examples=200, deadline=None)
@given(sends)
def test_a_send_answer_is_the_same_bytes(answer: SendResponse) -> None:
    assert answer.to_json() == json_bytes(answer.to_dict())


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(texts, errors), min_size=1, max_size=5), times)
def test_a_bulk_answer_is_the_same_bytes(
    items: list[tuple[str, ErrorObject | None]], created_at: datetime
) -> None:
    results = [
        BulkResult(to=to, status="failed" if error else "sent", job_id=f"msg_{n}", error=error)
        for n, (to, error) in enumerate(items)
    ]
    answer = BulkResponse(
        total=len(results),
        sent=sum(1 for r in results if r.error is None),
        failed=sum(1 for r in results if r.error is not None),
        provider="sms_a",
        created_at=created_at,
        results=results,
    )
    assert answer.to_json() == json_bytes(answer.to_dict())
