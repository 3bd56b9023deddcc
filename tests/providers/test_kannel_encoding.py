"""D24 through the connection that really sent it: ``encoding`` and ``segments`` describe the
wire, never an encoding the provider cannot send.

Kannel's ``sendsms`` has no Turkish single-shift table, so Turkish text goes there as UCS-2
(``coding=2``): a 141-character text is 3 UCS-2 segments through ``sms_e`` although the same
text is 1 ``gsm7_turkish`` segment through Verimor. The send answer, the stored record (SQLite)
and the fake gateway agree, also when a fallback hop (at submit, or later in the worker)
carries the message. The property test drives every SMS adapter over its fake and reads the
encoding back off the wire, independently of the library's own counting.
"""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from fakes._server import serve
from fakes.iletimerkezi import IletimerkeziFake
from fakes.jasmin import PASSWORD as JASMIN_PASSWORD
from fakes.jasmin import USERNAME as JASMIN_USER
from fakes.jasmin import JasminFake
from fakes.kannel import PASSWORD, USERNAME, KannelFake
from fakes.mutlucell import FakeMutlucell
from fakes.netgsm import NetgsmFake
from fakes.verimor import FakeVerimor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_messaging import ManualClock, Messenger, Vault
from unified_messaging._domain import Connection
from unified_messaging._encoding import gsm7_units
from unified_messaging._routing.dispatch import Hop, Job
from unified_messaging._types import Encoding, ProviderCode
from unified_messaging.asgi import create_app
from unified_messaging.providers.base import PROFILES, InboundCallback, ProviderAdapter
from unified_messaging.providers.iletimerkezi import IletimerkeziAdapter
from unified_messaging.providers.jasmin import JasminAdapter
from unified_messaging.providers.kannel import KannelAdapter
from unified_messaging.providers.mutlucell import MutlucellAdapter
from unified_messaging.providers.netgsm import NetgsmAdapter
from unified_messaging.providers.verimor import VerimorAdapter
from unified_messaging.store.sql import SqlStore

#: 141 characters with ş ğ ı İ: 153 septets with the Turkish shift (1 SMS), 141 UTF-16 units
#: as UCS-2 (3 parts of at most 67).
TURKISH = (
    "Sayın müşterimiz, siparişiniz yola çıktı; kargonuz bugün dağıtımda. Teslimatta imza "
    "gerekir, lütfen kimliğinizi hazır bulundurun. İyi günler!"
)
TO = "+905321234567"
SENDER = "UMTEST"
CAPACITY: dict[Encoding, tuple[int, int]] = {
    "gsm7": (160, 153),
    "gsm7_turkish": (155, 149),
    "ucs2": (70, 67),
}


def wire_segments(text: str, encoding: Encoding) -> int:
    """Parts ``text`` takes in ``encoding``, packed character by character (written apart from
    the library's arithmetic); fails the test if the encoding cannot carry the text at all."""

    def cost(char: str) -> int:
        if encoding == "ucs2":
            return len(char.encode("utf-16-le")) // 2
        units = gsm7_units(char, turkish_shift=encoding == "gsm7_turkish")
        assert units is not None, f"{char!r} cannot go as {encoding}"
        return units

    costs = [cost(c) for c in text]
    single, per_part = CAPACITY[encoding]
    if sum(costs) <= single:
        return 1 if text else 0
    parts, used = 1, 0
    for unit in costs:
        if used + unit > per_part:
            parts, used = parts + 1, 0
        used += unit
    return parts


# --------------------------------------------------------------------------- through the REST app


@dataclass
class World:
    messenger: Messenger
    http: httpx.AsyncClient
    kannel: KannelFake
    verimor: FakeVerimor
    key: str
    workspace_id: str

    async def send(self, **body: Any) -> dict[str, Any]:
        response = await self.http.post(
            "/v1/messages",
            json={"to": TO, "body": TURKISH, **body},
            headers={"Authorization": f"Bearer {self.key}"},
        )
        assert response.status_code == 201, response.text
        answer: dict[str, Any] = response.json()
        return answer

    async def get(self, job_id: str) -> dict[str, Any]:
        response = await self.http.get(
            f"/v1/messages/{job_id}", headers={"Authorization": f"Bearer {self.key}"}
        )
        assert response.status_code == 200, response.text
        record: dict[str, Any] = response.json()
        return record

    async def connection(self, provider: ProviderCode) -> Connection:
        connections = await self.messenger.connections.list(self.workspace_id)
        return next(c for c in connections if c.provider == provider)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    kannel, verimor = KannelFake(), FakeVerimor()
    messenger = Messenger(
        SqlStore(f"sqlite+aiosqlite:///{tmp_path / 'um.db'}"),
        clock=ManualClock(),
        vault=Vault.generate(),
    )
    async with messenger, serve(kannel.app) as kannel_url, serve(verimor.app) as verimor_url:
        workspace = await messenger.workspaces.create("encoding")
        await messenger.connections.add(
            workspace.id, "sms_e", base_url=kannel_url, default_sender=SENDER,
            # A sendsms-user with max-messages = 3: TURKISH is 3 UCS-2 parts through Kannel.
            credentials={"username": USERNAME, "password": PASSWORD, "max_parts": "3"},
            make_default=True,
        )  # fmt: skip
        await messenger.connections.add(
            workspace.id, "sms_c", base_url=verimor_url, default_sender=SENDER,
            credentials={"username": verimor.username, "password": verimor.password},
        )  # fmt: skip
        key = (await messenger.keys.create(workspace.id, livemode=True)).secret
        app = create_app(messenger, worker=False, mcp=False)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://um.test") as http:
            yield World(messenger, http, kannel, verimor, key, workspace.id)


def kannel_sends(fake: KannelFake) -> list[dict[str, str]]:
    return [r.params for r in fake.received if r.path == "/cgi-bin/sendsms"]


async def test_turkish_text_through_kannel_is_recorded_as_the_ucs2_it_was_sent(
    world: World,
) -> None:
    answer = await world.send(provider="sms_e")

    [wire] = kannel_sends(world.kannel)
    assert wire["text"] == TURKISH
    assert wire["coding"] == "2"  # UCS-2: Kannel has no Turkish shift table
    assert wire_segments(wire["text"], "ucs2") == 3
    assert (answer["provider"], answer["encoding"], answer["segments"]) == ("sms_e", "ucs2", 3)
    record = await world.get(answer["job_id"])  # read back from the SQLite file
    assert (record["encoding"], record["segments"]) == ("ucs2", 3)


async def test_the_same_text_through_verimor_is_one_turkish_shift_segment(world: World) -> None:
    answer = await world.send(provider="sms_c")

    [send] = world.verimor.sends()
    assert send.json["datacoding"] == "1"  # Verimor's Turkish single shift
    assert wire_segments(send.json["messages"][0]["msg"], "gsm7_turkish") == 1
    assert (answer["encoding"], answer["segments"]) == ("gsm7_turkish", 1)
    assert (await world.get(answer["job_id"]))["encoding"] == "gsm7_turkish"


async def test_a_fallback_hop_at_submit_records_what_the_hop_that_sent_it_was_sent(
    world: World,
) -> None:
    world.verimor.fail_with("INSUFFICIENT_CREDITS")  # provider-level: fallback moves on

    answer = await world.send(provider="sms_c", fallback=["sms_e"])

    assert [a["provider"] for a in answer["attempts"]] == ["sms_c", "sms_e"]
    [wire] = kannel_sends(world.kannel)
    assert wire["coding"] == "2"
    assert (answer["provider"], answer["encoding"], answer["segments"]) == ("sms_e", "ucs2", 3)
    record = await world.get(answer["job_id"])
    assert (record["provider"], record["encoding"], record["segments"]) == ("sms_e", "ucs2", 3)


async def test_a_fallback_hop_in_the_worker_records_what_the_hop_that_sent_it_was_sent(
    world: World,
) -> None:
    answer = await world.send(provider="sms_c", fallback=["sms_e"])
    assert (answer["encoding"], answer["segments"]) == ("gsm7_turkish", 1)
    campaign = int(answer["attempts"][0]["provider_message_id"].split(":")[0])
    verimor = await world.connection("sms_c")
    # Verimor reports the message undelivered: the worker hands it to Kannel.
    body = world.verimor.report_push(campaign, {"905321234567": "NOT_DELIVERED"})
    callback = InboundCallback("POST", {"content-type": "application/json"}, {}, body)
    ingested = await world.messenger.reports.ingest(verimor.id, verimor.dlr_token, callback)
    assert ingested.changed == 1

    await world.messenger.worker().run_until_idle()

    [wire] = kannel_sends(world.kannel)
    assert (wire["text"], wire["coding"]) == (TURKISH, "2")
    record = await world.get(answer["job_id"])
    assert [a["provider"] for a in record["attempts"]] == ["sms_c", "sms_e"]
    assert (record["status"], record["provider"]) == ("sent", "sms_e")
    assert (record["encoding"], record["segments"]) == ("ucs2", 3)


def test_only_kannel_lacks_the_turkish_shift() -> None:
    shifting = {code for code, profile in PROFILES.items() if profile.turkish_shift}
    assert shifting == {"sms_a", "sms_b", "sms_c", "sms_d"}


# --------------------------------------------------------------------------- every adapter's wire


def _connection(provider: ProviderCode, *, turkish_shift: bool) -> Connection:
    return Connection(
        id=f"conn_{provider}",
        workspace_id="ws_1",
        provider=provider,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        credentials="v1.k.n.c",
        turkish_shift=turkish_shift,
        base_url="http://gateway.test",
        dlr_token="dlr-token",
    )


ALL: frozenset[Encoding] = frozenset(CAPACITY)


@dataclass
class Gateway:
    """One SMS adapter over its fake, and how to read what went on the wire."""

    app: Any
    build: Callable[[Connection, httpx.AsyncClient], ProviderAdapter]
    #: The text of the one send, and the encodings its wire allows (one where it names it).
    wire: Callable[[], tuple[str, frozenset[Encoding]]]


def _kannel() -> Gateway:
    fake = KannelFake()
    codings: dict[str, Encoding] = {"0": "gsm7", "2": "ucs2"}

    def wire() -> tuple[str, frozenset[Encoding]]:
        [params] = kannel_sends(fake)
        return params["text"], frozenset({codings[params["coding"]]})

    credentials = {"username": USERNAME, "password": PASSWORD}
    return Gateway(fake.app, lambda c, h: KannelAdapter(c, credentials, client=h), wire)


def _jasmin() -> Gateway:
    fake = JasminFake()
    # Room for the longest texts drawn (220 emoji are 7 UCS-2 parts; Jasmin's default is 5).
    fake.max_parts = 8
    codings: dict[int, Encoding] = {0: "gsm7", 8: "ucs2"}

    def wire() -> tuple[str, frozenset[Encoding]]:
        # What Jasmin decoded from the form: `content`, or `hex-content` read as UTF-16.
        [sent] = fake.sent
        return sent.text, frozenset({codings[sent.coding]})

    credentials = {
        "username": JASMIN_USER,
        "password": JASMIN_PASSWORD,
        "gateway": "jasmin",
        "max_parts": "8",
    }
    return Gateway(fake.app, lambda c, h: JasminAdapter(c, credentials, client=h), wire)


def _verimor() -> Gateway:
    fake = FakeVerimor()
    codings: dict[str, Encoding] = {"0": "gsm7", "1": "gsm7_turkish", "2": "ucs2"}

    def wire() -> tuple[str, frozenset[Encoding]]:
        [send] = fake.sends()
        return send.json["messages"][0]["msg"], frozenset({codings[send.json["datacoding"]]})

    credentials = {"username": fake.username, "password": fake.password}
    return Gateway(fake.app, lambda c, h: VerimorAdapter(c, credentials, client=h), wire)


def _mutlucell() -> Gateway:
    fake = FakeMutlucell()
    charsets: dict[str, Encoding] = {
        "default": "gsm7",
        "turkish": "gsm7_turkish",
        "unicode": "ucs2",
    }

    def wire() -> tuple[str, frozenset[Encoding]]:
        [send] = fake.sends()
        root: ET.Element = send.xml
        return root.findtext("mesaj/metin") or "", frozenset({charsets[root.attrib["charset"]]})

    credentials = {"username": fake.username, "password": fake.password}
    return Gateway(fake.app, lambda c, h: MutlucellAdapter(c, credentials, client=h), wire)


def _netgsm() -> Gateway:
    fake = NetgsmFake(headers=(SENDER,))

    def wire() -> tuple[str, frozenset[Encoding]]:
        [send] = fake.sends
        body = json.loads(send.body)
        # NetGSM's only knob is "TR" (not plain GSM: NetGSM picks the shift or UCS-2).
        turkish = body.get("encoding") == "TR"
        return body["messages"][0]["msg"], ALL - {"gsm7"} if turkish else frozenset({"gsm7"})

    credentials = {"usercode": fake.usercode, "password": fake.password}
    return Gateway(fake.app, lambda c, h: NetgsmAdapter(c, credentials, client=h), wire)


def _iletimerkezi() -> Gateway:
    fake = IletimerkeziFake(senders=(SENDER,))

    def wire() -> tuple[str, frozenset[Encoding]]:
        [order] = fake.orders
        message = json.loads(order.body)["request"]["order"]["message"]
        return message["text"], ALL  # no encoding field: İletimerkezi reads the text

    credentials = {"api_key": fake.key, "api_hash": fake.hash}
    return Gateway(fake.app, lambda c, h: IletimerkeziAdapter(c, credentials, client=h), wire)


#: Each SMS wire format, by provider code (and ``sms_e``'s gateway after a dash).
GATEWAYS: dict[str, Callable[[], Gateway]] = {
    "sms_a": _netgsm,
    "sms_b": _iletimerkezi,
    "sms_c": _verimor,
    "sms_d": _mutlucell,
    "sms_e": _kannel,
    "sms_e-jasmin": _jasmin,
}

# Plain GSM, its extension table, the Turkish shift letters, other Latin, Cyrillic, emoji.
_ALPHABET = list("abcXYZ019 .,!?@\n") + list("€[]{}^~|\\") + list("şğıİĞŞç") + ["é", "Ж", "😀"]
_TEXTS = st.text(alphabet=st.sampled_from(_ALPHABET), min_size=1, max_size=220)


async def _through(wire_format: str, text: str, turkish_shift: bool) -> None:
    gateway = GATEWAYS[wire_format]()
    provider = cast(ProviderCode, wire_format.split("-")[0])
    connection = _connection(provider, turkish_shift=turkish_shift)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gateway.app)) as http:
        adapter = gateway.build(connection, http)
        job = Job("msg_1", TO, text, "ws_1")
        request = job.request_for(Hop(connection, adapter, SENDER), 0)
        outcome = await adapter.submit(request)
    assert outcome.kind == "accepted", outcome
    # What the record stores (Messenger._new_record/_finish) is job.sms_encoding(connection).
    encoding, segments = job.sms_encoding(connection)
    sent, allowed = gateway.wire()
    assert sent == text
    assert request.encoding == encoding
    assert encoding in allowed
    assert segments == wire_segments(text, encoding)


@pytest.mark.parametrize("wire_format", sorted(GATEWAYS))
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=_TEXTS, turkish_shift=st.booleans())
def test_the_recorded_encoding_is_what_the_adapter_puts_on_the_wire(
    wire_format: str, text: str, turkish_shift: bool
) -> None:
    asyncio.run(_through(wire_format, text, turkish_shift))
