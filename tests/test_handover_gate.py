"""The hand-over gate (D35): every path that hands a message to a provider asks, at that
moment, every rule that may stop it: canceled, suppressed, queue TTL, consent, quiet hours.

The matrix drives each path through the façade and its worker with a ManualClock and live
scripted providers, changes one rule while the message waits for its hand-over, and checks
what the hand-over then does. The unit tests below it pin the gate's order, the consent
seam, Telegram's case-folded usernames and the DST fall-back night.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from unified_messaging import (
    ManualClock,
    Messenger,
    Principal,
    RecipientSuppressed,
    parse_quiet_hours,
)
from unified_messaging._domain import Connection, ErrorInfo, MessageRecord, Workspace
from unified_messaging._routing.dispatch import Hop, job_for
from unified_messaging._routing.gate import HandOverGate
from unified_messaging._routing.verdicts import CANCELED, Go, HoldUntil, Stop
from unified_messaging._schedule import QuietHours
from unified_messaging.providers.base import InboundCallback, SubmitOutcome, SubmitRequest
from unified_messaging.providers.simulator import Simulator, SimulatorSettings
from unified_messaging.store.memory import MemoryStore

TO = "+905551234567"
#: 20:50 in Istanbul (UTC+3): ten minutes before a 21:00-09:00 quiet window.
START = datetime(2026, 12, 1, 17, 50, tzinfo=UTC)
#: 09:00 in Istanbul the next morning: the window's end.
MORNING = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)
QUIET = parse_quiet_hours("21:00-09:00", scope="all")
TTL = timedelta(hours=1)


class Provider(Simulator):
    """A live provider standing in for a real one: answers as scripted (``accept`` by
    default), records its calls, and can run ``during`` inside a call (a rule changing
    while the provider thinks), moving the clock by ``takes`` seconds."""

    def __init__(self, connection: Connection, clock: ManualClock) -> None:
        super().__init__(connection.provider, clock=clock, settings=SimulatorSettings())
        self.manual = clock
        self.answers: list[str] = []
        self.calls: list[SubmitRequest] = []
        self.during: Callable[[], Awaitable[None]] | None = None
        self.takes = 0.0

    async def submit(self, request: SubmitRequest) -> SubmitOutcome:
        self.calls.append(request)
        self.manual.advance(self.takes)
        if self.during is not None:
            during, self.during = self.during, None
            await during()
        answer = self.answers.pop(0) if self.answers else "accept"
        if answer == "reject":
            return SubmitOutcome.rejected("PROVIDER_REJECTED", "The provider refused it.")
        if answer == "unavailable":
            return SubmitOutcome.unavailable("The provider did not answer in time.")
        return SubmitOutcome.accepted(f"pm_{self.code}_{len(self.calls)}")

    async def submit_batch(self, requests: Sequence[SubmitRequest]) -> list[SubmitOutcome]:
        return [await self.submit(r) for r in requests]

    def called_for(self, job_id: str) -> int:
        return sum(1 for call in self.calls if call.job_id == job_id)


@dataclass
class Rig:
    clock: ManualClock
    messenger: Messenger
    providers: dict[str, Provider] = field(default_factory=dict)
    workspace_id: str = ""
    auth: Principal | None = None

    @property
    def principal(self) -> Principal:
        assert self.auth is not None
        return self.auth

    async def send(self, **body: Any) -> str:
        answer = await self.messenger.send(self.principal, {"to": TO, "body": "Kampanya", **body})
        return answer.job_id

    async def record(self, job_id: str) -> MessageRecord:
        found = await self.messenger.store.get_message(self.workspace_id, True, job_id)
        assert found is not None
        return found

    async def work(self, *, until: datetime | None = None, step: float = 1.0) -> None:
        """Run the worker until idle, moving the clock in ``step`` s steps to ``until``."""
        worker = self.messenger.worker(batch=10, gather_interval=0)
        while True:
            await worker.run_until_idle()
            if until is None or self.clock.now() >= until:
                return
            self.clock.advance(min(step, (until - self.clock.now()).total_seconds()))

    async def report(self, job_id: str, status: str) -> None:
        """The provider pushes a delivery report for the message's last attempt."""
        record = await self.record(job_id)
        attempt = record.attempts[-1]
        connection = await self.connection(attempt.provider)
        body = f'{{"provider_message_id": "{attempt.provider_message_id}", "status": "{status}"}}'
        callback = InboundCallback("POST", {}, {}, body.encode())
        await self.messenger.reports.ingest(connection.id, connection.dlr_token or "", callback)

    async def connection(self, code: str) -> Connection:
        for connection in await self.messenger.store.list_connections(self.workspace_id):
            if connection.provider == code:
                return connection
        raise AssertionError(code)

    async def suppress(self) -> None:
        await self.messenger.suppressions.add(self.principal, {"channel": "sms", "recipient": TO})

    async def quiet(self) -> None:
        await self.messenger.workspaces.set_quiet_hours(self.workspace_id, QUIET)
        # As the next request's authentication would read it.
        self.auth = await self.messenger.principal(self.workspace_id, livemode=True)


class Died(BaseException):
    """The process dies (kill -9) while a send waits for its slot."""


async def make_rig(*, retry: bool = False, paced: bool = False, crash: bool = False) -> Rig:
    clock = ManualClock(START)

    async def sleep(seconds: float) -> None:
        if crash and rig.auth is not None:
            raise Died
        clock.advance(seconds)

    rig = Rig(clock, Messenger(clock=clock))

    def build(connection: Connection, credentials: Mapping[str, str]) -> Provider:
        return rig.providers.setdefault(connection.provider, Provider(connection, clock))

    rig.messenger = Messenger(
        clock=clock,
        pace_sleep=sleep,
        pace_wait=timedelta(seconds=5 if crash else 0),
        live_adapters={"sms_a": build, "sms_b": build, "bizchat": build},
    )
    m = rig.messenger
    workspace = await m.workspaces.create("Acme", recipient_limit=None)
    await m.workspaces.set_retry_unavailable(workspace.id, retry)
    await m.workspaces.set_queue_ttl(workspace.id, TTL)
    rates: dict[str, Any] = {"max_rate": 1.0} if paced or crash else {}
    for code in ("sms_a", "sms_b"):
        await m.connections.add(
            workspace.id, code, default_sender="ACME", credentials={"any": "thing"},
            dlr_timeout=timedelta(minutes=5), **rates,
        )  # fmt: skip
    await m.connections.add(
        workspace.id, "bizchat",
        credentials={"access_token": "EAAG-gate", "phone_number_id": "1055",
                     "app_secret": "gate-secret", "verify_token": "vt-gate"},
    )  # fmt: skip
    rig.workspace_id = workspace.id
    rig.auth = await m.principal(workspace.id, livemode=True)
    for code in ("sms_a", "sms_b", "bizchat"):  # build the adapters: a send through each
        rig.auth = None  # (no crash yet)
        rig.auth = await m.principal(workspace.id, livemode=True)
        await rig.send(provider=code)
        rig.clock.advance(2)
    await rig.work()
    rig.clock.advance(10)
    return rig


# ---------------------------------------------------------------------------- the paths
#
# Each path accepts one message and leaves it waiting for a hand-over ("start"), then makes
# that hand-over happen ("hand_over"), naming the provider the hand-over goes to. A rule is
# changed between the two (or, for the fallback hop at submit, inside the first provider's
# call).


@dataclass(frozen=True)
class Path:
    name: str
    start: Callable[[Rig], Awaitable[str]]
    hand_over: Callable[[Rig, str], Awaitable[None]]
    to: str  # the provider the hand-over calls
    #: No provider took the message before this hand-over (it waits in the queue: canceling
    #: and the queue TTL apply).
    waiting: bool = True
    #: It can be canceled while it waits (a row a crash left mid-send is the submit
    #: check's until the worker takes it over: 409).
    cancelable: bool = True
    retry: bool = False
    paced: bool = False
    crash: bool = False


async def _scheduled(rig: Rig) -> str:
    return await rig.send(send_at=(rig.clock.now() + timedelta(minutes=10)).isoformat())


async def _retried(rig: Rig) -> str:
    rig.providers["sms_a"].answers = ["unavailable"]
    return await rig.send()


async def _paced(rig: Rig) -> str:
    # One slot a second: the second message of a bulk waits for the worker (D27).
    bulk = await rig.messenger.send_bulk(
        rig.principal, {"items": [{"to": "+905551111111", "body": "a"}, {"to": TO, "body": "b"}]}
    )
    assert [r.status for r in bulk.results] == ["sent", "queued"]
    return bulk.results[1].job_id


async def _crashed_while_paced(rig: Rig) -> str:
    # The second message of a bulk waits for its slot; the process dies in that wait. The
    # submit check finds it ``waiting`` (no provider has it) and the worker sends it (D27).
    items = [{"to": "+905551111111", "body": "a"}, {"to": TO, "body": "b"}]
    with pytest.raises(Died):
        await rig.messenger.send_bulk(rig.principal, {"items": items})
    page = await rig.messenger.list_messages(rig.principal, {"to": TO, "limit": 1})
    record = await rig.record(page.data[0].job_id)
    assert record.phase == "waiting"
    return record.job_id


async def _after_failed_report(rig: Rig) -> str:
    job_id = await rig.send(fallback=["sms_b"])
    assert (await rig.record(job_id)).status == "sent"
    return job_id


async def _escalating(rig: Rig) -> str:
    # WhatsApp first; SMS (the workspace's first SMS connection) if it is not delivered in 30 s.
    job_id = await rig.send(provider="bizchat", channel_fallback=["sms"], escalate_after=30)
    assert ((await rig.record(job_id)).status, (await rig.record(job_id)).provider) == (
        "sent", "bizchat"
    )  # fmt: skip
    return job_id


async def _escalation_due(rig: Rig, job_id: str) -> None:
    """The worker runs just past the escalation's wait (30 s after WhatsApp took it)."""
    record = await rig.record(job_id)
    due = record.attempts[-1].at + timedelta(seconds=31)
    await rig.work(until=max(due, rig.clock.now()), step=5)


async def _report_failed(rig: Rig, job_id: str) -> None:
    await rig.report(job_id, "failed")
    await rig.work()


async def _dlr_times_out(rig: Rig, job_id: str) -> None:
    """The worker runs just past the first attempt's DLR time-out (5 minutes)."""
    record = await rig.record(job_id)
    due = record.attempts[-1].at + timedelta(minutes=5, seconds=1)
    await rig.work(until=max(due, rig.clock.now()), step=30)


async def _worker_to(rig: Rig, job_id: str) -> None:
    await rig.work(until=rig.clock.now() + timedelta(minutes=11), step=5)


PATHS = [
    Path("scheduled", _scheduled, _worker_to, "sms_a"),
    Path("d7_retry", _retried, _worker_to, "sms_a", retry=True),
    Path("d27_paced", _paced, _worker_to, "sms_a", paced=True),
    Path("resend_after_crash", _crashed_while_paced, _worker_to, "sms_a", cancelable=False,
         crash=True),
    Path("fallback_after_failed_report", _after_failed_report, _report_failed, "sms_b",
         waiting=False),
    Path("fallback_after_dlr_timeout", _after_failed_report, _dlr_times_out, "sms_b",
         waiting=False),
    Path("escalation_to_another_channel", _escalating, _escalation_due, "sms_a", waiting=False),
]  # fmt: skip


def _id(path: Path) -> str:
    return path.name


async def _wait_past_ttl(rig: Rig) -> None:
    """Past the queue TTL of a message due now, or at a ``send_at`` ten minutes ahead."""
    rig.clock.advance((TTL + timedelta(minutes=11)).total_seconds())


@pytest.mark.parametrize("path", PATHS, ids=_id)
async def test_a_recipient_suppressed_meanwhile_is_not_handed_over(path: Path) -> None:
    rig = await make_rig(retry=path.retry, paced=path.paced, crash=path.crash)
    job_id = await path.start(rig)
    calls = rig.providers[path.to].called_for(job_id)

    await rig.suppress()
    await path.hand_over(rig, job_id)

    record = await rig.record(job_id)
    assert (record.status, record.error and record.error.code) == ("failed", "RECIPIENT_SUPPRESSED")
    assert rig.providers[path.to].called_for(job_id) == calls


@pytest.mark.parametrize("path", [p for p in PATHS if p.cancelable and p.waiting], ids=_id)
async def test_a_message_canceled_meanwhile_is_not_handed_over(path: Path) -> None:
    rig = await make_rig(retry=path.retry, paced=path.paced, crash=path.crash)
    job_id = await path.start(rig)
    calls = rig.providers[path.to].called_for(job_id)

    await rig.messenger.cancel_message(rig.principal, job_id)
    await path.hand_over(rig, job_id)

    record = await rig.record(job_id)
    assert (record.status, record.error) == ("failed", CANCELED)
    assert rig.providers[path.to].called_for(job_id) == calls


@pytest.mark.parametrize("path", [p for p in PATHS if p.waiting], ids=_id)
async def test_a_waiting_message_past_its_queue_ttl_is_not_handed_over(path: Path) -> None:
    rig = await make_rig(retry=path.retry, paced=path.paced, crash=path.crash)
    job_id = await path.start(rig)
    calls = rig.providers[path.to].called_for(job_id)
    rig.providers[path.to].answers = ["unavailable"] * 100  # D7 keeps trying until the TTL

    await _wait_past_ttl(rig)
    await path.hand_over(rig, job_id)

    record = await rig.record(job_id)
    assert record.status == "failed"
    assert record.error is not None
    if path.retry:  # what D7's tries said, as the 502 would have
        assert record.error.code == "PROVIDER_UNAVAILABLE"
        assert "sms_a" in record.error.message
    else:
        assert record.error.code == "QUEUE_EXPIRED"
        assert rig.providers[path.to].called_for(job_id) == calls


@pytest.mark.parametrize("path", [p for p in PATHS if not p.waiting], ids=_id)
async def test_a_fallback_after_a_provider_took_it_has_no_queue_ttl(path: Path) -> None:
    rig = await make_rig()
    job_id = await path.start(rig)

    await _wait_past_ttl(rig)
    await path.hand_over(rig, job_id)

    record = await rig.record(job_id)
    assert (record.status, record.provider) == ("sent", path.to)


@pytest.mark.parametrize("path", PATHS, ids=_id)
async def test_quiet_hours_that_began_meanwhile_hold_the_hand_over_until_they_end(
    path: Path,
) -> None:
    rig = await make_rig(retry=path.retry, paced=path.paced, crash=path.crash)
    job_id = await path.start(rig)
    calls = rig.providers[path.to].called_for(job_id)

    await rig.quiet()
    rig.clock.advance((timedelta(minutes=10, seconds=1)).total_seconds())  # 21:00 and on
    await path.hand_over(rig, job_id)

    held = await rig.record(job_id)
    assert held.status == "queued"
    assert held.held_until == MORNING
    assert rig.providers[path.to].called_for(job_id) == calls

    await rig.work(until=MORNING - timedelta(seconds=1), step=600)
    assert rig.providers[path.to].called_for(job_id) == calls  # still quiet at 08:59:59
    await rig.work(until=MORNING + timedelta(seconds=10))

    record = await rig.record(job_id)
    assert (record.status, record.provider) == ("sent", path.to)
    assert rig.providers[path.to].called_for(job_id) == calls + 1
    assert record.attempts[-1].at >= MORNING


async def test_a_held_message_can_be_canceled_before_the_window_ends() -> None:
    rig = await make_rig(retry=True)
    job_id = await _retried(rig)
    await rig.quiet()
    rig.clock.advance(601)
    await rig.work(until=rig.clock.now() + timedelta(seconds=30))
    assert (await rig.record(job_id)).status == "queued"

    await rig.messenger.cancel_message(rig.principal, job_id)
    await rig.work(until=MORNING + timedelta(seconds=10), step=3600)

    record = await rig.record(job_id)
    assert (record.status, record.error) == ("failed", CANCELED)
    assert rig.providers["sms_a"].called_for(job_id) == 1  # the first, unavailable, try


# ------------------------------------------------------------ the fallback hop at submit


@pytest.mark.parametrize("first", ["reject", "unavailable"])
@pytest.mark.parametrize("bulk", [False, True], ids=["single", "bulk"])
async def test_a_stop_during_the_first_call_keeps_the_fallback_hop_from_the_recipient(
    bulk: bool, first: str
) -> None:
    rig = await make_rig()
    sms_a, sms_b = rig.providers["sms_a"], rig.providers["sms_b"]
    sms_a.answers, sms_a.during = [first], rig.suppress

    if bulk:
        answer = await rig.messenger.send_bulk(
            rig.principal, {"items": [{"to": TO, "body": "x"}], "fallback": ["sms_b"]}
        )
        job_id, status = answer.results[0].job_id, answer.results[0].status
    else:
        sent = await rig.messenger.send(
            rig.principal, {"to": TO, "body": "x", "fallback": ["sms_b"]}
        )
        job_id, status = sent.job_id, sent.status

    assert status == "failed"
    assert sms_b.called_for(job_id) == 0
    record = await rig.record(job_id)
    assert record.error is not None and record.error.code == "RECIPIENT_SUPPRESSED"
    status = "rejected" if first == "reject" else "unavailable"
    assert [(a.provider, a.status) for a in record.attempts] == [("sms_a", status)]


async def test_a_quiet_window_beginning_during_the_first_call_holds_the_fallback_hop() -> None:
    rig = await make_rig()
    await rig.quiet()
    rig.clock.advance((datetime(2026, 12, 1, 17, 59, 59, tzinfo=UTC) - rig.clock.now()).seconds)
    sms_a, sms_b = rig.providers["sms_a"], rig.providers["sms_b"]
    sms_a.answers, sms_a.takes = ["reject"], 2.0  # answers at 21:00:01

    sent = await rig.messenger.send(rig.principal, {"to": TO, "body": "x", "fallback": ["sms_b"]})

    assert (sent.status, sent.provider) == ("queued", "sms_b")
    assert sms_b.called_for(sent.job_id) == 0
    await rig.work(until=MORNING + timedelta(seconds=5), step=3600)
    record = await rig.record(sent.job_id)
    assert (record.status, record.provider) == ("sent", "sms_b")
    assert sms_b.called_for(sent.job_id) == 1


async def test_a_message_the_gate_stops_gives_its_quota_unit_back() -> None:
    rig = await make_rig(retry=True)
    await rig.messenger.workspaces.set_monthly_quota(rig.workspace_id, 100)
    used = await rig.messenger.store.quota_used(rig.workspace_id, "2026-12")
    job_id = await _retried(rig)
    assert await rig.messenger.store.quota_used(rig.workspace_id, "2026-12") == used + 1

    await rig.suppress()
    await _worker_to(rig, job_id)

    assert (await rig.record(job_id)).status == "failed"
    assert await rig.messenger.store.quota_used(rig.workspace_id, "2026-12") == used


# ------------------------------------------------------------------------ the gate alone


def _record(**changes: Any) -> MessageRecord:
    base = MessageRecord(
        job_id="msg_1", workspace_id="ws_1", livemode=True, status="queued", to=TO,
        channel="sms", provider="sms_a", created_at=START, updated_at=START, text="x",
    )  # fmt: skip
    return MessageRecord(**{**{f: getattr(base, f) for f in base.__dataclass_fields__}, **changes})


class Consent:
    def __init__(self, refuse: bool) -> None:
        self.refuse = refuse
        self.asked: list[str] = []

    async def refusals(
        self,
        records: Sequence[MessageRecord],
        connection: Connection,
        *,
        now: datetime,
        workspace: Workspace,
    ) -> list[ErrorInfo | None]:
        self.asked += [r.job_id for r in records]
        error = ErrorInfo("IYS_CONSENT_MISSING", "No consent.")
        return [error if self.refuse else None for _ in records]


async def _verdict(
    record: MessageRecord,
    *,
    suppressed: bool = False,
    consent: Consent | None = None,
    quiet: QuietHours | None = None,
    now: datetime = START,
    channel: str = "sms",
) -> object:
    store = MemoryStore()
    workspace = Workspace("ws_1", "Acme", START, queue_ttl=TTL, quiet_hours=quiet)
    await store.create_workspace(workspace)
    if suppressed:
        from unified_messaging.suppressions._rules import opt_out_entry

        await store.add_suppression(
            opt_out_entry("ws_1", True, channel, record.to, "STOP", now=START)  # type: ignore[arg-type]
        )
    connection = Connection(
        id="con_1", workspace_id="ws_1", provider="sms_a" if channel == "sms" else "chatbot",
        created_at=START, credentials="", is_default=True,
    )  # fmt: skip
    gate = HandOverGate(workspace, store, ManualClock(now), consent=consent or Consent(False))
    hop = Hop(connection, None, "ACME")  # type: ignore[arg-type]
    (verdict,) = await gate.verdicts([job_for(record)], hop)
    return verdict


async def test_the_gate_asks_its_rules_in_order_and_stops_at_the_first() -> None:
    canceled = _record(status="failed", error=CANCELED)
    consent = Consent(refuse=True)
    # Canceled before suppressed, suppressed before consent, consent before quiet hours.
    assert await _verdict(canceled, suppressed=True, consent=consent) == Stop(CANCELED)
    stopped = await _verdict(_record(), suppressed=True, consent=consent, quiet=QUIET)
    assert isinstance(stopped, Stop) and stopped.error.code == "RECIPIENT_SUPPRESSED"
    assert consent.asked == []  # never asked for a message an earlier rule stopped
    late = START + TTL + timedelta(seconds=1)
    expired = await _verdict(_record(), consent=consent, now=late)
    assert isinstance(expired, Stop) and expired.error.code == "QUEUE_EXPIRED"
    in_window = datetime(2026, 12, 1, 18, 30, tzinfo=UTC)
    refused = await _verdict(_record(), consent=consent, quiet=QUIET, now=in_window)
    assert isinstance(refused, Stop) and refused.error.code == "IYS_CONSENT_MISSING"
    held = await _verdict(_record(), quiet=QUIET, now=in_window)
    assert held == HoldUntil(MORNING)
    assert await _verdict(_record(ignore_quiet_hours=True), quiet=QUIET, now=in_window) == Go()


async def test_admissions_look_at_the_list_stands_for_the_gates_first_look_only() -> None:
    """Admission read the suppression list for a send it hands over at once: the gate's first
    look for that channel is skipped (one read fewer per send), and only the first."""
    from unified_messaging.suppressions._rules import opt_out_entry

    store = MemoryStore()
    workspace = Workspace("ws_1", "Acme", START, queue_ttl=TTL)
    await store.create_workspace(workspace)
    await store.add_suppression(opt_out_entry("ws_1", True, "sms", TO, "STOP", now=START))
    connection = Connection(
        id="con_1", workspace_id="ws_1", provider="sms_a", created_at=START, credentials="",
        is_default=True,
    )  # fmt: skip
    gate = HandOverGate(workspace, store, ManualClock(START), consent=Consent(False))
    hop = Hop(connection, None, "ACME")  # type: ignore[arg-type]
    job = job_for(_record())
    other_channel = job_for(_record())
    job.suppression_checked, other_channel.suppression_checked = "sms", "telegram"

    first = await gate.verdicts([job, other_channel], hop)
    again = await gate.verdicts([job], hop)

    # The list says no to TO (admission would have refused it): the flag alone let it pass.
    assert first[0] == Go()
    assert isinstance(first[1], Stop)  # checked on another channel: looked up here
    assert first[1].error.code == "RECIPIENT_SUPPRESSED"
    assert (job.suppression_checked, other_channel.suppression_checked) == (None, None)
    assert isinstance(again[0], Stop)  # every later hand-over looks again


async def test_the_queue_ttl_counts_from_the_end_of_the_last_hold() -> None:
    held = _record(held_until=MORNING)
    assert await _verdict(held, now=MORNING + TTL - timedelta(seconds=1)) == Go()
    stopped = await _verdict(held, now=MORNING + TTL + timedelta(seconds=1))
    assert isinstance(stopped, Stop) and stopped.error.code == "QUEUE_EXPIRED"


@pytest.mark.parametrize("listed", ["@ShopNews", "@shopnews", "@SHOPNEWS"])
@pytest.mark.parametrize("sent_to", ["@shopnews", "@ShopNews"])
async def test_a_telegram_username_is_suppressed_whatever_its_case(
    listed: str, sent_to: str
) -> None:
    messenger = Messenger(clock=ManualClock(START))
    workspace = await messenger.workspaces.create("Acme", recipient_limit=None)
    await messenger.connections.add(workspace.id, "chatbot")
    auth = await messenger.principal(workspace.id, livemode=False)
    await messenger.suppressions.add(auth, {"channel": "chatbot", "recipient": listed})

    with pytest.raises(RecipientSuppressed):  # at admission
        await messenger.send(auth, {"to": sent_to, "body": "x"})
    waiting = await messenger.send(  # and at the gate, for a message that waited
        auth,
        {"to": "@OtherUser", "body": "x", "send_at": (START + timedelta(minutes=1)).isoformat()},
    )
    await messenger.suppressions.add(auth, {"channel": "chatbot", "recipient": "@otheruser"})
    messenger.clock.advance(61)  # type: ignore[attr-defined]
    await messenger.worker().run_until_idle()
    record = await messenger.get_message(auth, waiting.job_id)
    assert (record.status, record.error and record.error.code) == ("failed", "RECIPIENT_SUPPRESSED")
    page = await messenger.suppressions.list(auth, {"channel": "chatbot"})
    assert sorted(e.recipient for e in page.data) == ["@otheruser", listed.lower()]
