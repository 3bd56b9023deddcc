"""The SMS-pumping guard of Verify (D34) through the library: its settings (defaults,
bounds, the text form, audited changes), the ranges and addresses it counts, its buckets
shared through Redis by two messengers (two processes' worth), and Verify's metrics."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from unified_messaging import (
    ManualClock,
    Messenger,
    PrometheusMetrics,
    RequestInvalid,
    SyncMessenger,
    VerificationFraudSuspected,
    VerificationRateLimited,
)
from unified_messaging._access.redis_ratelimit import RedisRateLimiter
from unified_messaging.store.memory import MemoryStore
from unified_messaging.testing import Outbox, build_testbed, create_testbed
from unified_messaging.verifications import GuardSettings, Velocity, parse_velocity
from unified_messaging.verifications._guard_rules import address_range, number_range

REDIS_URL = os.environ.get("UM_TEST_REDIS_URL")


# ------------------------------------------------------------------------ settings


def test_the_settings_have_the_documented_defaults() -> None:
    settings = GuardSettings()

    assert str(settings.prefix_limit) == "20/10m"
    assert settings.prefix_digits == 6
    assert str(settings.address_limit) == "10/10m"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("20/10m", "20/10m"), ("5/1h", "5/1h"), ("3/90", "3/90s"), (" 7 / 1d ", "7/1d")],
)
def test_a_velocity_reads_its_text_form(text: str, expected: str) -> None:
    assert str(parse_velocity(text, "prefix_limit")) == expected


def test_off_turns_a_rule_off() -> None:
    assert parse_velocity("off", "address_limit") is None


@pytest.mark.parametrize(
    "text", ["", "20", "20/", "/10m", "0/10m", "20/0", "20/2d", "x/y", "-1/5m"]
)
def test_a_bad_velocity_is_refused_naming_its_setting(text: str) -> None:
    with pytest.raises(RequestInvalid) as caught:
        parse_velocity(text, "prefix_limit")
    assert caught.value.details[0].field == "prefix_limit"


@pytest.mark.parametrize("digits", [0, 2, 10, True, "6"])
def test_the_range_length_is_three_to_nine_digits(digits: object) -> None:
    with pytest.raises(RequestInvalid) as caught:
        GuardSettings(prefix_digits=digits)  # type: ignore[arg-type]
    assert caught.value.details[0].field == "prefix_digits"


def test_ranges_and_addresses() -> None:
    assert number_range("+905551234567", 6) == "+90555123"
    assert number_range("+905551234567", 3) == "+90555"
    assert number_range("+4915112345678", 6) == "+49151123"  # the country code is not split
    assert number_range("123456789", 6) is None  # a Telegram chat id
    assert number_range("@someone", 6) is None
    assert address_range(None) is None
    assert address_range("203.0.113.7") == "203.0.113.7"
    assert address_range("2001:db8:1:2:3:4:5:6") == "2001:db8:1:2::/64"
    assert address_range("::ffff:203.0.113.7") == "203.0.113.7"


async def test_a_change_is_stored_and_audited() -> None:
    bed = await create_testbed(clock=ManualClock())
    guard = bed.messenger.verifications.guard
    workspace_id = bed.workspace.id

    changed = await guard.update_settings(
        workspace_id, prefix_limit=parse_velocity("5/1h", "prefix_limit"), address_limit=None
    )

    assert await guard.settings(workspace_id) == changed
    assert (str(changed.prefix_limit), changed.address_limit) == ("5/1h", None)
    page = await bed.messenger.audit.list(action="workspace.verify_guard")
    assert [e.target for e in page.data] == [workspace_id]


async def test_a_bad_change_changes_nothing() -> None:
    bed = await create_testbed(clock=ManualClock())
    guard = bed.messenger.verifications.guard

    with pytest.raises(RequestInvalid):
        await guard.update_settings(bed.workspace.id, prefix_digits=12)

    assert await guard.settings(bed.workspace.id) == GuardSettings()


def test_the_sync_twin_reads_and_changes_the_settings() -> None:
    bed = build_testbed(clock=ManualClock())
    with SyncMessenger(bed.messenger) as sync:
        sync.verifications.guard.update_settings(bed.workspace.id, prefix_digits=4)
        assert sync.verifications.guard.settings(bed.workspace.id).prefix_digits == 4


# ------------------------------------------------------------------------ the refusal


async def test_a_refusal_is_a_verification_rate_limit_and_sends_nothing() -> None:
    bed = await create_testbed(clock=ManualClock())
    await bed.messenger.verifications.guard.update_settings(
        bed.workspace.id, prefix_limit=Velocity(1, timedelta(hours=1))
    )
    await bed.messenger.verifications.start(bed.principal, {"to": "+905551230001"})

    with pytest.raises(VerificationRateLimited) as caught:
        await bed.messenger.verifications.start(bed.principal, {"to": "+905551230002"})

    assert isinstance(caught.value, VerificationFraudSuspected)
    assert (caught.value.reason, caught.value.retry_after) == ("prefix", 3600.0)
    assert [m.to for m in bed.outbox] == ["+905551230001"]


# ------------------------------------------------------------------------ shared buckets


@pytest.fixture
async def redis_messengers() -> AsyncIterator[tuple[Messenger, Messenger]]:
    if REDIS_URL is None:
        pytest.skip("Redis: set UM_TEST_REDIS_URL=redis://127.0.0.1:6379/0")
    prefix = f"um:test:guard:{uuid.uuid4().hex}:"
    store = MemoryStore()
    limiters = [RedisRateLimiter(REDIS_URL, prefix=prefix) for _ in range(2)]
    messengers = [Messenger(store, rate_limiter=limiter) for limiter in limiters]
    try:
        yield messengers[0], messengers[1]
    finally:
        for limiter in limiters:
            await limiter.aclose()


async def test_two_processes_sharing_redis_share_one_range_bucket(
    redis_messengers: tuple[Messenger, Messenger],
) -> None:
    first, second = redis_messengers
    workspace = await first.workspaces.create("pumped")
    await first.connections.add(workspace.id, "sms_a", credentials={}, default_sender="ACME")
    await first.verifications.guard.update_settings(
        workspace.id, prefix_limit=Velocity(2, timedelta(hours=1))
    )
    test = await first.principal(workspace.id, livemode=False)

    await first.verifications.start(test, {"to": "+905551230001"})
    await second.verifications.start(test, {"to": "+905551230002"})
    with pytest.raises(VerificationFraudSuspected):
        await first.verifications.start(test, {"to": "+905551230003"})
    with pytest.raises(VerificationFraudSuspected):
        await second.verifications.start(test, {"to": "+905551230004"})


# ------------------------------------------------------------------------ metrics


async def test_starts_approvals_and_refusals_are_counted_with_the_time_to_approve() -> None:
    clock = ManualClock()
    metrics = PrometheusMetrics()
    outbox = Outbox()
    messenger = Messenger(clock=clock, metrics=metrics, on_simulated=outbox.record)
    workspace = await messenger.workspaces.create("metered")
    await messenger.connections.add(workspace.id, "sms_a", credentials={}, default_sender="ACME")
    test = await messenger.principal(workspace.id, livemode=False)
    verifications = messenger.verifications
    await verifications.guard.update_settings(
        workspace.id, prefix_limit=Velocity(2, timedelta(hours=1))
    )
    started = await verifications.start(test, {"to": "+905551230001"})
    await verifications.start(test, {"to": "+905551230002"})
    with pytest.raises(VerificationFraudSuspected):
        await verifications.start(test, {"to": "+905551230003"})
    clock.advance(timedelta(seconds=12))
    code = outbox.last_code("+905551230001")
    assert code is not None
    await verifications.check(test, started.id, {"code": code})
    await verifications.cancel(test, (await verifications.recent(test))[0].id)

    def value(name: str, **labels: str) -> float:
        found = metrics.registry.get_sample_value(name, labels)
        return 0.0 if found is None else found

    sms = {"channel": "sms", "mode": "test"}
    assert value("um_verifications_total", event="started", **sms) == 2
    assert value("um_verifications_total", event="approved", **sms) == 1
    assert value("um_verifications_total", event="canceled", **sms) == 1
    assert value("um_verification_refusals_total", reason="prefix") == 1
    assert value("um_verification_approve_seconds_count", **sms) == 1
    assert value("um_verification_approve_seconds_sum", **sms) == 12
    assert value("um_verification_approve_seconds_bucket", le="10.0", **sms) == 0
    assert value("um_verification_approve_seconds_bucket", le="15.0", **sms) == 1
