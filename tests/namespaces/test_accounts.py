"""``messenger.accounts``: each provider's balance and senders, read over real sockets from
fakes that speak the provider's documented wire format; the worker's refresh on an injected
clock; ``connection.balance_low`` once per crossing; and the sender check at accept time."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from fakes._server import serve
from fakes.iletimerkezi import IletimerkeziFake
from fakes.jasmin import JasminFake
from fakes.kannel import KannelFake
from fakes.mutlucell import FakeMutlucell
from fakes.netgsm import NetgsmFake
from fakes.verimor import FakeVerimor
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import ManualClock, Messenger, SenderNotApproved, Vault
from unified_messaging._errors import RequestInvalid
from unified_messaging.accounts._service import refresh_item
from unified_messaging.webhooks._sender import TargetPolicy

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
HOSTILE = '<img src=x onerror="alert(1)">'


class Bed:
    def __init__(self, messenger: Messenger, clock: ManualClock, stack: AsyncExitStack) -> None:
        self.messenger, self.clock, self.stack = messenger, clock, stack
        self.workspace_id = ""

    async def connect(self, provider: str, app: Any, credentials: dict[str, str], **extra: Any):  # type: ignore[no-untyped-def]
        url = await self.stack.enter_async_context(serve(app))
        return await self.messenger.connections.add(
            self.workspace_id, provider, base_url=url, credentials=credentials, **extra
        )


@pytest.fixture
async def bed() -> AsyncIterator[Bed]:
    clock = ManualClock(NOW)
    async with AsyncExitStack() as stack:
        messenger = Messenger(
            vault=Vault.generate(), clock=clock, webhook_policy=TargetPolicy(allow_private=True)
        )
        await stack.enter_async_context(messenger)
        bed = Bed(messenger, clock, stack)
        bed.workspace_id = (await messenger.workspaces.create("accounts")).id
        yield bed


# --- each provider's reading ----------------------------------------------------------------------


async def test_netgsm_reads_credit_in_lira_and_msgheaders(bed: Bed) -> None:
    fake = NetgsmFake(headers=("ACME", HOSTILE))
    connection = await bed.connect(
        "sms_a", fake.app, {"usercode": fake.usercode, "password": fake.password},
        default_sender="ACME",
    )  # fmt: skip
    account = await bed.messenger.accounts.refresh(connection.id)
    assert (account.state, account.balance, account.unit) == ("read", Decimal("57.860"), "TRY")
    assert account.senders == ("ACME", HOSTILE)
    assert account.read_at == NOW
    [balance_call] = [r for r in fake.received if r.path == "/balance"]
    assert balance_call.json == {
        "usercode": fake.usercode, "password": fake.password, "stip": 2,
    }  # fmt: skip


async def test_verimor_reads_plain_balance_and_header_list(bed: Bed) -> None:
    fake = FakeVerimor(credits=42)
    connection = await bed.connect(
        "sms_c", fake.app, {"username": fake.username, "password": fake.password},
        default_sender="UMTEST",
    )  # fmt: skip
    account = await bed.messenger.accounts.refresh(connection.id)
    assert (account.state, account.balance, account.unit) == ("read", Decimal("42.0"), "SMS")
    assert account.senders == ("UMTEST", "BASLIGIM")


async def test_iletimerkezi_reads_sms_balance_and_senders(bed: Bed) -> None:
    fake = IletimerkeziFake(senders=("ACME", "ACMEBILGI"))
    connection = await bed.connect(
        "sms_b", fake.app, {"api_key": fake.key, "api_hash": fake.hash}, default_sender="ACME"
    )
    account = await bed.messenger.accounts.refresh(connection.id)
    assert (account.balance, account.unit, account.senders) == (
        Decimal("18343"), "SMS", ("ACME", "ACMEBILGI"),
    )  # fmt: skip


async def test_iletimerkezi_lira_account_reads_amount(bed: Bed) -> None:
    fake = IletimerkeziFake()
    fake.balance = {"amount": "125,50", "sms": "0"}
    connection = await bed.connect(
        "sms_b", fake.app, {"api_key": fake.key, "api_hash": fake.hash}, default_sender="ACME"
    )
    account = await bed.messenger.accounts.refresh(connection.id)
    assert (account.balance, account.unit) == (Decimal("125.50"), "TRY")


async def test_mutlucell_reads_credit_and_originators(bed: Bed) -> None:
    fake = FakeMutlucell(credit=1986.0, originators=("UMTEST", "MUTLUCELL"))
    connection = await bed.connect(
        "sms_d", fake.app, {"username": fake.username, "password": fake.password},
        default_sender="UMTEST",
    )  # fmt: skip
    account = await bed.messenger.accounts.refresh(connection.id)
    assert (account.balance, account.unit) == (Decimal("1986.0"), "SMS")
    assert account.senders == ("UMTEST", "MUTLUCELL")
    assert [r.path for r in fake.received] == ["/smsgw-ws/gtcrdtex", "/smsgw-ws/gtorgex"]


async def test_jasmin_reads_balance_and_keeps_no_sender_list(bed: Bed) -> None:
    fake = JasminFake()
    fake.balance = 250.0
    connection = await bed.connect(
        "sms_e", fake.app,
        {"username": fake.username, "password": fake.password, "gateway": "jasmin",
         "dlr_url": "https://example.com/dlr"},
        default_sender="UMTEST",
    )  # fmt: skip
    account = await bed.messenger.accounts.refresh(connection.id)
    assert (account.state, account.balance, account.unit) == ("read", Decimal("250.0"), "credit")
    assert account.senders is None


async def test_kannel_says_it_offers_no_account_reading(bed: Bed) -> None:
    fake = KannelFake()
    connection = await bed.connect(
        "sms_e", fake.app,
        {"username": fake.username, "password": fake.password,
         "dlr_url": "https://example.com/dlr"},
        default_sender="UMTEST",
    )  # fmt: skip
    account = await bed.messenger.accounts.refresh(connection.id)
    assert account.state == "not_offered"
    assert fake.received == []


async def test_refused_credentials_keep_the_last_good_reading(bed: Bed) -> None:
    fake = FakeVerimor(credits=500)
    connection = await bed.connect(
        "sms_c", fake.app, {"username": fake.username, "password": fake.password},
        default_sender="UMTEST",
    )  # fmt: skip
    await bed.messenger.accounts.refresh(connection.id)
    fake.password = "changed-in-oim"
    bed.clock.advance(timedelta(minutes=15))
    account = await bed.messenger.accounts.refresh(connection.id)
    assert account.state == "failed"
    assert account.error is not None and "refused the credentials" in account.error
    assert (account.balance, account.read_at) == (Decimal("500.0"), NOW)
    assert account.tried_at == NOW + timedelta(minutes=15)


async def test_balances_and_credentials_never_reach_info_logs(
    bed: Bed, caplog: pytest.LogCaptureFixture
) -> None:
    fake = NetgsmFake()
    fake.credit = "31337,42"
    connection = await bed.connect(
        "sms_a", fake.app, {"usercode": fake.usercode, "password": fake.password},
        default_sender="ACME",
    )  # fmt: skip
    with caplog.at_level(logging.DEBUG, logger="unified_messaging"):
        await bed.messenger.accounts.refresh(connection.id)
        fake.password = "other"
        await bed.messenger.accounts.refresh(connection.id)
    text = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    assert "31337" not in text and fake.usercode not in text and "s3cret" not in text


# --- the worker ---------------------------------------------------------------------------------


async def test_worker_reads_every_interval_on_the_injected_clock(bed: Bed) -> None:
    fake = FakeVerimor(credits=100)
    connection = await bed.connect(
        "sms_c", fake.app, {"username": fake.username, "password": fake.password},
        default_sender="UMTEST",
    )  # fmt: skip
    accounts = bed.messenger.accounts
    assert await accounts.schedule_all() == 1
    worker = bed.messenger.worker()
    await worker.run_until_idle()
    assert (await accounts.get(connection.id)).read_at == NOW
    fake.credits = 90
    bed.clock.advance(timedelta(minutes=14))
    await worker.run_until_idle()
    assert (await accounts.get(connection.id)).balance == Decimal("100.0")
    bed.clock.advance(timedelta(minutes=1))
    await worker.run_until_idle()
    account = await accounts.get(connection.id)
    assert (account.balance, account.read_at) == (Decimal("90.0"), NOW + timedelta(minutes=15))


async def test_refresh_interval_is_configurable() -> None:
    messenger = Messenger(account_refresh=timedelta(minutes=5))
    assert messenger.accounts.interval == timedelta(minutes=5)
    with pytest.raises(ValueError, match="positive"):
        Messenger(account_refresh=timedelta(0))


async def test_a_send_refused_for_credit_queues_a_reading(bed: Bed) -> None:
    fake = IletimerkeziFake()
    fake.credit = False  # the next order is refused with 402
    connection = await bed.connect(
        "sms_b", fake.app, {"api_key": fake.key, "api_hash": fake.hash}, default_sender="ACME"
    )
    principal = await bed.messenger.principal(bed.workspace_id, livemode=True)
    response = await bed.messenger.send(principal, {"to": "+905551234567", "body": "Merhaba"})
    assert response.status == "failed"
    assert (await bed.messenger.accounts.get(connection.id)).state == "never"
    await bed.messenger.worker().run_until_idle()
    account = await bed.messenger.accounts.get(connection.id)
    assert (account.state, account.read_at) == ("read", NOW)


# --- connection.balance_low ---------------------------------------------------------------------


async def _receiver(bed: Bed) -> list[dict[str, Any]]:
    received: list[dict[str, Any]] = []

    async def hook(request: Request) -> Response:
        received.append(await request.json())
        return Response(status_code=204)

    url = await bed.stack.enter_async_context(
        serve(Starlette(routes=[Route("/hook", hook, methods=["POST"])]))
    )
    await bed.messenger.webhooks.create(
        bed.workspace_id, f"{url}/hook", events=["connection.balance_low"]
    )
    return received


async def test_balance_low_fires_once_per_crossing(bed: Bed) -> None:
    received = await _receiver(bed)
    fake = FakeVerimor(credits=1000)
    connection = await bed.connect(
        "sms_c", fake.app, {"username": fake.username, "password": fake.password},
        default_sender="UMTEST",
    )  # fmt: skip
    accounts, worker = bed.messenger.accounts, bed.messenger.worker()
    await accounts.set_threshold(connection.id, "100")
    for credits in (1000, 90, 80, 70):  # crosses below once
        fake.credits = credits
        await accounts.refresh(connection.id)
        await worker.run_until_idle()
    assert len(received) == 1
    assert received[0]["type"] == "connection.balance_low"
    assert received[0]["data"]["balance"] == "90.0"
    assert received[0]["data"]["threshold"] == "100"
    for credits in (150, 60):  # back above, then below again: a second crossing
        fake.credits = credits
        await accounts.refresh(connection.id)
        await worker.run_until_idle()
    assert [r["data"]["balance"] for r in received] == ["90.0", "60.0"]


async def test_a_threshold_above_the_balance_fires_at_once(bed: Bed) -> None:
    received = await _receiver(bed)
    fake = FakeVerimor(credits=50)
    connection = await bed.connect(
        "sms_c", fake.app, {"username": fake.username, "password": fake.password},
        default_sender="UMTEST",
    )  # fmt: skip
    await bed.messenger.accounts.refresh(connection.id)
    account = await bed.messenger.accounts.set_threshold(connection.id, 75)
    assert account.low is True
    await bed.messenger.worker().run_until_idle()
    assert len(received) == 1
    audit = await bed.messenger.audit.list(action="connection.balance_threshold")
    assert [e.target for e in audit.data] == [connection.id]


@pytest.mark.parametrize("bad", ["-1", "abc", "NaN", "1e20", 1.5])
async def test_threshold_must_be_a_sane_decimal(bed: Bed, bad: object) -> None:
    connection = await bed.messenger.connections.add(bed.workspace_id, "sms_a")
    with pytest.raises(RequestInvalid):
        await bed.messenger.accounts.set_threshold(connection.id, bad)  # type: ignore[arg-type]


# --- the sender check ----------------------------------------------------------------------------


async def test_unlisted_sender_is_refused_once_the_list_is_known(bed: Bed) -> None:
    fake = NetgsmFake(headers=("ACME",))
    connection = await bed.connect(
        "sms_a", fake.app, {"usercode": fake.usercode, "password": fake.password},
        default_sender="ACME",
    )  # fmt: skip
    principal = await bed.messenger.principal(bed.workspace_id, livemode=True)
    # Not read yet: the provider decides (NetGSM answers 40 for an unknown header).
    first = await bed.messenger.send(principal, {"to": "+905551234567", "body": "a",
                                                 "sender": "OTHER"})  # fmt: skip
    assert first.status == "failed"
    assert await bed.messenger.accounts.senders_of(bed.workspace_id) == {}
    await bed.messenger.accounts.refresh(connection.id)
    assert await bed.messenger.accounts.senders_of(bed.workspace_id) == {connection.id: ("ACME",)}
    calls = len(fake.sends)
    with pytest.raises(SenderNotApproved) as refused:
        await bed.messenger.send(principal, {"to": "+905551234567", "body": "b",
                                             "sender": "OTHER"})  # fmt: skip
    assert refused.value.http_status == 422
    assert len(fake.sends) == calls  # refused before any call
    ok = await bed.messenger.send(principal, {"to": "+905551234567", "body": "c",
                                              "sender": "ACME"})  # fmt: skip
    assert ok.status == "sent"


async def test_a_password_in_a_query_string_never_reaches_the_httpx_info_log(
    bed: Bed, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeVerimor(credits=7)  # Verimor's format puts the password in the URL
    connection = await bed.connect(
        "sms_c", fake.app, {"username": fake.username, "password": fake.password},
        default_sender="UMTEST",
    )  # fmt: skip
    with caplog.at_level(logging.INFO, logger="httpx"):
        await bed.messenger.accounts.refresh(connection.id)
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "httpx")
    assert "/v2/balance" in logged  # httpx did log the requests
    assert "password=%3Credacted%3E" not in logged
    assert "password=<redacted>" in logged
    assert "s3cret" not in logged


async def test_a_one_off_reading_and_the_workers_handler(bed: Bed) -> None:
    fake = FakeVerimor(credits=100)
    connection = await bed.connect(
        "sms_c", fake.app, {"username": fake.username, "password": fake.password},
        default_sender="UMTEST",
    )  # fmt: skip
    accounts = bed.messenger.accounts
    await accounts.schedule(connection.id, once=True)
    await bed.messenger.worker().run_until_idle()
    assert (await accounts.get(connection.id)).balance == Decimal("100.0")

    fake.credits = 80
    # A repeating item comes back one interval later; a one-off and a gone connection stop.
    assert await accounts.handle(refresh_item(connection.id, now=NOW)) == NOW + accounts.interval
    assert (await accounts.get(connection.id)).balance == Decimal("80.0")
    assert await accounts.handle(refresh_item(connection.id, now=NOW, once=True)) is None
    assert await accounts.handle(refresh_item("con_gone", now=NOW)) is None
