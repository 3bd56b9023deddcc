"""Pulling İYS's changes (D33): the worker asks ``GET …/consents/changes`` for ``source=HS``
and ``source=IYS`` every pull interval, from its durable ``after`` cursor, page by page. A
citizen's RET to 3338 becomes the consent's state (audited, with İYS's transaction id), and
the next commercial send to them is refused; what we registered ourselves is recognised, not
recorded twice. On SQLite and PostgreSQL, against the fake İYS."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from _iys_support import iys_rig
from _sql_apps import BACKENDS

TO = "+905321000001"
INTERVAL = timedelta(minutes=5)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_ret_sent_to_3338_stops_the_next_commercial_send_within_one_pull(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path, pull_interval=INTERVAL) as r:
        consent = await r.record(TO)
        await r.work()
        assert (await r.send(TO))["status"] == "sent"

        transaction_id = r.fake.citizen_change(TO, "RET", when="2026-12-02 10:01:00")
        await r.later(INTERVAL.total_seconds())
        refused = await r.send(TO)
        state = await r.state(consent.id)
        audit = await r.messenger.audit.list(workspace_id=r.workspace_id)

        assert refused["status"] == "failed"
        assert refused["error"]["code"] == "IYS_CONSENT_MISSING"
        assert r.netgsm_numbers() == [TO]  # the one before the RET
        assert (state["status"], state["source"], state["iys_state"]) == (
            "RET", "IYS_3338", "registered",
        )  # fmt: skip
        assert state["iys_transaction_id"] == transaction_id
        assert [h["status"] for h in state["history"]] == ["ONAY", "RET"]
        assert "consent.iys_change" in [event.action for event in audit.data]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_change_taken_from_iys_is_a_consent_changed_event(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path, pull_interval=INTERVAL) as r:
        endpoint = await r.messenger.webhooks.create(
            r.workspace_id, "https://hooks.example.com/um", events=["consent.changed"]
        )
        consent = await r.record(TO)
        await r.work()
        r.fake.citizen_change(TO, "RET", when="2026-12-02 10:01:00")
        await r.later(INTERVAL.total_seconds())
        deliveries = await r.messenger.webhooks.list_deliveries(endpoint.endpoint.id)

        (delivery,) = deliveries  # our own registration is no event; the citizen's RET is
        event = json.loads(delivery.payload)
        assert delivery.event_type == "consent.changed"
        assert event["data"]["id"] == consent.id and event["data"]["status"] == "RET"
        assert event["data"]["livemode"] is True


@pytest.mark.parametrize("backend", BACKENDS)
async def test_pulls_follow_the_cursor_page_by_page_and_take_each_change_once(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path, pull_interval=INTERVAL) as r:
        r.fake.page_size = 2
        for n in range(5):
            r.fake.citizen_change(f"+90532200000{n}", "ONAY", when=f"2026-12-01 1{n}:00:00")
        await r.work()
        connection = await r.store.get_iys_connection(r.workspace_id)
        principal = await r.live()
        first = (await r.messenger.consents.list(principal)).data

        await r.later(INTERVAL.total_seconds())  # the next pull: nothing new
        r.fake.citizen_change("+905322000000", "RET", when="2026-12-02 09:00:00")
        await r.later(INTERVAL.total_seconds())
        after = {c.recipient: c.status for c in (await r.messenger.consents.list(principal)).data}

        assert len(first) == 5
        assert connection is not None
        assert connection.after_iys == [c for c in r.fake.changes if c.source == "IYS"][4].cursor
        assert after["+905322000000"] == "RET" and len(after) == 5
        history = await r.messenger.consents.get(principal, first[-1].id)
        assert [h.status for h in history.history] == ["ONAY", "RET"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_our_own_registrations_come_back_as_known(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path, pull_interval=INTERVAL) as r:
        consent = await r.record(TO)
        await r.work()
        await r.later(INTERVAL.total_seconds())  # the pull lists our ONAY under source=HS
        report = await r.messenger.iys.puller.pull(r.workspace_id)
        state = await r.state(consent.id)

        assert len(state["history"]) == 1
        assert report["applied"] == 0


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_older_change_from_iys_goes_into_the_history_only(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path, pull_interval=INTERVAL) as r:
        consent = await r.record(TO)  # dated 2026-12-02 10:00
        await r.work()
        r.fake.hs_change({"recipient": TO, "recipientType": "BIREYSEL", "type": "MESAJ",
                          "status": "RET", "source": "HS_WEB",
                          "consentDate": "2026-11-20 10:00:00"})  # fmt: skip
        await r.later(INTERVAL.total_seconds())
        state = await r.state(consent.id)

        assert state["status"] == "ONAY"
        assert sorted(h["status"] for h in state["history"]) == ["ONAY", "RET"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_pull_iys_cannot_answer_is_tried_again(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path, pull_interval=INTERVAL) as r:
        r.fake.fail("/consents/changes", 503, count=1)
        r.fake.citizen_change(TO, "ONAY", when="2026-12-01 10:00:00")
        await r.work()
        principal = await r.live()
        assert (await r.messenger.consents.list(principal)).data == []

        await r.later(10)

        assert [c.recipient for c in (await r.messenger.consents.list(principal)).data] == [TO]
