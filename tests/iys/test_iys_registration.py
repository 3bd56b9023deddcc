"""Registering consents with İYS through the worker (D33): every change recorded is sent to
``POST /sps/{iysCode}/brands/{brandCode}/consents`` once, in order, retried with backoff on
429 and 5xx; its ``iys_state`` goes ``pending`` → ``registered`` (İYS's transaction id) or
``refused`` (İYS's H-code and message); İYS's refusal of what it holds already counts as
registered. Many changes at once go as one asynchronous bulk request, polled until each is
final. On SQLite and PostgreSQL, against the loopback fake İYS."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from _iys_support import iys_rig, onay
from _sql_apps import BACKENDS
from fakes._server import serve

from unified_messaging.asgi import create_app


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_consent_recorded_through_rest_reaches_iys_once(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r:
        key = await r.messenger.keys.create(r.workspace_id, livemode=True)
        app = create_app(r.messenger, worker=False)
        async with serve(app) as url, httpx.AsyncClient(base_url=url) as client:
            headers = {"Authorization": f"Bearer {key.secret}"}
            created = await client.post("/v1/consents", json=onay("05321000001"), headers=headers)
            assert created.status_code == 201, created.text
            assert created.json()["iys_state"] == "pending"
            await r.work()
            await r.work()  # nothing more to do: nothing goes twice
            shown = await client.get(f"/v1/consents/{created.json()['id']}", headers=headers)

        consent = shown.json()
        transaction_id = consent["iys_transaction_id"]
        assert consent["iys_state"] == "registered" and transaction_id
        assert consent["history"][0]["iys_transaction_id"] == transaction_id
        assert r.fake.consent_posts == {
            ("+905321000001", "BIREYSEL", "MESAJ", "ONAY", "2026-12-02 10:00:00"): 1
        }
        assert r.fake.changes[-1].transaction_id == transaction_id


@pytest.mark.parametrize("backend", BACKENDS)
async def test_iys_refusal_is_kept_with_its_h_code_and_message(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r:
        r.fake.refused["+905321000001"] = ("H114", "Alıcı (recipient) bulunamadı.")
        consent = await r.record("+905321000001")
        await r.work()
        state = await r.state(consent.id)

        assert state["iys_state"] == "refused"
        assert state["iys_error"] == {"code": "H114", "message": "Alıcı (recipient) bulunamadı."}
        assert state["history"][0]["iys_state"] == "refused"
        assert r.fake.posts_of("+905321000001") == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_iys_holding_the_same_consent_already_counts_as_registered(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r:
        # Registered in İYS's portal before: İYS refuses a second ONAY (422).
        r.fake.hs_change({"recipient": "+905321000001", "recipientType": "BIREYSEL",
                          "type": "MESAJ", "status": "ONAY", "source": "HS_WEB",
                          "consentDate": "2026-11-30 09:00:00"})  # fmt: skip
        consent = await r.record("+905321000001")
        await r.work()

        assert (await r.state(consent.id))["iys_state"] == "registered"
        assert r.fake.posts_of("+905321000001") == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_later_change_in_iys_refuses_ours_and_wins(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path) as r:
        r.fake.hs_change({"recipient": "+905321000001", "recipientType": "BIREYSEL",
                          "type": "MESAJ", "status": "RET", "source": "HS_WEB",
                          "consentDate": "2026-12-02 10:30:00"})  # fmt: skip
        consent = await r.record("+905321000001")  # dated 10:00, before İYS's RET
        await r.work()  # the registration, and the pull that brings İYS's RET
        state = await r.state(consent.id)

        ours, theirs = state["history"]
        assert (ours["status"], ours["iys_state"]) == ("ONAY", "refused")
        assert (theirs["status"], theirs["iys_state"]) == ("RET", "registered")
        assert (state["status"], state["iys_state"]) == ("RET", "registered")
        assert r.fake.posts_of("+905321000001") == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_changes_of_one_consent_reach_iys_in_order(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path) as r:
        consent = await r.record("+905321000001")
        r.clock.advance(60)
        await r.record("+905321000001", "RET", source="HS_MESAJ")
        await r.work()
        await r.later(5)
        state = await r.state(consent.id)

        sent = [c.consent["status"] for c in r.fake.changes]
        assert sent == ["ONAY", "RET"]
        assert [h["iys_state"] for h in state["history"]] == ["registered", "registered"]
        assert state["status"] == "RET" and state["iys_state"] == "registered"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_429_waits_its_retry_after_and_sends_once(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path) as r:
        r.fake.fail("/consents", 429, retry_after="120")
        consent = await r.record("+905321000001")
        await r.work()
        assert (await r.state(consent.id))["iys_state"] == "pending"
        await r.later(60)
        assert (await r.state(consent.id))["iys_state"] == "pending"  # not before 120 s
        await r.later(61)

        assert (await r.state(consent.id))["iys_state"] == "registered"
        assert r.fake.posts_of("+905321000001") == 1
        assert r.fake.status_lookups == 0  # a 429 surely took nothing: no doubt to clear


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_5xx_is_retried_after_asking_iys_what_it_holds(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r:
        r.fake.fail("/consents", 503, count=2)
        consent = await r.record("+905321000001")
        await r.work()
        await r.later(5)
        await r.later(10)

        assert (await r.state(consent.id))["iys_state"] == "registered"
        assert r.fake.posts_of("+905321000001") == 1
        assert r.fake.status_lookups == 2  # a 5xx may have taken it: asked before each retry


@pytest.mark.parametrize("backend", BACKENDS)
async def test_test_consents_go_to_the_simulated_iys(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path) as r:
        consent = await r.messenger.consents.create(await r.test(), onay("+905321000001"))
        await r.work()
        state = (await r.messenger.consents.get(await r.test(), consent.id)).to_dict()

        assert state["iys_state"] == "registered"
        assert state["iys_transaction_id"].startswith("sim-")
        assert not r.fake.consent_posts and r.fake.status_lookups == 0  # İYS heard nothing


@pytest.mark.parametrize("backend", BACKENDS)
async def test_consents_wait_for_a_connection_then_register(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path, connect=False) as r:
        consent = await r.record("+905321000001")
        await r.work()
        assert (await r.state(consent.id))["iys_state"] == "pending"
        assert r.fake.requests == []

        await r.connect()
        await r.work()

        assert (await r.state(consent.id))["iys_state"] == "registered"
        assert r.fake.posts_of("+905321000001") == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_many_consents_go_as_one_bulk_request_polled_until_final(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r:
        r.fake.refused["+905321000007"] = ("H114", "Alıcı (recipient) bulunamadı.")
        consents = [await r.record(f"+90532100000{n}") for n in range(10)]
        consents.append(await r.record("+905321000010"))
        await r.work()
        assert len(r.fake.bulk_requests) == 1 and len(r.fake.bulk_requests[0]) == 11
        assert {(await r.state(c.id))["iys_state"] for c in consents} == {"pending"}

        await r.later(15)  # İYS answers "enqueue" at first
        await r.later(30)
        states = {c.recipient: await r.state(c.id) for c in consents}

        assert states["+905321000007"]["iys_state"] == "refused"
        assert states["+905321000007"]["iys_error"]["code"] == "H114"
        others = [s for to, s in states.items() if to != "+905321000007"]
        assert {s["iys_state"] for s in others} == {"registered"}
        assert all(s["iys_transaction_id"] for s in others)
        assert set(r.fake.consent_posts.values()) == {1}
        assert r.fake.requests.count(("POST", f"/sps/{r.fake.iys_code}/brands/"
                                      f"{r.fake.brand_code}/consents")) == 0  # fmt: skip
