"""The simulator: magic recipients, provider-like validation, planned reports, push format."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from unified_messaging._clock import ManualClock
from unified_messaging._domain import ErrorInfo
from unified_messaging._errors import RequestInvalid
from unified_messaging._types import ProviderCode
from unified_messaging.providers.base import (
    PROFILES,
    InboundCallback,
    ProviderAdapter,
    ProviderReport,
    ProviderTemplate,
    SubmitRequest,
)
from unified_messaging.providers.simulator import (
    MAGIC_SUFFIXES,
    SimulatedSubmission,
    Simulator,
    SimulatorSettings,
    magic_suffix,
)

NORMAL_NUMBER = "+905321234567"
NUMBER_CODES: tuple[ProviderCode, ...] = ("sms_a", "bizchat")


def magic(suffix: int) -> str:
    return f"+9055500000{suffix:02d}"


def request(
    to: str = NORMAL_NUMBER,
    *,
    job_id: str = "job_1",
    text: str = "hello",
    sender: str | None = "ACME",
    attempt: int = 0,
    template: ProviderTemplate | None = None,
) -> SubmitRequest:
    return SubmitRequest(
        job_id=job_id, to=to, text=text, sender=sender, attempt=attempt, template=template
    )


def callback(body: bytes | str) -> InboundCallback:
    raw = body.encode() if isinstance(body, str) else body
    return InboundCallback(method="POST", headers={}, query={}, body=raw)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def outbox() -> list[SimulatedSubmission]:
    return []


class Factory:
    """Builds a simulator of any code on the shared clock, recording into the shared outbox."""

    def __init__(self, clock: ManualClock, outbox: list[SimulatedSubmission]) -> None:
        self.clock = clock
        self.outbox = outbox

    def __call__(self, code: ProviderCode, delay: float = 0) -> Simulator:
        settings = SimulatorSettings(report_delay=timedelta(seconds=delay))
        return Simulator(code, clock=self.clock, settings=settings, record=self.outbox.append)


@pytest.fixture
def sim_for(clock: ManualClock, outbox: list[SimulatedSubmission]) -> Factory:
    return Factory(clock, outbox)


@pytest.fixture
def sms(sim_for: Factory) -> Simulator:
    return sim_for("sms_a")


@pytest.fixture
def chat(sim_for: Factory) -> Simulator:
    return sim_for("chatbot")


# --- the adapter surface ------------------------------------------------------------------------


def test_simulator_satisfies_the_provider_adapter_protocol(sms: Simulator) -> None:
    assert isinstance(sms, ProviderAdapter)


@pytest.mark.parametrize("code", list(PROFILES))
def test_simulator_takes_code_and_max_batch_from_the_profile(
    sim_for: Factory, code: ProviderCode
) -> None:
    sim = sim_for(code)
    assert sim.code == code
    assert sim.max_batch == PROFILES[code].max_batch


def test_unknown_provider_code_is_refused(clock: ManualClock) -> None:
    with pytest.raises(ValueError, match="unknown provider code"):
        Simulator("sms_z", clock=clock)  # type: ignore[arg-type]


def test_default_report_delay_is_two_seconds() -> None:
    assert SimulatorSettings().report_delay == timedelta(seconds=2)


def test_negative_report_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        SimulatorSettings(report_delay=timedelta(seconds=-1))


async def test_aclose_is_a_no_op(sms: Simulator) -> None:
    await sms.aclose()
    assert (await sms.submit(request())).kind == "accepted"


# --- magic_suffix -------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", sorted(MAGIC_SUFFIXES))
def test_magic_suffix_reads_each_magic_ending(suffix: int) -> None:
    assert magic_suffix(magic(suffix)) == suffix


@pytest.mark.parametrize(
    "to",
    [NORMAL_NUMBER, "+905550000000", "+905550000009", "+905550000014", "+905550000099",
     "+9055500000011", "+90555000001", "05550000001", "0", "@unreachable_bot_user", ""],
)  # fmt: skip
def test_magic_suffix_is_none_for_ordinary_recipients(to: str) -> None:
    assert magic_suffix(to) is None


# --- magic numbers (SMS codes and bizchat) ------------------------------------------------------


@pytest.mark.parametrize("code", NUMBER_CODES)
async def test_normal_number_is_accepted_and_reported_delivered(
    sim_for: Factory, code: ProviderCode
) -> None:
    sim = sim_for(code)
    outcome = await sim.submit(request())
    assert outcome.kind == "accepted"
    assert outcome.error is None
    assert [r.status for r in await sim.poll_reports([outcome.provider_message_id or ""])] == [
        "delivered"
    ]


@pytest.mark.parametrize("code", NUMBER_CODES)
async def test_magic_01_is_rejected_by_the_provider(sim_for: Factory, code: ProviderCode) -> None:
    outcome = await sim_for(code).submit(request(magic(1)))
    assert outcome.kind == "rejected"
    assert outcome.provider_message_id is None
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_REJECTED"


@pytest.mark.parametrize("code", NUMBER_CODES)
async def test_magic_02_fails_the_recipient_for_missing_iys_consent(
    sim_for: Factory, code: ProviderCode
) -> None:
    outcome = await sim_for(code).submit(request(magic(2)))
    assert outcome.kind == "recipient_failed"
    assert outcome.error is not None
    assert outcome.error.code == "IYS_CONSENT_MISSING"


async def test_the_mutlucell_simulator_refuses_a_commercial_message_as_its_adapter_does(
    sim_for: Factory,
) -> None:
    # D2: the simulator validates as the adapter; sms_d documents no IYS marking.
    commercial = replace(request(), iys_mode="commercial_individual")
    outcome = await sim_for("sms_d").submit(commercial)
    assert (outcome.kind, outcome.error and outcome.error.code) == (
        "rejected",
        "IYS_NOT_CONFIGURED",
    )
    assert (await sim_for("sms_a").submit(commercial)).kind == "accepted"


@pytest.mark.parametrize("code", NUMBER_CODES)
async def test_magic_03_times_out_as_unavailable_without_waiting(
    sim_for: Factory, clock: ManualClock, code: ProviderCode
) -> None:
    before = clock.now()
    outcome = await sim_for(code).submit(request(magic(3)))
    assert outcome.kind == "unavailable"
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_UNAVAILABLE"
    assert "time-out" in outcome.error.message
    assert clock.now() == before


@pytest.mark.parametrize("code", NUMBER_CODES)
@pytest.mark.parametrize(
    ("suffix", "status"), [(4, "expired"), (5, "rejected"), (6, "failed"), (7, "unknown")]
)
async def test_magic_04_to_07_are_accepted_then_reported_as_planned(
    sim_for: Factory, code: ProviderCode, suffix: int, status: str
) -> None:
    sim = sim_for(code)
    outcome = await sim.submit(request(magic(suffix)))
    assert outcome.kind == "accepted"
    reports = await sim.poll_reports([outcome.provider_message_id or ""])
    assert [r.status for r in reports] == [status]


@pytest.mark.parametrize("code", NUMBER_CODES)
async def test_magic_08_is_accepted_and_never_reported(
    sim_for: Factory, clock: ManualClock, code: ProviderCode
) -> None:
    sim = sim_for(code, delay=2)
    outcome = await sim.submit(request(magic(8)))
    assert outcome.kind == "accepted"
    clock.advance(timedelta(days=30))
    assert await sim.poll_reports([outcome.provider_message_id or ""]) == []
    assert sim.due_reports() == []
    assert sim.planned_report(outcome.provider_message_id or "") is None


@pytest.mark.parametrize("code", NUMBER_CODES)
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("attempt", [0, 1, 2, 3])
async def test_magic_1n_rejects_the_first_n_attempts_then_delivers(
    sim_for: Factory, code: ProviderCode, n: int, attempt: int
) -> None:
    sim = sim_for(code)
    outcome = await sim.submit(request(magic(10 + n), attempt=attempt))
    if attempt < n:
        assert outcome.kind == "rejected"
        assert outcome.error is not None
        assert outcome.error.code == "PROVIDER_REJECTED"
    else:
        assert outcome.kind == "accepted"
        reports = await sim.poll_reports([outcome.provider_message_id or ""])
        assert [r.status for r in reports] == ["delivered"]


@pytest.mark.parametrize("suffix", [0, 9, 10, 14, 99])
async def test_unassigned_endings_of_the_magic_block_behave_normally(
    sms: Simulator, suffix: int
) -> None:
    outcome = await sms.submit(request(magic(suffix)))
    assert outcome.kind == "accepted"
    assert sms.planned_report(outcome.provider_message_id or "") is not None


async def test_bizchat_accepts_a_foreign_number(sim_for: Factory) -> None:
    outcome = await sim_for("bizchat").submit(request("+14155550100", sender=None))
    assert outcome.kind == "accepted"


# --- chatbot ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("to", "message"),
    [
        ("0", "Bad Request: chat not found"),
        ("@unreachable_bot_user", "Forbidden: bot can't initiate conversation with a user"),
    ],
)
async def test_chatbot_unreachable_ids_fail_the_recipient(
    chat: Simulator, to: str, message: str
) -> None:
    outcome = await chat.submit(request(to, sender=None))
    assert outcome.kind == "recipient_failed"
    assert outcome.error == ErrorInfo("CHAT_UNREACHABLE", message)


@pytest.mark.parametrize("to", ["123456789", "-1001234567890", "@some_channel"])
async def test_chatbot_accepts_other_chats_without_planning_a_report(
    chat: Simulator, clock: ManualClock, to: str
) -> None:
    outcome = await chat.submit(request(to, sender=None))
    assert outcome.kind == "accepted"
    clock.advance(timedelta(days=1))
    assert chat.planned_report(outcome.provider_message_id or "") is None
    assert chat.due_reports() == []


async def test_chatbot_ignores_the_sender(chat: Simulator) -> None:
    outcome = await chat.submit(request("123456789", sender="not a valid header!"))
    assert outcome.kind == "accepted"


async def test_chatbot_does_not_treat_magic_numbers_as_magic(chat: Simulator) -> None:
    outcome = await chat.submit(request("905550000001", sender=None))
    assert outcome.kind == "accepted"


# --- validation before the magic ----------------------------------------------------------------


@pytest.mark.parametrize("sender", [None, "ACMEINDUSTRY", "AC!ME", "A"])
async def test_sms_rejects_a_bad_header(sms: Simulator, sender: str | None) -> None:
    outcome = await sms.submit(request(sender=sender))
    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_REJECTED"
    assert "header" in outcome.error.message


@pytest.mark.parametrize("sender", ["ACME", "ACME SHOP", "08501234567", "+908501234567"])
async def test_sms_accepts_a_valid_header(sms: Simulator, sender: str) -> None:
    assert (await sms.submit(request(sender=sender))).kind == "accepted"


async def test_bizchat_needs_no_sender(sim_for: Factory) -> None:
    assert (await sim_for("bizchat").submit(request(sender=None))).kind == "accepted"


async def test_validation_comes_before_the_magic(sms: Simulator) -> None:
    outcome = await sms.submit(request(magic(2), sender=None))
    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "PROVIDER_REJECTED"


@pytest.mark.parametrize(("code", "to"), [("sms_a", NORMAL_NUMBER), ("chatbot", "123456789")])
async def test_text_of_the_maximum_length_is_accepted(
    sim_for: Factory, code: ProviderCode, to: str
) -> None:
    text = "x" * PROFILES[code].max_text_length
    assert (await sim_for(code).submit(request(to, text=text))).kind == "accepted"


@pytest.mark.parametrize(("code", "to"), [("sms_a", NORMAL_NUMBER), ("chatbot", "123456789")])
async def test_text_one_over_the_maximum_length_is_rejected(
    sim_for: Factory, code: ProviderCode, to: str
) -> None:
    text = "x" * (PROFILES[code].max_text_length + 1)
    outcome = await sim_for(code).submit(request(to, text=text))
    assert outcome.kind == "rejected"
    assert outcome.error is not None
    assert outcome.error.code == "BODY_TOO_LONG"  # as the live adapters say it


@pytest.mark.parametrize("code", ["sms_b", "sms_c"])
async def test_text_over_seven_parts_is_too_long_as_the_live_adapter_says(
    sim_for: Factory, code: ProviderCode
) -> None:
    simulator = sim_for(code)
    assert (await simulator.submit(request(text="a" * 1071))).kind == "accepted"  # 7 parts
    outcome = await simulator.submit(request(text="a" * 1072))
    assert (outcome.kind, outcome.error and outcome.error.code) == ("rejected", "BODY_TOO_LONG")


async def test_empty_text_is_rejected(sms: Simulator) -> None:
    outcome = await sms.submit(request(text=""))
    assert outcome.kind == "rejected"


async def test_bizchat_provider_template_needs_no_text(sim_for: Factory) -> None:
    template = ProviderTemplate("order_ready", "tr", ("42",))
    outcome = await sim_for("bizchat").submit(request(text="", template=template))
    assert outcome.kind == "accepted"


@pytest.mark.parametrize(
    ("code", "to"),
    [
        ("sms_a", "+902121234567"),
        ("sms_a", "05321234567"),
        ("sms_a", "+90532123456"),
        ("sms_a", "+14155550100"),
        ("bizchat", "+1234567"),
        ("bizchat", "+1234567890123456"),
        ("bizchat", "905321234567"),
        ("chatbot", "@abcd"),
        ("chatbot", "@" + "a" * 33),
        ("chatbot", "@bad-name"),
        ("chatbot", "12a"),
        ("chatbot", ""),
    ],
)
async def test_recipient_of_the_wrong_shape_is_invalid(
    sim_for: Factory, code: ProviderCode, to: str
) -> None:
    outcome = await sim_for(code).submit(request(to))
    assert outcome.kind == "recipient_failed"
    assert outcome.error is not None
    assert outcome.error.code == "INVALID_RECIPIENT"


# --- provider message ids -----------------------------------------------------------------------


async def test_provider_message_id_is_deterministic_per_job_and_attempt(sms: Simulator) -> None:
    first = await sms.submit(request(job_id="job_7", attempt=0))
    second = await sms.submit(request(job_id="job_7", attempt=1))
    assert first.provider_message_id == "sim-sms_a-job_7-0"
    assert second.provider_message_id == "sim-sms_a-job_7-1"


# --- planned reports ----------------------------------------------------------------------------


async def test_report_is_not_due_before_the_delay(sim_for: Factory, clock: ManualClock) -> None:
    sim = sim_for("sms_a", delay=2)
    message_id = (await sim.submit(request())).provider_message_id or ""
    clock.advance(timedelta(seconds=2) - timedelta(microseconds=1))
    assert await sim.poll_reports([message_id]) == []
    assert sim.due_reports() == []


async def test_report_is_due_after_the_delay(sim_for: Factory, clock: ManualClock) -> None:
    sim = sim_for("sms_a", delay=2)
    submitted_at = clock.now()
    message_id = (await sim.submit(request(magic(6)))).provider_message_id or ""
    clock.advance(2)
    assert await sim.poll_reports([message_id]) == [
        ProviderReport(
            provider_message_id=message_id,
            status="failed",
            provider_status="UNDELIVERED",
            occurred_at=submitted_at + timedelta(seconds=2),
            error=ErrorInfo(
                "RECIPIENT_UNREACHABLE", "The handset could not be reached (simulated)."
            ),
            to=magic(6),
        )
    ]


@pytest.mark.parametrize(
    ("suffix", "provider_status", "error_code"),
    [(None, "DELIVERED", None), (4, "EXPIRED", None), (5, "REJECTED", "PROVIDER_REJECTED"),
     (6, "UNDELIVERED", "RECIPIENT_UNREACHABLE"), (7, "UNKNOWN", None)],
)  # fmt: skip
async def test_report_carries_a_provider_word_and_an_error_for_failures(
    sms: Simulator, suffix: int | None, provider_status: str, error_code: str | None
) -> None:
    to = NORMAL_NUMBER if suffix is None else magic(suffix)
    await sms.submit(request(to))
    [report] = sms.due_reports()
    assert report.provider_status == provider_status
    assert (report.error.code if report.error else None) == error_code


async def test_report_is_returned_once(sms: Simulator) -> None:
    message_id = (await sms.submit(request())).provider_message_id or ""
    assert len(await sms.poll_reports([message_id])) == 1
    assert await sms.poll_reports([message_id]) == []
    assert sms.due_reports() == []


async def test_report_polled_is_not_returned_again_by_due_reports(sms: Simulator) -> None:
    message_id = (await sms.submit(request())).provider_message_id or ""
    await sms.poll_reports([message_id])
    assert sms.due_reports() == []


async def test_poll_ignores_unknown_ids(sms: Simulator) -> None:
    message_id = (await sms.submit(request())).provider_message_id or ""
    reports = await sms.poll_reports(["nope", message_id, "sim-sms_a-other-0"])
    assert [r.provider_message_id for r in reports] == [message_id]


async def test_poll_returns_only_the_ids_asked_for(sms: Simulator) -> None:
    first = (await sms.submit(request(job_id="a"))).provider_message_id or ""
    await sms.submit(request(job_id="b"))
    assert [r.provider_message_id for r in await sms.poll_reports([first])] == [first]
    assert [r.provider_message_id for r in sms.due_reports()] == ["sim-sms_a-b-0"]


async def test_due_reports_returns_every_due_report_in_due_order(
    sim_for: Factory, clock: ManualClock
) -> None:
    sim = sim_for("sms_a", delay=2)
    await sim.submit(request(job_id="a"))
    clock.advance(1)
    await sim.submit(request(magic(4), job_id="b"))
    clock.advance(1)
    await sim.submit(request(job_id="c"))
    clock.advance(1)
    reports = sim.due_reports()
    assert [(r.provider_message_id, r.status) for r in reports] == [
        ("sim-sms_a-a-0", "delivered"),
        ("sim-sms_a-b-0", "expired"),
    ]
    assert sim.due_reports() == []
    clock.advance(1)
    assert [r.provider_message_id for r in sim.due_reports()] == ["sim-sms_a-c-0"]


async def test_planned_report_tells_status_and_due_time_until_returned(
    sim_for: Factory, clock: ManualClock
) -> None:
    sim = sim_for("sms_a", delay=2)
    message_id = (await sim.submit(request(magic(7)))).provider_message_id or ""
    assert sim.planned_report(message_id) == ("unknown", clock.now() + timedelta(seconds=2))
    clock.advance(2)
    sim.due_reports()
    assert sim.planned_report(message_id) is None


async def test_planned_report_is_none_for_unknown_ids_and_refusals(sms: Simulator) -> None:
    await sms.submit(request(magic(1)))
    assert sms.planned_report("sim-sms_a-job_1-0") is None
    assert sms.planned_report("nope") is None


async def test_many_polled_reports_leave_due_reports_consistent(sms: Simulator) -> None:
    ids = [
        (await sms.submit(request(job_id=f"j{i}"))).provider_message_id or "" for i in range(300)
    ]
    polled = await sms.poll_reports(ids[:250])
    assert len(polled) == 250
    assert [r.provider_message_id for r in sms.due_reports()] == ids[250:]


# --- batches ------------------------------------------------------------------------------------


async def test_batch_returns_one_outcome_per_request_in_order(sms: Simulator) -> None:
    requests = [
        request(job_id="a"),
        request(magic(1), job_id="b"),
        request(magic(2), job_id="c"),
        request(magic(3), job_id="d"),
        request("+902121234567", job_id="e"),
    ]
    outcomes = await sms.submit_batch(requests)
    assert [o.kind for o in outcomes] == [
        "accepted",
        "rejected",
        "recipient_failed",
        "unavailable",
        "recipient_failed",
    ]
    assert outcomes[0].provider_message_id == "sim-sms_a-a-0"


async def test_batch_over_max_batch_is_refused(
    sms: Simulator, outbox: list[SimulatedSubmission]
) -> None:
    requests = [request(job_id=f"j{i}") for i in range(sms.max_batch + 1)]
    with pytest.raises(ValueError, match="at most 100"):
        await sms.submit_batch(requests)
    assert outbox == []


async def test_batch_of_exactly_max_batch_is_taken(sms: Simulator) -> None:
    requests = [request(job_id=f"j{i}") for i in range(sms.max_batch)]
    assert len(await sms.submit_batch(requests)) == sms.max_batch


async def test_empty_batch_gives_no_outcomes(sms: Simulator) -> None:
    assert await sms.submit_batch([]) == []


# --- recording ----------------------------------------------------------------------------------


async def test_every_submission_is_recorded_whatever_its_outcome(
    sms: Simulator, outbox: list[SimulatedSubmission]
) -> None:
    tos = [NORMAL_NUMBER, magic(1), magic(2), magic(3), "+902121234567"]
    for to in tos:
        await sms.submit(request(to))
    await sms.submit(request(sender=None))
    assert [s.to for s in outbox] == [*tos, NORMAL_NUMBER]
    assert [s.outcome for s in outbox] == [
        "accepted",
        "rejected",
        "recipient_failed",
        "unavailable",
        "recipient_failed",
        "rejected",
    ]


async def test_batch_submissions_are_each_recorded(
    sms: Simulator, outbox: list[SimulatedSubmission]
) -> None:
    await sms.submit_batch([request(job_id="a"), request(magic(1), job_id="b")])
    assert [(s.job_id, s.outcome) for s in outbox] == [("a", "accepted"), ("b", "rejected")]


async def test_recorded_submission_carries_the_request_and_its_outcome(
    sim_for: Factory, clock: ManualClock, outbox: list[SimulatedSubmission]
) -> None:
    template = ProviderTemplate("order_ready", "tr", ("42",))
    sim = sim_for("bizchat")
    req = SubmitRequest(
        job_id="job_9",
        to=magic(2),
        text="Your order is ready",
        attempt=1,
        template=template,
        workspace_id="ws_1",
        connection_id="conn_1",
    )
    outcome = await sim.submit(req)
    assert outbox == [
        SimulatedSubmission(
            job_id="job_9",
            workspace_id="ws_1",
            connection_id="conn_1",
            provider="bizchat",
            channel="bizchat",
            to=magic(2),
            text="Your order is ready",
            sender=None,
            attempt=1,
            outcome="recipient_failed",
            provider_message_id=None,
            error=outcome.error,
            at=clock.now(),
            template=template,
        )
    ]


async def test_recorded_submission_hides_the_text_from_repr(
    sms: Simulator, outbox: list[SimulatedSubmission]
) -> None:
    await sms.submit(request(text="secret code 918273"))
    assert "918273" not in repr(outbox[0])


async def test_simulator_without_record_still_submits(clock: ManualClock) -> None:
    sim = Simulator("sms_a", clock=clock)
    assert (await sim.submit(request())).kind == "accepted"


# --- parse_reports (the simulator's push format) ------------------------------------------------


def test_parse_reports_reads_one_object(sms: Simulator) -> None:
    body = json.dumps({"provider_message_id": "sim-sms_a-j-0", "status": "delivered"})
    assert sms.parse_reports(callback(body)) == [
        ProviderReport(provider_message_id="sim-sms_a-j-0", status="delivered",
                       provider_status="DELIVERED")
    ]  # fmt: skip


def test_parse_reports_reads_a_list_in_order(sms: Simulator) -> None:
    body = json.dumps(
        [
            {"provider_message_id": "a", "status": "failed", "provider_status": "NOT_DELIVERED"},
            {"provider_message_id": "b", "status": "pending", "extra": True},
        ]
    )
    reports = sms.parse_reports(callback(body))
    assert [(r.provider_message_id, r.status, r.provider_status) for r in reports] == [
        ("a", "failed", "NOT_DELIVERED"),
        ("b", "pending", "PENDING"),
    ]
    assert reports[0].error is not None
    assert reports[0].error.code == "RECIPIENT_UNREACHABLE"


@pytest.mark.parametrize("body", [b"", b"  \n", b"[]"])
def test_parse_reports_of_an_empty_body_is_empty(sms: Simulator, body: bytes) -> None:
    assert sms.parse_reports(callback(body)) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"not json", None),
        (b"\xff\xfe\xfa", None),
        (b"[" * 100_000, None),
        (b"42", "body"),
        (b'"delivered"', "body"),
        (b"[1]", "[0]"),
        (b'{"status": "delivered"}', "provider_message_id"),
        (b'{"provider_message_id": "", "status": "delivered"}', "provider_message_id"),
        (b'{"provider_message_id": 5, "status": "delivered"}', "provider_message_id"),
        (b'{"provider_message_id": "a"}', "status"),
        (b'{"provider_message_id": "a", "status": "DELIVERED"}', "status"),
        (b'{"provider_message_id": "a", "status": "read"}', "status"),
        (b'{"provider_message_id": "a", "status": ["delivered"]}', "status"),
        (b'{"provider_message_id": "a", "status": "failed", "provider_status": 3}',
         "provider_status"),
        (b'[{"provider_message_id": "a", "status": "delivered"}, {"status": "x"}]',
         "[1].provider_message_id"),
    ],
)  # fmt: skip
def test_parse_reports_refuses_what_it_cannot_read(
    sms: Simulator, body: bytes, field: str | None
) -> None:
    with pytest.raises(RequestInvalid) as caught:
        sms.parse_reports(callback(body))
    if field is not None:
        assert [d.field for d in caught.value.details] == [field]
