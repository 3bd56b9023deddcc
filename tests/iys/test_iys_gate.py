"""The hand-over gate under consent policy ``iys`` (D33, D35 rule 4): our records first; a
commercial SMS to a recipient we hold no record of is looked up in İYS
(``POST …/consents/status``), the answer cached; ONAY goes, RET or no record anywhere ends
``failed`` ``IYS_CONSENT_MISSING`` (201) with no provider call; İYS out of reach holds the
message and it is asked about again. Test keys ask the simulated İYS (magic recipients).
On SQLite and PostgreSQL: the real NetGSM adapter against its fake, the fake İYS."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from _iys_support import iys_rig
from _sql_apps import BACKENDS

from unified_messaging.iys import MAGIC_NONE, MAGIC_ONAY, MAGIC_RET

LOCAL_ONAY = "+905321000001"
LOCAL_RET = "+905321000002"
IYS_ONAY = "+905321000003"
IYS_RET = "+905321000004"
NOWHERE = "+905321000005"


def in_iys(r: object, recipient: str, status: str) -> None:
    r.fake.records[(recipient, "BIREYSEL", "MESAJ")] = {  # type: ignore[attr-defined]
        "recipient": recipient, "recipientType": "BIREYSEL", "type": "MESAJ",
        "status": status, "source": "HS_WEB", "consentDate": "2026-11-01 10:00:00",
    }  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
async def test_only_recipients_with_onay_here_or_in_iys_cost_credit(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r:
        await r.record(LOCAL_ONAY)
        await r.record(LOCAL_RET)
        r.clock.advance(1)
        await r.record(LOCAL_RET, "RET", source="HS_MESAJ")
        in_iys(r, IYS_ONAY, "ONAY")
        in_iys(r, IYS_RET, "RET")

        results = await r.send_bulk(LOCAL_ONAY, LOCAL_RET, IYS_ONAY, IYS_RET, NOWHERE)
        again = await r.send(IYS_ONAY)  # cached: İYS is not asked again
        missing = await r.send(NOWHERE)

        statuses = {x["to"]: (x["status"], (x.get("error") or {}).get("code")) for x in results}
        assert statuses == {
            LOCAL_ONAY: ("sent", None),
            LOCAL_RET: ("failed", "IYS_CONSENT_MISSING"),
            IYS_ONAY: ("sent", None),
            IYS_RET: ("failed", "IYS_CONSENT_MISSING"),
            NOWHERE: ("failed", "IYS_CONSENT_MISSING"),
        }
        assert again["status"] == "sent"
        assert missing["status"] == "failed" and missing["attempts"] == []
        assert sorted(r.netgsm_numbers()) == [LOCAL_ONAY, IYS_ONAY, IYS_ONAY]
        assert r.fake.status_lookups == 3  # IYS_ONAY, IYS_RET, NOWHERE: once each


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_cached_answer_runs_out(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path, lookup_ttl=timedelta(minutes=10)) as r:
        in_iys(r, IYS_ONAY, "ONAY")
        await r.send(IYS_ONAY)
        r.clock.advance(9 * 60)
        await r.send(IYS_ONAY)
        assert r.fake.status_lookups == 1
        r.clock.advance(2 * 60)
        await r.send(IYS_ONAY)
        assert r.fake.status_lookups == 2


@pytest.mark.parametrize("backend", BACKENDS)
async def test_iys_out_of_reach_holds_the_message_until_it_answers(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r:
        in_iys(r, IYS_ONAY, "ONAY")
        r.fake.fail("/consents/status", 503)
        held = await r.send(IYS_ONAY)
        assert held["status"] == "queued" and r.netgsm.rows == []

        await r.later(31)
        record = await r.message(held["job_id"])

        assert record["status"] == "sent"
        assert r.netgsm_numbers() == [IYS_ONAY]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_informational_messages_are_never_looked_up(backend: str, tmp_path: Path) -> None:
    async with iys_rig(backend, tmp_path) as r:
        sent = await r.send(NOWHERE, category="informational")

        assert sent["status"] == "sent"
        assert r.fake.status_lookups == 0


@pytest.mark.parametrize("backend", BACKENDS)
async def test_without_a_connection_an_unknown_recipient_is_refused(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path, connect=False) as r:
        await r.messenger.consents.set_policy(r.workspace_id, "iys")
        await r.record(LOCAL_ONAY)
        sent = await r.send(LOCAL_ONAY)
        refused = await r.send(NOWHERE)

        assert sent["status"] == "sent"
        assert refused["error"]["code"] == "IYS_CONSENT_MISSING"
        assert r.fake.requests == []


@pytest.mark.parametrize("backend", BACKENDS)
async def test_test_keys_ask_the_simulated_iys_and_its_magic_recipients(
    backend: str, tmp_path: Path
) -> None:
    async with iys_rig(backend, tmp_path) as r:
        results = await r.send_bulk(MAGIC_ONAY, MAGIC_RET, MAGIC_NONE, live=False)

        statuses = {x["to"]: (x["status"], (x.get("error") or {}).get("code")) for x in results}
        assert statuses == {
            MAGIC_ONAY: ("sent", None),
            MAGIC_RET: ("failed", "IYS_CONSENT_MISSING"),
            MAGIC_NONE: ("failed", "IYS_CONSENT_MISSING"),
        }
        assert r.fake.status_lookups == 0 and r.netgsm.rows == []
