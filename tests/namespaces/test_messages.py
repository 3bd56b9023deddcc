"""``messenger.messages``: the status record's JSON bytes, the answer to a replayed send, and
the workspace's counts; an unknown or another mode's message is not found."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from unified_messaging import MessageNotFound, RequestInvalid, ResourceNotFound
from unified_messaging.testing import TestBed


async def test_get_json_is_the_status_records_bytes(bed: TestBed) -> None:
    sent = await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "Selam"})

    raw = await bed.messenger.messages.get_json(bed.principal, sent.job_id)

    record = await bed.messenger.get_message(bed.principal, sent.job_id)
    assert json.loads(raw) == json.loads(record.to_json())
    assert json.loads(raw)["body"] == "Selam"
    live = await bed.messenger.principal(bed.workspace.id, livemode=True)
    for caller, job_id in ((live, sent.job_id), (bed.principal, "msg_nope")):
        with pytest.raises(MessageNotFound) as unknown:
            await bed.messenger.messages.get_json(caller, job_id)
        assert (unknown.value.code, unknown.value.http_status) == ("MESSAGE_NOT_FOUND", 404)


async def test_current_answer_rebuilds_the_sends_answer_from_the_stored_jobs(bed: TestBed) -> None:
    one = await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})
    bulk = await bed.messenger.send_bulk(
        bed.principal, {"items": [{"to": "+905339876543", "body": "a"}, {"to": "+905551112233",
                                                                         "body": "b"}]}
    )  # fmt: skip

    single = await bed.messenger.messages.current_answer(bed.principal, [one.job_id], bulk=False)
    many = await bed.messenger.messages.current_answer(
        bed.principal, [result.job_id for result in bulk.results], bulk=True
    )

    # The send's own answer, rebuilt from the stored jobs: what a replayed send answers.
    assert single == one
    assert [(r.job_id, r.status) for r in many.results] == [  # type: ignore[union-attr]
        (r.job_id, r.status) for r in bulk.results
    ]
    with pytest.raises(MessageNotFound):
        await bed.messenger.messages.current_answer(bed.principal, ["msg_nope"], bulk=False)


async def test_counts_by_status_and_provider_since_a_time(bed: TestBed) -> None:
    since = bed.clock.now() - timedelta(minutes=1)
    await bed.messenger.send(bed.principal, {"to": "+905321234567", "body": "x"})
    await bed.settle()

    counts = await bed.messenger.messages.counts(bed.workspace.id, since=since, livemode=False)

    assert counts.by_status["delivered"] == 1 and sum(counts.by_status.values()) == 1
    assert [sum(v.values()) for v in counts.by_provider.values()] == [1]
    live = await bed.messenger.messages.counts(bed.workspace.id, since=since)
    assert sum(live.by_status.values()) == 0
    with pytest.raises(RequestInvalid):
        await bed.messenger.messages.counts(bed.workspace.id, since=since.replace(tzinfo=None))
    with pytest.raises(ResourceNotFound):
        await bed.messenger.messages.counts("ws_nope", since=since)
