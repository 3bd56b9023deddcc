"""The SMS-pumping guard and the conversion stats of Verify (D34) over real HTTP, on SQLite
and PostgreSQL: a burst of starts to one number range, or for one client address, is 429
``VERIFICATION_FRAUD_SUSPECTED`` before any provider is paid (the local Verimor fake counts
what reached it), each refusal in the audit log; ``GET /v1/verifications/stats``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from _sql_apps import BACKENDS
from _support import bearer, error_code
from _verify_bed import Bed, verify_bed

from unified_messaging.verifications import Velocity

#: Ten numbers of the range +90 555 123 (the default 6 digits of the national number).
ONE_RANGE = [f"+90555123{n:04d}" for n in range(10)]


@pytest.fixture(params=BACKENDS)
async def bed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Bed]:
    async with verify_bed(request.param, tmp_path) as built:
        yield built


async def _guard(bed: Bed, **changes: object) -> None:
    await bed.messenger.verifications.guard.update_settings(bed.workspace_id, **changes)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ per prefix


async def test_a_burst_of_starts_to_one_range_is_refused_before_any_provider_call(
    bed: Bed,
) -> None:
    await _guard(bed, prefix_limit=Velocity(3, timedelta(minutes=10)))

    answers = [await bed.start(bed.live, to=to) for to in ONE_RANGE[:5]]

    assert [a.status_code for a in answers] == [201, 201, 201, 429, 429]
    refused = answers[3]
    assert error_code(refused) == "VERIFICATION_FRAUD_SUSPECTED"
    # 3 per 10 minutes refills one start every 200 s: the next one fits then.
    assert refused.headers["Retry-After"] == "200"
    assert len(bed.verimor.received) == 3  # the provider saw (and billed) three codes only
    listed = await bed.get(bed.live, "/v1/messages")
    assert len(listed.json()["data"]) == 3  # nothing stored for the refused ones
    for to in ONE_RANGE[3:5]:
        stored = await bed.messenger.store.pending_verification(bed.workspace_id, True, to)
        assert stored is None


async def test_another_range_and_the_other_mode_are_counted_apart(bed: Bed) -> None:
    await _guard(bed, prefix_limit=Velocity(1, timedelta(minutes=10)))
    assert (await bed.start(bed.live, to=ONE_RANGE[0])).status_code == 201
    assert (await bed.start(bed.live, to=ONE_RANGE[1])).status_code == 429

    other_range = await bed.start(bed.live, to="+905551240000")  # +90 555 124
    test_mode = await bed.start(bed.test, to=ONE_RANGE[2])

    assert (other_range.status_code, test_mode.status_code) == (201, 201)


async def test_the_range_length_is_a_setting(bed: Bed) -> None:
    await _guard(bed, prefix_limit=Velocity(1, timedelta(minutes=10)), prefix_digits=3)
    assert (await bed.start(bed.test, to="+905551230000")).status_code == 201

    same_operator_block = await bed.start(bed.test, to="+905559990000")  # +90 555
    elsewhere = await bed.start(bed.test, to="+905329990000")

    assert error_code(same_operator_block) == "VERIFICATION_FRAUD_SUSPECTED"
    assert elsewhere.status_code == 201


async def test_a_range_may_start_again_when_its_bucket_refills(bed: Bed) -> None:
    await _guard(bed, prefix_limit=Velocity(2, timedelta(minutes=10)))
    for to in ONE_RANGE[:2]:
        assert (await bed.start(bed.test, to=to)).status_code == 201
    refused = await bed.start(bed.test, to=ONE_RANGE[2])
    assert refused.status_code == 429

    bed.clock.advance(timedelta(seconds=int(refused.headers["Retry-After"])))

    assert (await bed.start(bed.test, to=ONE_RANGE[2])).status_code == 201
    assert (await bed.start(bed.test, to=ONE_RANGE[3])).status_code == 429


async def test_a_re_send_counts_in_its_range(bed: Bed) -> None:
    await _guard(bed, prefix_limit=Velocity(2, timedelta(hours=1)))
    first = await bed.start(bed.test, to=ONE_RANGE[0])
    bed.clock.advance(timedelta(seconds=31))  # past the re-send cooldown

    again = await bed.start(bed.test, to=ONE_RANGE[0])  # the same verification, re-sent
    third = await bed.start(bed.test, to=ONE_RANGE[1])

    assert again.json()["id"] == first.json()["id"]
    assert len(again.json()["sends"]) == 2
    assert error_code(third) == "VERIFICATION_FRAUD_SUSPECTED"


async def test_the_guard_counts_nothing_for_a_start_refused_by_another_rule(bed: Bed) -> None:
    await _guard(bed, prefix_limit=Velocity(2, timedelta(hours=1)))
    assert (await bed.start(bed.test, to=ONE_RANGE[0])).status_code == 201
    cooldown = await bed.start(bed.test, to=ONE_RANGE[0])  # inside the 30 s cooldown
    assert error_code(cooldown) == "VERIFICATION_RATE_LIMITED"

    assert (await bed.start(bed.test, to=ONE_RANGE[1])).status_code == 201


# ------------------------------------------------------------------------ per address


async def test_a_burst_from_one_client_address_is_refused(bed: Bed) -> None:
    await _guard(bed, address_limit=Velocity(2, timedelta(minutes=10)))
    numbers = ["+905321110000", "+905422220000", "+905533330000", "+905064440000"]

    answers = [await bed.start(bed.live, to=to, client_ip="203.0.113.7") for to in numbers[:3]]
    elsewhere = await bed.start(bed.live, to=numbers[3], client_ip="198.51.100.20")

    assert [a.status_code for a in answers] == [201, 201, 429]
    assert error_code(answers[2]) == "VERIFICATION_FRAUD_SUSPECTED"
    assert int(answers[2].headers["Retry-After"]) == 300
    assert elsewhere.status_code == 201
    assert len(bed.verimor.received) == 3


async def test_an_ipv6_client_is_counted_by_its_slash_64(bed: Bed) -> None:
    await _guard(bed, address_limit=Velocity(1, timedelta(minutes=10)))
    first = await bed.start(bed.test, to="+905321110000", client_ip="2001:db8:1:2::10")

    same_64 = await bed.start(bed.test, to="+905422220000", client_ip="2001:db8:1:2:ffff::1")
    next_64 = await bed.start(bed.test, to="+905533330000", client_ip="2001:db8:1:3::10")

    assert (first.status_code, same_64.status_code, next_64.status_code) == (201, 429, 201)


async def test_without_a_client_address_only_the_range_counts(bed: Bed) -> None:
    await _guard(bed, address_limit=Velocity(1, timedelta(minutes=10)))
    numbers = ["+905321110000", "+905422220000", "+905533330000"]

    answers = [await bed.start(bed.test, to=to) for to in numbers]

    assert [a.status_code for a in answers] == [201, 201, 201]


async def test_a_client_address_that_is_no_ip_is_a_400(bed: Bed) -> None:
    for bad in ("localhost", "256.1.1.1", "", "1.2.3.4/24", 7):
        answer = await bed.start(bed.test, client_ip=bad)
        assert answer.status_code == 400, bad
        assert answer.json()["error"]["details"][0]["field"] == "client_ip"


# ------------------------------------------------------------------------ the audit log


async def test_each_refusal_is_in_the_audit_log_with_the_key_and_the_callers_address(
    bed: Bed,
) -> None:
    await _guard(
        bed,
        prefix_limit=Velocity(1, timedelta(minutes=10)),
        address_limit=Velocity(1, timedelta(minutes=10)),
    )
    await bed.start(bed.test, to=ONE_RANGE[0], client_ip="203.0.113.7")
    await bed.start(bed.test, to=ONE_RANGE[1])  # the range
    await bed.start(bed.test, to="+905321110000", client_ip="203.0.113.7")  # the address

    page = await bed.messenger.audit.list(action="verification.fraud_refused")
    events = list(reversed(page.data))

    assert [e.target for e in events] == ["prefix:+90555123", "address:203.0.113.7"]
    assert all(e.workspace_id == bed.workspace_id for e in events)
    assert all(e.actor.startswith("api_key:key_") for e in events)
    assert all(e.client_address == "127.0.0.1" for e in events)


# ------------------------------------------------------------------------ conversion


async def test_stats_show_started_approved_and_conversion_per_hour(bed: Bed) -> None:
    started = [await bed.start(bed.test, to=to) for to in ONE_RANGE[:3]]
    for answer in started[:2]:
        code = await bed.code_of(bed.test, answer)
        await bed.check(bed.test, answer.json()["id"], code)
    await bed.start(bed.live, to=ONE_RANGE[5])  # live: counted in live mode only

    stats = await bed.get(bed.test, "/v1/verifications/stats?hours=2")

    assert stats.status_code == 200, stats.text
    body = stats.json()
    assert (body["hours"], body["livemode"]) == (2, False)
    [hour] = body["data"]
    assert (hour["channel"], hour["started"], hour["approved"]) == ("sms", 3, 2)
    assert hour["conversion"] == pytest.approx(0.6667)
    assert hour["hour"] == bed.clock.now().strftime("%Y-%m-%dT%H:00:00Z")
    assert body["totals"] == [{"channel": "sms", "started": 3, "approved": 2, "conversion": 0.6667}]


async def test_stats_count_each_hour_apart_and_leave_out_older_ones(bed: Bed) -> None:
    await bed.start(bed.test, to=ONE_RANGE[0])
    bed.clock.advance(timedelta(hours=1))
    await bed.start(bed.test, to=ONE_RANGE[1])
    await bed.start(bed.test, to=ONE_RANGE[2])

    two = (await bed.get(bed.test, "/v1/verifications/stats?hours=2")).json()
    one = (await bed.get(bed.test, "/v1/verifications/stats?hours=1")).json()

    assert [h["started"] for h in two["data"]] == [1, 2]
    assert [h["started"] for h in one["data"]] == [2]
    assert one["totals"][0]["conversion"] == 0.0


@pytest.mark.parametrize(
    "query", ["hours=0", "hours=169", "hours=abc", "hours=1&hours=2", "days=3", "hours=1.5"]
)
async def test_bad_stats_queries_are_a_400(bed: Bed, query: str) -> None:
    answer = await bed.get(bed.test, f"/v1/verifications/stats?{query}")

    assert answer.status_code == 400, answer.text
    assert error_code(answer) == "VALIDATION_ERROR"


async def test_stats_need_a_key(bed: Bed) -> None:
    answer = await bed.http.get("/v1/verifications/stats")
    assert answer.status_code == 401
    other = await bed.http.get("/v1/verifications/stats", headers=bearer(bed.other))
    assert other.json()["data"] == []
