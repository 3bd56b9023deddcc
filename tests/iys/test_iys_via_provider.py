"""İYS through a provider (D33): a workspace with no İYS API user connects ``via_provider``
its İletimerkezi or Verimor connection, and the worker registers its consents through that
provider's consent API, once each, retried on 429 and 5xx, after a crash too (İletimerkezi:
its lookup says whether the lost attempt went in). On SQLite and PostgreSQL, against
loopback fakes that speak each provider's documented wire format (``fakes.provider_consents``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from _iys_support import NOW
from _sql_apps import BACKENDS, sql_store
from fakes._server import serve
from fakes.provider_consents import IletimerkeziConsentsFake, VerimorConsentsFake

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging._errors import MessagingError
from unified_messaging.iys import IysSettings
from unified_messaging.store.base import Store


class Crash(BaseException):
    """A process dying: no handler catches it."""


class DiesAfter:
    """The store, dying right after the armed method's call (which is done)."""

    def __init__(self, inner: Store) -> None:
        self._inner = inner
        self.armed = ""

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name != self.armed:
            return attr

        async def call(*args: object, **kwargs: object) -> object:
            await attr(*args, **kwargs)
            self.armed = ""
            raise Crash(name)

        return call


@dataclass
class Rig:
    messenger: Messenger
    clock: ManualClock
    store: DiesAfter
    workspace_id: str
    connection_id: str

    async def record(self, recipient: str, status: str = "ONAY", **fields: Any) -> str:
        principal = await self.messenger.principal(self.workspace_id, livemode=True)
        body = {"recipient": recipient, "status": status, "source": "HS_WEB", **fields}
        return (await self.messenger.consents.create(principal, body)).id

    async def state(self, consent_id: str) -> dict[str, Any]:
        principal = await self.messenger.principal(self.workspace_id, livemode=True)
        return (await self.messenger.consents.get(principal, consent_id)).to_dict()

    async def work(self) -> int:
        return await self.messenger.worker().run_until_idle()

    async def later(self, seconds: float) -> int:
        self.clock.advance(timedelta(seconds=seconds))
        return await self.work()


@contextlib.asynccontextmanager
async def rig(
    backend: str, directory: Path, provider: str, fake: Any, *, connect: bool = True
) -> AsyncIterator[Rig]:
    credentials = (
        {"api_key": fake.key, "api_hash": fake.hash}
        if provider == "sms_b"
        else {"username": fake.username, "password": fake.password}
    )
    clock = ManualClock(NOW)
    async with (
        sql_store(backend, directory) as inner,
        serve(fake.app()) as url,
        httpx.AsyncClient(timeout=5) as client,
    ):
        store = DiesAfter(inner)
        messenger = Messenger(store, clock=clock, vault=Vault.generate(),  # type: ignore[arg-type]
                              iys=IysSettings(client=client))  # fmt: skip
        async with messenger:
            workspace = await messenger.workspaces.create("via", recipient_limit=None)
            connection = await messenger.connections.add(
                workspace.id, provider, base_url=url, default_sender="ACME",
                credentials=credentials,
            )  # fmt: skip
            if connect:
                await messenger.iys.connect(
                    workspace.id, {"brand_code": 710272, "via_provider": connection.id}
                )
            yield Rig(messenger, clock, store, workspace.id, connection.id)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_iletimerkezi_registers_each_change_once_in_its_wire_format(
    backend: str, tmp_path: Path
) -> None:
    fake = IletimerkeziConsentsFake()
    async with rig(backend, tmp_path, "sms_b", fake) as r:
        shown = await r.messenger.iys.get(r.workspace_id)
        consent_id = await r.record("05321000001")
        await r.work()
        await r.work()  # nothing more to do: nothing goes twice
        registered = await r.state(consent_id)
        principal = await r.messenger.principal(r.workspace_id, livemode=True)
        r.clock.advance(timedelta(minutes=5))
        await r.messenger.consents.create(
            principal, {"recipient": "+905321000001", "status": "RET", "source": "HS_MESAJ"}
        )
        await r.work()
        after_ret = await r.state(consent_id)

    assert shown.via_provider == r.connection_id and shown.iys_code == 0
    assert registered["iys_state"] == "registered"
    assert after_ret["status"] == "RET" and after_ret["iys_state"] == "registered"
    create = fake.creates()[0]
    assert create["request"]["authentication"] == {"key": "im-key", "hash": "im-hash"}
    assert create["request"]["consent"]["brandCode"] == 710272
    assert fake.consents_sent() == [
        {"recipient": "+905321000001", "recipientType": "BIREYSEL", "type": "MESAJ",
         "status": "ONAY", "source": "HS_WEB", "consentDate": "2026-12-02 10:00:00"},
        {"recipient": "+905321000001", "recipientType": "BIREYSEL", "type": "MESAJ",
         "status": "RET", "source": "HS_MESAJ", "consentDate": "2026-12-02 10:05:00"},
    ]  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
async def test_iletimerkezi_refusal_is_kept_with_the_h_code_it_passes_on(
    backend: str, tmp_path: Path
) -> None:
    fake = IletimerkeziConsentsFake()
    async with rig(backend, tmp_path, "sms_b", fake) as r:
        consent_id = await r.record("user@example.com", type="EPOSTA")
        fake.records.clear()
        await r.work()
        state = await r.state(consent_id)

    # The fake takes Turkish mobile numbers only (H114), as a refusal to read back.
    assert state["iys_state"] == "refused"
    assert state["iys_error"]["code"] == "H114"
    assert "İletimerkezi refused the consent (422)" in state["iys_error"]["message"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_repeated_onay_that_iletimerkezi_holds_already_counts_as_registered(
    backend: str, tmp_path: Path
) -> None:
    fake = IletimerkeziConsentsFake()
    fake.records[("+905321000001", "BIREYSEL", "MESAJ")] = {
        "status": "ONAY", "source": "HS_WEB", "consentDate": "2026-11-01 09:00:00"
    }  # fmt: skip
    async with rig(backend, tmp_path, "sms_b", fake) as r:
        consent_id = await r.record("+905321000001")
        await r.work()
        state = await r.state(consent_id)

    assert state["iys_state"] == "registered"
    assert [path for path, _ in fake.received] == [
        "/v1/consent/create/json", "/v1/consent/show/json"
    ]  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
async def test_unavailable_and_throttled_answers_are_retried_with_backoff(
    backend: str, tmp_path: Path
) -> None:
    fake = IletimerkeziConsentsFake(fail_next=[503, 429])
    async with rig(backend, tmp_path, "sms_b", fake) as r:
        consent_id = await r.record("+905321000001")
        await r.work()
        first = await r.state(consent_id)
        await r.later(60)
        second = await r.state(consent_id)
        await r.later(600)
        third = await r.state(consent_id)

    assert first["iys_state"] == "pending" and second["iys_state"] == "pending"
    assert third["iys_state"] == "registered"
    # The 503 may have reached İYS: the next attempts ask first (a show; the 429 answers
    # one of them), and send once the lookup says İletimerkezi does not hold it.
    paths = [path.rsplit("/", 2)[1] for path, _ in fake.received]
    assert paths == ["create", "show", "show", "create"]
    assert len(fake.records) == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_death_after_iletimerkezi_took_it_registers_it_once(
    backend: str, tmp_path: Path
) -> None:
    fake = IletimerkeziConsentsFake()
    async with rig(backend, tmp_path, "sms_b", fake) as r:
        consent_id = await r.record("+905321000001")
        r.store.armed = "begin_iys_attempts"
        with pytest.raises(Crash):
            await r.messenger.worker(batch=1).run_once()
        assert fake.creates() == []  # died after counting, before calling
        await r.later(180)  # the item's lease runs out; another worker takes it
        state = await r.state(consent_id)

    assert state["iys_state"] == "registered"
    assert len(fake.consents_sent()) == 1


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_death_before_the_answer_was_stored_asks_iletimerkezi_and_sends_nothing(
    backend: str, tmp_path: Path
) -> None:
    fake = IletimerkeziConsentsFake()
    async with rig(backend, tmp_path, "sms_b", fake) as r:
        consent_id = await r.record("+905321000001")
        # The call went out and İletimerkezi took it; the process dies before the answer
        # is stored (the registration's settle never happens).
        original = r.store._inner.settle_iys_registration  # type: ignore[attr-defined]

        async def dies(*args: object, **kwargs: object) -> bool:
            raise Crash("settle")

        r.store._inner.settle_iys_registration = dies  # type: ignore[attr-defined]
        with pytest.raises(Crash):
            await r.messenger.worker(batch=1).run_once()
        r.store._inner.settle_iys_registration = original  # type: ignore[attr-defined]
        await r.later(180)
        state = await r.state(consent_id)

    assert state["iys_state"] == "registered"
    assert len(fake.consents_sent()) == 1  # asked (show), found it, sent nothing again
    assert [path.rsplit("/", 2)[1] for path, _ in fake.received] == ["create", "show"]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_verimor_registers_in_its_wire_format_with_the_header(
    backend: str, tmp_path: Path
) -> None:
    fake = VerimorConsentsFake()
    async with rig(backend, tmp_path, "sms_c", fake) as r:
        consent_id = await r.record("+905321000001")
        tacir = await r.record("+905321000002", recipient_type="TACIR", source=None)
        await r.work()
        await r.work()
        states = [await r.state(c) for c in (consent_id, tacir)]

    assert [s["iys_state"] for s in states] == ["registered", "registered"]
    body = fake.creates()[0]
    assert (body["username"], body["password"], body["source_addr"]) == (
        "908501234567", "verimor-pass", "ACME"
    )  # fmt: skip
    assert fake.consents_sent() == [
        {"type": "MESAJ", "status": "ONAY", "recipient_type": "BIREYSEL",
         "recipient": "905321000001", "source": "HS_WEB",
         "consent_date": "2026-12-02 10:00:00"},
        {"type": "MESAJ", "status": "ONAY", "recipient_type": "TACIR",
         "recipient": "905321000002"},
    ]  # fmt: skip


@pytest.mark.parametrize("backend", BACKENDS)
async def test_verimor_refusals_and_wrong_credentials(backend: str, tmp_path: Path) -> None:
    fake = VerimorConsentsFake()
    async with rig(backend, tmp_path, "sms_c", fake) as r:
        refused = await r.record("someone@example.com", type="EPOSTA")
        fake.password = "changed-in-oim"
        waiting = await r.record("+905321000003")
        await r.work()
        states = [await r.state(c) for c in (refused, waiting)]

    # The fake takes the e-mail (Verimor checks numbers only) but not the old password.
    assert states[0]["iys_state"] == "pending" and states[1]["iys_state"] == "pending"
    assert [path for path, _ in fake.received] == ["/v2/iys_consents.json"] * 2


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_bad_number_verimor_refuses_is_kept_refused(backend: str, tmp_path: Path) -> None:
    fake = VerimorConsentsFake()
    async with rig(backend, tmp_path, "sms_c", fake) as r:
        fake.refused_numbers.add("905321000004")  # Verimor answers 400 for it
        consent_id = await r.record("+905321000004")
        await r.work()
        await r.record("+905321000005")
        fake.fail_next.append(503)  # answered 503: it stays pending
        await r.work()
        state = await r.state(consent_id)
        overview = (await r.messenger.iys.state(r.workspace_id)).to_dict()

    assert overview["pending"] == 1
    assert overview["connection"]["via_provider"] == r.connection_id
    assert [(x["consent_id"], x["code"]) for x in overview["refused"]] == [
        (consent_id, "IYS_REFUSED")
    ]
    assert "password" not in str(overview) and fake.password not in str(overview)
    assert state["iys_state"] == "refused"
    assert (
        "Verimor refused the consent (400): Invalid phone number" in (state["iys_error"]["message"])
    )


@pytest.mark.parametrize("backend", BACKENDS)
async def test_connect_via_provider_refuses_what_it_cannot_use(
    backend: str, tmp_path: Path
) -> None:
    fake = IletimerkeziConsentsFake()
    async with rig(backend, tmp_path, "sms_b", fake, connect=False) as r:
        m, ws = r.messenger, r.workspace_id
        other = await m.workspaces.create("other", recipient_limit=None)
        netgsm = await m.connections.add(ws, "sms_a", credentials={"usercode": "u",
                                                                   "password": "p"})  # fmt: skip
        problems = {}
        for name, body, workspace in [
            ("netgsm", {"brand_code": 1, "via_provider": netgsm.id}, ws),
            ("unknown", {"brand_code": 1, "via_provider": "conn_nope"}, ws),
            ("elsewhere", {"brand_code": 1, "via_provider": r.connection_id}, other.id),
            ("with_user", {"brand_code": 1, "via_provider": r.connection_id,
                           "username": "u", "password": "p"}, ws),
            ("neither", {"brand_code": 1}, ws),
        ]:  # fmt: skip
            with pytest.raises(MessagingError) as caught:
                await m.iys.connect(workspace, body)
            problems[name] = (caught.value.http_status, caught.value.code)
        with pytest.raises(MessagingError):
            await m.iys.get(ws)

    assert problems["netgsm"] == (422, "IYS_PROVIDER_UNSUPPORTED")
    assert problems["unknown"][0] == 404 and problems["elsewhere"][0] == 404
    assert problems["with_user"] == problems["neither"] == (400, "VALIDATION_ERROR")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_gate_asks_iletimerkezi_about_an_unknown_recipient(
    backend: str, tmp_path: Path
) -> None:
    fake = IletimerkeziConsentsFake()
    fake.records[("+905321000009", "BIREYSEL", "MESAJ")] = {
        "status": "ONAY", "source": "HS_WEB", "consentDate": "2026-11-01 09:00:00"
    }  # fmt: skip
    async with rig(backend, tmp_path, "sms_b", fake) as r:
        workspace = await r.messenger.workspaces.get(r.workspace_id)
        keys = [("+905321000009", "BIREYSEL"), ("+905321000008", "BIREYSEL")]
        answers = await r.messenger.iys.lookups.statuses(r.workspace_id, True, keys)  # type: ignore[arg-type]

    assert workspace.consent_policy == "iys"
    assert answers == {keys[0]: "ONAY", keys[1]: None}
    assert [path for path, _ in fake.received] == ["/v1/consent/show/json"] * 2


@pytest.mark.parametrize("backend", BACKENDS)
async def test_many_changes_go_to_iletimerkezi_in_one_list(backend: str, tmp_path: Path) -> None:
    fake = IletimerkeziConsentsFake()
    async with rig(backend, tmp_path, "sms_b", fake) as r:
        ids = [await r.record(f"+9053210000{n:02d}") for n in range(12)]
        await r.work()
        states = {(await r.state(c))["iys_state"] for c in ids}

    assert states == {"registered"}
    assert [len(body["request"]["consent"]["list"]) for body in fake.creates()] == [12]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_list_refused_for_one_consent_goes_one_by_one(backend: str, tmp_path: Path) -> None:
    fake = IletimerkeziConsentsFake()
    async with rig(backend, tmp_path, "sms_b", fake) as r:
        ids = [await r.record(f"+9053210000{n:02d}") for n in range(11)]
        bad = await r.record("someone@example.com", type="EPOSTA")  # the fake refuses it
        await r.work()
        states = [(await r.state(c))["iys_state"] for c in ids]
        refused = await r.state(bad)

    assert states == ["registered"] * 11 and refused["iys_state"] == "refused"
    # The list of 12, refused whole; then each on its own.
    assert [len(b["request"]["consent"]["list"]) for b in fake.creates()] == [12] + [1] * 12
    assert len(fake.records) == 11


@pytest.mark.parametrize("backend", BACKENDS)
async def test_many_changes_go_to_verimor_one_call_each(backend: str, tmp_path: Path) -> None:
    """Verimor's consent API takes one consent per call and no bulk request: a batch big
    enough for İYS's bulk goes one by one, each registered once."""
    fake = VerimorConsentsFake()
    async with rig(backend, tmp_path, "sms_c", fake) as r:
        ids = [await r.record(f"+9053210000{n:02d}") for n in range(12)]
        await r.work()
        await r.work()
        states = {(await r.state(c))["iys_state"] for c in ids}

    assert states == {"registered"}
    assert sorted(c["recipient"] for c in fake.consents_sent()) == [
        f"9053210000{n:02d}" for n in range(12)
    ]
    assert len(fake.creates()) == 12
