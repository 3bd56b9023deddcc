"""The façade: routing, fallback, quota, isolation, write-ahead, batches, credentials."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from unified_messaging import (
    ChatUnreachable,
    Connection,
    InvalidCredentials,
    InvalidRecipient,
    ManualClock,
    MessageNotFound,
    Messenger,
    ProviderNotConnected,
    ProviderUnavailable,
    QuotaExceeded,
    SenderNotApproved,
    SenderRequired,
    Unauthorized,
    Vault,
)
from unified_messaging.providers import (
    InboundCallback,
    ProviderAdapter,
    ProviderReport,
    SubmitOutcome,
    SubmitRequest,
)
from unified_messaging.store.memory import MemoryStore
from unified_messaging.testing import TestBed, create_testbed

NORMAL = "+905551234567"


def magic(suffix: int) -> str:
    return f"+9055500000{suffix:02d}"


@pytest.fixture
async def bed() -> TestBed:
    return await create_testbed()


# ---------------------------------------------------------------- a fake live provider


@dataclass
class FakeProvider:
    """A live adapter that answers from a script and records what it was asked."""

    code_: str = "sms_a"
    answer: str = "accepted"
    max_batch_: int = 1
    calls: list[list[SubmitRequest]] = field(default_factory=list)
    events: list[str] | None = None
    in_flight: int = 0
    peak: int = 0
    delay: float = 0.0
    raises: bool = False

    @property
    def code(self):  # type: ignore[no-untyped-def]
        return self.code_

    @property
    def max_batch(self) -> int:
        return self.max_batch_

    async def _one(self, request: SubmitRequest) -> SubmitOutcome:
        if self.events is not None:
            self.events.append(f"submit:{request.job_id}")
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.raises:
                raise RuntimeError("adapter bug")
        finally:
            self.in_flight -= 1
        if self.answer == "accepted":
            return SubmitOutcome.accepted(f"{self.code_}-{request.job_id}")
        if self.answer == "rejected":
            return SubmitOutcome.rejected("PROVIDER_REJECTED", "no")
        if self.answer == "recipient_failed":
            return SubmitOutcome.recipient_failed("IYS_CONSENT_MISSING", "no consent")
        return SubmitOutcome.unavailable("down")

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        self.calls.append([request])
        return await self._one(request)

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        assert len(requests) <= self.max_batch_
        self.calls.append(list(requests))
        return [await self._one(r) for r in requests]

    def parse_reports(self, callback: InboundCallback) -> list[ProviderReport]:
        return []

    async def poll_reports(self, provider_message_ids: Sequence[str]) -> list[ProviderReport]:
        return []

    async def aclose(self) -> None:
        return None


class RecordingStore(MemoryStore):
    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    async def accept_messages(self, messages, **write_ahead):  # type: ignore[no-untyped-def]
        self.events.extend(f"insert:{m.job_id}:{m.status}" for m in messages)
        return await super().accept_messages(messages, **write_ahead)

    async def finish_messages(self, messages, **outcome):  # type: ignore[no-untyped-def]
        self.events.extend(f"update:{m.job_id}:{m.status}" for m in messages)
        return await super().finish_messages(messages, **outcome)


async def live_setup(
    fakes: Mapping[str, FakeProvider],
    *,
    store: MemoryStore | None = None,
    quota: int | None = None,
    concurrency: int = 32,
    vault: Vault | None = None,
) -> tuple[Messenger, object, dict[str, Mapping[str, str]]]:
    seen_credentials: dict[str, Mapping[str, str]] = {}

    def factory_for(code: str):  # type: ignore[no-untyped-def]
        def factory(connection: Connection, credentials: Mapping[str, str]) -> ProviderAdapter:
            seen_credentials[code] = credentials
            return fakes[code]  # type: ignore[return-value]

        return factory

    messenger = Messenger(
        store,
        clock=ManualClock(),
        vault=vault,
        live_adapters={code: factory_for(code) for code in fakes},  # type: ignore[misc]
        max_concurrency=concurrency,
    )
    # These tests send many messages to one number: the flood guard (D28) has its own tests.
    workspace = await messenger.workspaces.create("live", monthly_quota=quota, recipient_limit=None)
    for code in fakes:
        await messenger.connections.add(
            workspace.id,
            code,  # type: ignore[arg-type]
            credentials={"username": "acme", "password": f"secret-{code}"},
            default_sender="ACME",
        )
    key = await messenger.keys.create(workspace.id, livemode=True)
    principal = await messenger.authenticate(key.secret)
    return messenger, principal, seen_credentials


# ---------------------------------------------------------------- sending


async def test_send_stores_a_readable_sent_record(bed: TestBed) -> None:
    response = await bed.messenger.send(bed.principal, {"to": "0555 123 45 67", "body": "Selam"})
    assert response.status == "sent"
    assert response.to == NORMAL
    assert response.provider == "sms_a"
    record = await bed.messenger.get_message(bed.principal, response.job_id)
    assert record.status == "sent"
    assert record.sender == "UMTEST"
    assert record.livemode is False
    assert [a.status for a in record.attempts] == ["accepted"]


async def test_outbox_records_rendered_text_sender_and_provider(bed: TestBed) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "otp", "Kodunuz: {{ code }}")
    await bed.messenger.send(
        bed.principal, {"to": NORMAL, "template": "otp", "variables": {"code": 4242}}
    )
    (entry,) = bed.outbox
    assert (entry.to, entry.text, entry.provider, entry.sender) == (
        NORMAL,
        "Kodunuz: 4242",
        "sms_a",
        "UMTEST",
    )


async def test_turkish_text_uses_the_single_shift_table(bed: TestBed) -> None:
    response = await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "Şişli'de ığdır"})
    assert (response.encoding, response.segments) == ("gsm7_turkish", 1)


async def test_connection_without_turkish_shift_reports_ucs2(bed: TestBed) -> None:
    workspace = await bed.messenger.workspaces.create("no shift")
    await bed.messenger.connections.add(
        workspace.id, "sms_b", default_sender="ACME", turkish_shift=False
    )
    principal = await bed.messenger.principal(workspace.id, livemode=False)
    response = await bed.messenger.send(principal, {"to": NORMAL, "body": "Şişli"})
    assert response.encoding == "ucs2"


async def test_chat_channels_report_no_sms_encoding(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, {"to": "123456", "body": "hi", "provider": "chatbot"}
    )
    assert (response.encoding, response.segments) == (None, None)


async def test_chatbot_success_is_final_delivered(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, {"to": "@news_channel", "body": "hi", "provider": "chatbot", "sender": "X"}
    )
    assert response.status == "sent"
    record = await bed.messenger.get_message(bed.principal, response.job_id)
    assert record.status == "delivered"
    assert record.final_at is not None
    assert record.sender is None  # ignored for chat channels
    assert record.attempts[0].status == "delivered"


@pytest.mark.parametrize("chat", ["0", "@unreachable_bot_user"])
async def test_unreachable_chat_is_422_and_still_stored(bed: TestBed, chat: str) -> None:
    with pytest.raises(ChatUnreachable) as caught:
        await bed.messenger.send(bed.principal, {"to": chat, "body": "hi", "provider": "chatbot"})
    assert caught.value.http_status == 422
    (entry,) = bed.outbox
    record = await bed.messenger.get_message(bed.principal, entry.job_id)
    assert record.status == "failed"
    assert record.error is not None and record.error.code == "CHAT_UNREACHABLE"


async def test_bizchat_normalizes_to_e164(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, {"to": "+44 7911 123456", "body": "hi", "provider": "bizchat"}
    )
    assert response.to == "+447911123456"


async def test_bizchat_template_maps_to_provider_template(bed: TestBed) -> None:
    await bed.messenger.templates.set(
        bed.workspace.id,
        "shipped",
        "Hi {{ name }}, order {{ order }} shipped. {{ name }}!",
        provider_template="order_shipped",
        provider_language="en",
    )
    await bed.messenger.send(
        bed.principal,
        {
            "to": NORMAL,
            "provider": "bizchat",
            "template": "shipped",
            "variables": {"order": "A-1", "name": "Ayşe"},
        },
    )
    template = bed.outbox[0].template
    assert template is not None
    assert (template.name, template.language, template.parameters) == (
        "order_shipped",
        "en",
        ("Ayşe", "A-1"),
    )


# ---------------------------------------------------------------- routing and senders


async def test_first_connection_is_the_default_until_changed(bed: TestBed) -> None:
    connections = await bed.messenger.connections.list(bed.workspace.id)
    assert [c.provider for c in connections if c.is_default] == ["sms_a"]
    chosen = next(c for c in connections if c.provider == "sms_c")
    await bed.messenger.connections.set_default(chosen.id)
    response = await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "x"})
    assert response.provider == "sms_c"


async def test_removing_the_default_promotes_the_oldest_remaining(bed: TestBed) -> None:
    connections = await bed.messenger.connections.list(bed.workspace.id)
    await bed.messenger.connections.remove(connections[0].id)
    response = await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "x"})
    assert response.provider == "sms_b"


async def test_unconnected_provider_is_404(bed: TestBed) -> None:
    workspace = await bed.messenger.workspaces.create("only b")
    await bed.messenger.connections.add(workspace.id, "sms_b", default_sender="ACME")
    principal = await bed.messenger.principal(workspace.id, livemode=False)
    with pytest.raises(ProviderNotConnected):
        await bed.messenger.send(principal, {"to": NORMAL, "body": "x", "provider": "sms_a"})


async def test_workspace_without_connections_is_404(bed: TestBed) -> None:
    workspace = await bed.messenger.workspaces.create("empty")
    principal = await bed.messenger.principal(workspace.id, livemode=False)
    with pytest.raises(ProviderNotConnected):
        await bed.messenger.send(principal, {"to": NORMAL, "body": "x"})


async def test_omitted_sender_without_default_is_sender_required(bed: TestBed) -> None:
    workspace = await bed.messenger.workspaces.create("no default sender")
    await bed.messenger.connections.add(workspace.id, "sms_a")
    principal = await bed.messenger.principal(workspace.id, livemode=False)
    with pytest.raises(SenderRequired):
        await bed.messenger.send(principal, {"to": NORMAL, "body": "x"})
    assert len(bed.outbox) == 0  # refused before any provider was called
    sent = await bed.messenger.send(principal, {"to": NORMAL, "body": "x", "sender": "ACME"})
    assert sent.status == "sent"


async def test_unapproved_sender_is_422(bed: TestBed) -> None:
    with pytest.raises(SenderNotApproved):
        await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "x", "sender": "OTHER"})


async def test_sender_must_be_approved_on_every_fallback_connection(bed: TestBed) -> None:
    workspace = await bed.messenger.workspaces.create("mixed")
    await bed.messenger.connections.add(workspace.id, "sms_a", approved_senders=["ACME"])
    await bed.messenger.connections.add(workspace.id, "sms_b", approved_senders=["OTHER"])
    principal = await bed.messenger.principal(workspace.id, livemode=False)
    with pytest.raises(SenderNotApproved):
        await bed.messenger.send(
            principal, {"to": NORMAL, "body": "x", "sender": "ACME", "fallback": ["sms_b"]}
        )


async def test_provider_side_sender_rules_reject_a_bad_header(bed: TestBed) -> None:
    workspace = await bed.messenger.workspaces.create("free headers")
    await bed.messenger.connections.add(workspace.id, "sms_a")
    principal = await bed.messenger.principal(workspace.id, livemode=False)
    response = await bed.messenger.send(
        principal, {"to": NORMAL, "body": "x", "sender": "A HEADER FAR TOO LONG"}
    )
    assert response.status == "failed"
    assert response.error is not None and response.error.code == "PROVIDER_REJECTED"


# ---------------------------------------------------------------- fallback (D6, D7)


async def test_fallback_moves_on_after_a_rejection(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, {"to": magic(1), "body": "x", "fallback": ["sms_b"]}
    )
    assert response.status == "failed"  # 01: every provider rejects that number
    assert [(a.provider, a.status) for a in response.attempts or []] == [
        ("sms_a", "rejected"),
        ("sms_b", "rejected"),
    ]


@pytest.mark.parametrize("n", [1, 2, 3])
async def test_first_n_providers_reject_then_the_next_accepts(bed: TestBed, n: int) -> None:
    chain = ["sms_b", "sms_c", "sms_d"]
    response = await bed.messenger.send(
        bed.principal, {"to": magic(10 + n), "body": "x", "fallback": chain}
    )
    assert response.status == "sent"
    assert response.provider == ["sms_a", *chain][n]
    attempts = response.attempts or []
    assert [a.status for a in attempts] == ["rejected"] * n + ["accepted"]
    record = await bed.messenger.get_message(bed.principal, response.job_id)
    assert len(record.attempts) == n + 1


async def test_when_fallback_runs_out_the_message_fails(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, {"to": magic(13), "body": "x", "fallback": ["sms_b", "sms_c"]}
    )
    assert response.status == "failed"
    assert response.error is not None and response.error.code == "PROVIDER_REJECTED"
    assert response.provider == "sms_c"  # the last provider tried


async def test_fallback_stops_on_missing_iys_consent(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, {"to": magic(2), "body": "x", "fallback": ["sms_b", "sms_c"]}
    )
    assert response.status == "failed"
    assert response.error is not None and response.error.code == "IYS_CONSENT_MISSING"
    assert len(response.attempts or []) == 1
    assert len(bed.outbox) == 1


async def test_fallback_moves_on_after_a_timeout(bed: TestBed) -> None:
    # 03 times out everywhere, so the chain is exhausted: 502 with the job kept.
    with pytest.raises(ProviderUnavailable) as caught:
        await bed.messenger.send(
            bed.principal, {"to": magic(3), "body": "x", "fallback": ["sms_b", "sms_c"]}
        )
    assert [e.provider for e in bed.outbox] == ["sms_a", "sms_b", "sms_c"]
    job_id = caught.value.job_id
    assert job_id is not None
    record = await bed.messenger.get_message(bed.principal, job_id)
    assert record.status == "failed"
    assert record.error is not None and record.error.code == "PROVIDER_UNAVAILABLE"
    assert len(record.attempts) == 3


async def test_timeout_without_fallback_is_502_with_a_readable_job(bed: TestBed) -> None:
    with pytest.raises(ProviderUnavailable) as caught:
        await bed.messenger.send(bed.principal, {"to": magic(3), "body": "x"})
    assert caught.value.http_status == 502
    assert caught.value.job_id is not None
    record = await bed.messenger.get_message(bed.principal, caught.value.job_id)
    assert record.status == "failed"


async def test_attempts_are_omitted_without_fallback(bed: TestBed) -> None:
    response = await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "x"})
    assert "attempts" not in response.to_dict()
    with_fallback = await bed.messenger.send(
        bed.principal, {"to": NORMAL, "body": "x", "fallback": ["sms_b"]}
    )
    assert [a["status"] for a in with_fallback.to_dict()["attempts"]] == ["accepted"]


async def test_accepted_message_keeps_the_untried_fallback_for_later(bed: TestBed) -> None:
    response = await bed.messenger.send(
        bed.principal, {"to": magic(11), "body": "x", "fallback": ["sms_b", "sms_c"]}
    )
    stored = await bed.messenger.store.get_message(bed.workspace.id, False, response.job_id)
    assert stored is not None
    assert stored.fallback_left == ("sms_c",)


# ---------------------------------------------------------------- live mode, quota


async def test_message_is_stored_before_the_provider_is_called() -> None:
    events: list[str] = []
    fake = FakeProvider(events=events)
    messenger, principal, _ = await live_setup({"sms_a": fake}, store=RecordingStore(events))
    response = await messenger.send(principal, {"to": NORMAL, "body": "x"})  # type: ignore[arg-type]
    job = response.job_id
    assert events == [f"insert:{job}:queued", f"submit:{job}", f"update:{job}:sent"]


async def test_live_adapter_receives_decrypted_credentials_and_store_holds_ciphertext() -> None:
    fake = FakeProvider()
    messenger, principal, seen = await live_setup({"sms_a": fake})
    await messenger.send(principal, {"to": NORMAL, "body": "x"})  # type: ignore[arg-type]
    assert seen["sms_a"] == {"username": "acme", "password": "secret-sms_a"}
    (connection,) = await messenger.connections.list(principal.workspace_id)  # type: ignore[attr-defined]
    assert "secret-sms_a" not in connection.credentials
    assert connection.credentials.startswith("v1.")
    assert "secret" not in repr(connection)
    assert connection.dlr_token not in repr(connection)


async def test_quota_counts_one_unit_per_logical_message_across_fallback() -> None:
    first = FakeProvider(code_="sms_a", answer="rejected")
    second = FakeProvider(code_="sms_b")
    messenger, principal, _ = await live_setup({"sms_a": first, "sms_b": second}, quota=2)
    request = {"to": NORMAL, "body": "x", "fallback": ["sms_b"]}
    for _ in range(2):
        response = await messenger.send(principal, request)  # type: ignore[arg-type]
        assert len(response.attempts or []) == 2
    with pytest.raises(QuotaExceeded):
        await messenger.send(principal, request)  # type: ignore[arg-type]
    usage = await messenger.workspaces.quota_usage(principal.workspace_id)  # type: ignore[attr-defined]
    assert (usage.used, usage.limit) == (2, 2)


async def test_messages_no_provider_accepted_give_their_unit_back() -> None:
    fake = FakeProvider(answer="rejected")
    messenger, principal, _ = await live_setup({"sms_a": fake}, quota=1)
    for _ in range(3):
        response = await messenger.send(principal, {"to": NORMAL, "body": "x"})  # type: ignore[arg-type]
        assert response.status == "failed"
    fake.answer = "accepted"
    assert (await messenger.send(principal, {"to": NORMAL, "body": "x"})).status == "sent"  # type: ignore[arg-type]


async def test_quota_is_exact_under_concurrent_sends() -> None:
    fake = FakeProvider(delay=0.001)
    messenger, principal, _ = await live_setup({"sms_a": fake}, quota=20)

    async def attempt() -> bool:
        try:
            await messenger.send(principal, {"to": NORMAL, "body": "x"})  # type: ignore[arg-type]
        except QuotaExceeded:
            return False
        return True

    results = await asyncio.gather(*(attempt() for _ in range(50)))
    assert sum(results) == 20
    assert sum(len(c) for c in fake.calls) == 20


async def test_bulk_over_quota_sends_nothing() -> None:
    fake = FakeProvider()
    messenger, principal, _ = await live_setup({"sms_a": fake}, quota=3)
    items = [{"to": NORMAL, "body": "x"} for _ in range(4)]
    with pytest.raises(QuotaExceeded):
        await messenger.send_bulk(principal, {"items": items})  # type: ignore[arg-type]
    assert fake.calls == []


async def test_test_mode_consumes_no_quota(bed: TestBed) -> None:
    await bed.messenger.workspaces.set_monthly_quota(bed.workspace.id, 0)
    principal = await bed.messenger.principal(bed.workspace.id, livemode=False)
    response = await bed.messenger.send(principal, {"to": NORMAL, "body": "x"})
    assert response.status == "sent"
    assert (await bed.messenger.workspaces.quota_usage(bed.workspace.id)).used == 0


async def test_a_missing_live_adapter_is_provider_unavailable() -> None:
    messenger = Messenger(clock=ManualClock(), live_adapters={})
    workspace = await messenger.workspaces.create("no adapters")
    await messenger.connections.add(workspace.id, "sms_a", default_sender="ACME")
    principal = await messenger.principal(workspace.id, livemode=True)
    with pytest.raises(ProviderUnavailable):
        await messenger.send(principal, {"to": NORMAL, "body": "x"})


async def test_an_adapter_that_raises_is_treated_as_unavailable() -> None:
    fake = FakeProvider(raises=True)
    messenger, principal, _ = await live_setup({"sms_a": fake})
    with pytest.raises(ProviderUnavailable) as caught:
        await messenger.send(principal, {"to": NORMAL, "body": "x"})  # type: ignore[arg-type]
    assert caught.value.job_id is not None


# ---------------------------------------------------------------- bulk


async def test_bulk_uses_the_batch_endpoint_in_provider_sized_chunks() -> None:
    fake = FakeProvider(max_batch_=100)
    messenger, principal, _ = await live_setup({"sms_a": fake})
    items = [{"to": NORMAL, "body": f"n{i}"} for i in range(200)]
    response = await messenger.send_bulk(principal, {"items": items})  # type: ignore[arg-type]
    assert (response.total, response.sent, response.failed) == (200, 200, 0)
    assert sorted(len(c) for c in fake.calls) == [100, 100]
    texts = [r.text for call in fake.calls for r in call]
    assert sorted(texts) == sorted(f"n{i}" for i in range(200))


async def test_bulk_per_recipient_provider_is_bounded_by_max_concurrency() -> None:
    fake = FakeProvider(delay=0.002)
    messenger, principal, _ = await live_setup({"sms_a": fake}, concurrency=4)
    items = [{"to": NORMAL, "body": "x"} for _ in range(40)]
    response = await messenger.send_bulk(principal, {"items": items})  # type: ignore[arg-type]
    assert response.sent == 40
    assert 1 < fake.peak <= 4


async def test_bulk_fallback_moves_only_the_rejected_items_on(bed: TestBed) -> None:
    items = [{"to": NORMAL, "body": "a"}, {"to": magic(11), "body": "b"}]
    response = await bed.messenger.send_bulk(bed.principal, {"items": items, "fallback": ["sms_b"]})
    assert [r.provider for r in response.results] == ["sms_a", "sms_b"]
    assert [len(r.attempts or []) for r in response.results] == [1, 2]


async def test_bulk_results_keep_item_order_and_ids_are_readable(bed: TestBed) -> None:
    items = [
        {"to": NORMAL, "body": "1"},
        {"to": "garbage", "body": "2"},
        {"to": magic(2), "body": "3"},
        {"to": "0532 000 00 00", "body": "4"},
    ]
    response = await bed.messenger.send_bulk(bed.principal, {"items": items})
    assert [r.status for r in response.results] == ["sent", "failed", "failed", "sent"]
    assert response.results[1].error is not None
    assert response.results[1].error.code == "INVALID_RECIPIENT"
    assert response.results[2].error is not None
    assert response.results[2].error.code == "IYS_CONSENT_MISSING"
    assert (response.total, response.sent, response.failed) == (4, 2, 2)
    for result in response.results:
        record = await bed.messenger.get_message(bed.principal, result.job_id)
        assert record.status == result.status


async def test_bulk_of_unreachable_chats_fails_items_not_the_request(bed: TestBed) -> None:
    items = [{"to": "0", "body": "x"}, {"to": "42", "body": "y"}]
    response = await bed.messenger.send_bulk(bed.principal, {"items": items, "provider": "chatbot"})
    assert [r.status for r in response.results] == ["failed", "sent"]


# ---------------------------------------------------------------- isolation and auth


async def test_test_and_live_jobs_are_invisible_to_each_other(bed: TestBed) -> None:
    response = await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "x"})
    live = await bed.messenger.principal(bed.workspace.id, livemode=True)
    with pytest.raises(MessageNotFound):
        await bed.messenger.get_message(live, response.job_id)


async def test_another_workspace_cannot_read_a_job(bed: TestBed) -> None:
    response = await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "x"})
    other = await bed.messenger.workspaces.create("other")
    principal = await bed.messenger.principal(other.id, livemode=False)
    with pytest.raises(MessageNotFound):
        await bed.messenger.get_message(principal, response.job_id)


async def test_revoked_and_expired_keys_are_unauthorized(bed: TestBed) -> None:
    clock = bed.clock
    assert isinstance(clock, ManualClock)
    revoked = await bed.messenger.keys.create(bed.workspace.id)
    await bed.messenger.keys.revoke(revoked.record.id)
    expiring = await bed.messenger.keys.create(
        bed.workspace.id, expires_at=clock.now().replace(year=clock.now().year + 1)
    )
    await bed.messenger.authenticate(expiring.secret)
    clock.advance(366 * 24 * 3600)
    for secret in (revoked.secret, expiring.secret, None, "", "Bearer x"):
        with pytest.raises(Unauthorized):
            await bed.messenger.authenticate(secret)


async def test_live_key_authenticates_in_live_mode(bed: TestBed) -> None:
    created = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    assert created.secret.startswith("um_live_")
    principal = await bed.messenger.authenticate(created.secret)
    assert principal.livemode is True
    assert created.secret not in repr(created)


async def test_recipient_errors_name_no_more_than_the_input(bed: TestBed) -> None:
    with pytest.raises(InvalidRecipient) as caught:
        await bed.messenger.send(bed.principal, {"to": "+90 212 555 00 00", "body": "x"})
    assert caught.value.code == "INVALID_RECIPIENT"


# ---------------------------------------------------------------- vault rotation


async def test_rotating_the_master_key_re_encrypts_every_connection() -> None:
    old = Vault.from_spec("old:" + "A" * 43 + "=")
    messenger, principal, _ = await live_setup({"sms_a": FakeProvider()}, vault=old)
    store = messenger.store
    new_vault = Vault.from_spec("new:" + "B" * 43 + "=,old:" + "A" * 43 + "=")
    rotated_messenger = Messenger(store, vault=new_vault)
    assert (await rotated_messenger.vault.rotate()).total == 1
    (connection,) = await store.list_connections(principal.workspace_id)  # type: ignore[attr-defined]
    assert connection.credentials.startswith("v1.new.")
    assert (await rotated_messenger.vault.rotate()).total == 0


async def test_a_connection_without_credentials_sends_with_test_keys_only(bed: TestBed) -> None:
    live = await bed.messenger.principal(bed.workspace.id, livemode=True)
    with pytest.raises(InvalidCredentials) as caught:
        await bed.messenger.send(live, {"to": NORMAL, "body": "x"})
    assert caught.value.http_status == 422
    assert "test keys only" in caught.value.message
    test = await bed.messenger.send(bed.principal, {"to": NORMAL, "body": "x"})
    assert test.status == "sent"


async def test_shipped_adapters_check_credentials_when_a_connection_is_added(bed: TestBed) -> None:
    with pytest.raises(InvalidCredentials) as caught:
        await bed.messenger.connections.add(
            (await bed.messenger.workspaces.create("creds")).id,
            "sms_a",
            credentials={"usercode": "8501234567", "pasword": "hunter2-secret"},
        )
    assert "password is missing" in caught.value.message
    assert "pasword" in caught.value.message
    assert "hunter2-secret" not in caught.value.message


async def test_custom_live_adapters_bring_their_own_credentials_rules() -> None:
    messenger, principal, seen = await live_setup({"sms_a": FakeProvider()})
    await messenger.send(principal, {"to": NORMAL, "body": "x"})  # type: ignore[arg-type]
    assert seen["sms_a"]["username"] == "acme"  # not NetGSM's schema: the fake's own


async def test_test_connection_asks_the_provider() -> None:
    class Checked(FakeProvider):
        checked = 0

        async def check(self) -> None:
            Checked.checked += 1

    messenger, principal, _ = await live_setup({"sms_a": Checked()})
    (connection,) = await messenger.connections.list(principal.workspace_id)  # type: ignore[attr-defined]
    await messenger.connections.test(connection.id)
    assert Checked.checked == 1
