"""``status_record_json`` (the answer to ``GET /v1/messages/{job_id}``, built without the
models) is byte for byte the model path's ``status_record(record).to_json()``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import get_args

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unified_messaging import MessageNotFound, Messenger, SendRequest
from unified_messaging._domain import Attempt, DeliveryReport, ErrorInfo, MessageRecord
from unified_messaging._responses import status_record, status_record_json
from unified_messaging._types import (
    AttemptStatus,
    Channel,
    DeliveryStatus,
    Encoding,
    IysMode,
    MessageStatus,
    ProviderCode,
)
from unified_messaging.asgi import create_app
from unified_messaging.testing import create_testbed

# Any text a provider or a caller could put in a field: non-ASCII, quotes, controls, and
# lone surrogates excluded (a str with one cannot be UTF-8 at all, on either path).
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_optional_text = st.none() | _text
_moment = st.datetimes(
    min_value=datetime(1970, 1, 2),
    max_value=datetime(9998, 12, 30),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=3)), timezone(-timedelta(hours=5))])
    | st.none(),
)
_optional_moment = st.none() | _moment
_error = st.none() | st.builds(ErrorInfo, code=_text, message=_text)
_attempt = st.builds(
    Attempt,
    provider=st.sampled_from(get_args(ProviderCode)),
    status=st.sampled_from(get_args(AttemptStatus)),
    at=_moment,
    provider_message_id=_optional_text,
    error=_error,
)
_dlr = st.none() | st.builds(
    DeliveryReport,
    status=st.sampled_from(get_args(DeliveryStatus)),
    received_at=_moment,
    provider_status=_optional_text,
    error=_error,
)
_record = st.builds(
    MessageRecord,
    job_id=_text,
    workspace_id=_text,
    livemode=st.booleans(),
    status=st.sampled_from(get_args(MessageStatus)),
    to=_text,
    channel=st.sampled_from(get_args(Channel)),
    provider=st.sampled_from(get_args(ProviderCode)),
    created_at=_moment,
    updated_at=_moment,
    text=_text,
    sender=_optional_text,
    template_key=_optional_text,
    sent_at=_optional_moment,
    final_at=_optional_moment,
    error=_error,
    attempts=st.lists(_attempt, max_size=3).map(tuple),
    dlr=_dlr,
    segments=st.none() | st.integers(min_value=0, max_value=2**40),
    encoding=st.none() | st.sampled_from(get_args(Encoding)),
    send_at=_optional_moment,
    iys_mode=st.none() | st.sampled_from(get_args(IysMode)),
    masked_text=_optional_text,
)


@settings(max_examples=300, deadline=None)
@given(_record)
def test_status_record_json_is_the_models_bytes(record: MessageRecord) -> None:
    assert status_record_json(record) == status_record(record).to_json()


async def test_get_answers_the_bytes_of_get_message() -> None:
    messenger = Messenger()
    bed = await create_testbed(messenger=messenger)
    key = await messenger.keys.create(bed.workspace.id)
    principal = await messenger.principal(bed.workspace.id, livemode=False)
    sent = await messenger.send(principal, SendRequest(to="+905551234567", body="Şimdi"))
    await messenger.worker().run_until_idle()  # the simulated report: an attempt and a dlr
    expected = (await messenger.get_message(principal, sent.job_id)).to_json()
    assert await messenger.messages.get_json(principal, sent.job_id) == expected
    app = create_app(messenger, worker=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        answer = await client.get(
            f"/v1/messages/{sent.job_id}", headers={"Authorization": f"Bearer {key.secret}"}
        )
    assert answer.status_code == 200
    assert answer.content == expected


@pytest.mark.parametrize("job_id", ["msg_unknown", "x" * 500])
async def test_get_message_json_refuses_as_get_message(job_id: str) -> None:
    messenger = Messenger()
    bed = await create_testbed(messenger=messenger)
    principal = await messenger.principal(bed.workspace.id, livemode=False)
    with pytest.raises(MessageNotFound):
        await messenger.get_message(principal, job_id)
    with pytest.raises(MessageNotFound):
        await messenger.messages.get_json(principal, job_id)
