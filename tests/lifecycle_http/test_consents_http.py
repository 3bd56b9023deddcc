"""İYS consents as a resource (D33) over a real socket, on SQLite and
PostgreSQL: ``POST /v1/consents`` records one after İYS's rules, ``GET /v1/consents`` pages
them, ``GET /v1/consents/{id}`` shows a consent with its history; test and live keys keep
apart (D2). The clock is a ManualClock on a Wednesday, so "3 business days back" is fixed."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from _sql_apps import BACKENDS, sql_store
from _support import bearer, error_code, serving

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging.asgi import create_app
from unified_messaging.consents.rules import GMT3

#: Wednesday 2 December 2026, 10:00 in Türkiye: 3 business days back is Friday 27 November.
NOW = datetime(2026, 12, 2, 10, 0, tzinfo=GMT3)
TO = "+905321234567"


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    client: httpx.AsyncClient
    live: str
    test: str

    async def add(self, body: dict[str, Any], key: str | None = None) -> httpx.Response:
        return await self.client.post("/v1/consents", json=body, headers=bearer(key or self.live))

    async def listed(self, key: str | None = None, **query: Any) -> dict[str, Any]:
        answer = await self.client.get(
            "/v1/consents", params=query, headers=bearer(key or self.live)
        )
        assert answer.status_code == 200, answer.text
        document: dict[str, Any] = answer.json()
        return document

    async def show(self, consent_id: str, key: str | None = None) -> httpx.Response:
        return await self.client.get(f"/v1/consents/{consent_id}", headers=bearer(key or self.live))


@contextlib.asynccontextmanager
async def rig(backend: str, directory: Path) -> AsyncIterator[Rig]:
    clock = ManualClock(NOW)
    async with sql_store(backend, directory) as store:
        messenger = Messenger(store, clock=clock, vault=Vault.generate())
        async with (
            messenger,
            serving(create_app(messenger, worker=False), lifespan=False) as url,
            httpx.AsyncClient(base_url=url, timeout=10) as client,
        ):
            workspace = await messenger.workspaces.create("consents")
            live = await messenger.keys.create(workspace.id, livemode=True)
            test = await messenger.keys.create(workspace.id, livemode=False)
            yield Rig(messenger, clock, client, live.secret, test.secret)


def onay(**fields: Any) -> dict[str, Any]:
    return {"recipient": "0532 123 45 67", "status": "ONAY", "source": "HS_WEB", **fields}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_consent_is_recorded_pending_with_its_date_in_gmt3(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        answer = await r.add(onay(consent_date="2026-12-01T09:30:00+00:00"))

        assert answer.status_code == 201, answer.text
        consent = answer.json()
        assert consent["id"].startswith("cns_")
        assert (consent["recipient"], consent["type"], consent["recipient_type"]) == (
            TO, "MESAJ", "BIREYSEL"
        )  # fmt: skip
        assert (consent["status"], consent["source"], consent["iys_state"]) == (
            "ONAY", "HS_WEB", "pending"
        )  # fmt: skip
        assert consent["consent_date_iys"] == "2026-12-01 12:30:00"
        assert consent["livemode"] is True
        assert (consent["consent_date"], consent["created_at"]) == (
            "2026-12-01T09:30:00Z", "2026-12-02T07:00:00Z"
        )  # fmt: skip
        shown = (await r.show(consent["id"])).json()
        assert {k: shown[k] for k in consent} == consent  # read back as answered


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_second_create_is_a_change_kept_in_the_history(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        first = (await r.add(onay())).json()
        r.clock.advance(60)
        again = await r.add(onay(status="ONAY", recipient=TO))
        changed = await r.add(onay(status="RET", source="HS_MESAJ", recipient="05321234567"))

        assert (again.status_code, error_code(again)) == (422, "CONSENT_UNCHANGED")
        assert changed.status_code == 201, changed.text
        assert changed.json()["id"] == first["id"]  # one record per address and type
        shown = await r.show(first["id"])
        assert shown.status_code == 200, shown.text
        detail = shown.json()
        assert detail["status"] == "RET"
        history = [(c["status"], c["source"]) for c in detail["history"]]
        assert history == [("ONAY", "HS_WEB"), ("RET", "HS_MESAJ")]
        recorded = [datetime.fromisoformat(c["recorded_at"]) for c in detail["history"]]
        assert recorded == [NOW, NOW + timedelta(seconds=60)]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_bireysel_and_tacir_are_two_records_of_one_address(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        individual = await r.add(onay())
        merchant = await r.add({"recipient": TO, "status": "ONAY", "recipient_type": "TACIR"})

        assert (individual.status_code, merchant.status_code) == (201, 201), merchant.text
        assert individual.json()["id"] != merchant.json()["id"]
        tacir = merchant.json()
        assert (tacir["source"], tacir["consent_date"], tacir["consent_date_iys"]) == (
            None, None, None
        )  # fmt: skip
        assert len((await r.listed(recipient="05321234567"))["data"]) == 2


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"status": "RET"}, "CONSENT_FIRST_RET"),
        ({"consent_date": "2015-04-30T23:59:59+03:00"}, "CONSENT_DATE_TOO_EARLY"),
        ({"consent_date": "2026-12-02T10:00:01+03:00"}, "CONSENT_DATE_IN_FUTURE"),
        ({"consent_date": "2026-11-27T09:59:59+03:00"}, "CONSENT_DATE_TOO_OLD"),
        ({"source": "HS_2015", "consent_date": "2016-01-01 00:00:00"}, "CONSENT_HS_2015_DATE"),
        ({"source": None}, "CONSENT_SOURCE_REQUIRED"),  # only TACIR may leave it out
        ({"recipient": "not a number"}, "INVALID_RECIPIENT"),
        ({"type": "EPOSTA", "recipient": "ayse@"}, "INVALID_RECIPIENT"),
    ],
    ids=[
        "first-ret",
        "before-2015",
        "future",
        "over-3-business-days",
        "hs2015",
        "no-source",
        "number",
        "email",
    ],
)
async def test_iys_rules_refuse_with_422_and_store_nothing(
    backend: str, tmp_path: Path, body: dict[str, Any], code: str
) -> None:
    async with rig(backend, tmp_path) as r:
        answer = await r.add(onay(**body))

        assert (answer.status_code, error_code(answer)) == (422, code), answer.text
        assert (await r.listed())["data"] == []


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"type": "FAKS"}, "type"),
        ({"source": "HS_BROSUR"}, "source"),
        ({"status": "EVET"}, "status"),
        ({"recipient_type": "KURUMSAL"}, "recipient_type"),
        ({"consent_date": "dün"}, "consent_date"),
    ],
)
async def test_unknown_values_are_400_naming_the_field(
    backend: str, tmp_path: Path, body: dict[str, Any], field: str
) -> None:
    async with rig(backend, tmp_path) as r:
        answer = await r.add(onay(**body))

        assert (answer.status_code, error_code(answer)) == (400, "VALIDATION_ERROR"), answer.text
        assert [d["field"] for d in answer.json()["error"]["details"]] == [field]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_oldest_dates_accepted_are_hs_2015s_and_three_business_days_back(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        old = await r.add(onay(source="HS_2015", consent_date="2015-05-01 00:00:00"))
        edge = await r.add(
            onay(recipient="+905321234568", consent_date="2026-11-27T10:00:00+03:00")
        )

        assert (old.status_code, edge.status_code) == (201, 201), (old.text, edge.text)
        assert old.json()["consent_date_iys"] == "2015-05-01 00:00:00"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_an_email_consent_keeps_the_address_with_its_domain_lower_cased(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        answer = await r.add(onay(type="EPOSTA", recipient="Ayse.Yilmaz@Example.COM"))

        assert answer.status_code == 201, answer.text
        assert answer.json()["recipient"] == "Ayse.Yilmaz@example.com"
        found = await r.listed(recipient="Ayse.Yilmaz@EXAMPLE.com")
        assert [c["id"] for c in found["data"]] == [answer.json()["id"]]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_list_pages_newest_first_and_filters_by_status(
    backend: str, tmp_path: Path
) -> None:
    async with rig(backend, tmp_path) as r:
        ids = []
        for n in range(5):
            ids.append((await r.add(onay(recipient=f"+90532123450{n}"))).json()["id"])
            r.clock.advance(1)
        r.clock.advance(60)
        await r.add(onay(recipient="+905321234500", status="RET"))

        first = await r.listed(limit=2)
        second = await r.listed(limit=2, starting_after=first["data"][-1]["id"])
        third = await r.listed(limit=2, starting_after=second["data"][-1]["id"])
        refused = await r.listed(status="RET")

        pages = [first, second, third]
        assert [c["id"] for p in pages for c in p["data"]] == ids[::-1]
        assert [p["has_more"] for p in pages] == [True, True, False]
        assert [c["id"] for c in refused["data"]] == [ids[0]]
        missing = await r.client.get(
            "/v1/consents", params={"starting_after": "cns_nope"}, headers=bearer(r.live)
        )
        assert missing.status_code == 404


@pytest.mark.parametrize("backend", BACKENDS)
async def test_test_and_live_keys_keep_their_own_consents(backend: str, tmp_path: Path) -> None:
    async with rig(backend, tmp_path) as r:
        live = (await r.add(onay())).json()
        test = await r.add(onay(), key=r.test)

        assert test.status_code == 201, test.text  # a first ONAY in the test world
        assert test.json()["livemode"] is False and test.json()["id"] != live["id"]
        assert (await r.show(live["id"], key=r.test)).status_code == 404
        assert [c["id"] for c in (await r.listed(key=r.test))["data"]] == [test.json()["id"]]
        unknown = await r.show("cns_00000000000000000000000000")
        assert (unknown.status_code, error_code(unknown)) == (404, "CONSENT_NOT_FOUND")
