"""``messenger.access``: one request's checks in D15's order, 401 → 403 → 429 (authorize),
the allowlist check, and the key's rate limit (its policy and one hit)."""

from __future__ import annotations

import pytest

from unified_messaging import IpNotAllowed, Messenger, RateLimited, Unauthorized


async def test_authorize_answers_the_caller_and_the_rate_decision() -> None:
    messenger = Messenger()
    ws = (await messenger.workspaces.create("acme")).id
    key = await messenger.keys.create(ws, livemode=True, rate_limit=1, rate_burst=2)

    principal, decision = await messenger.access.authorize(key.secret, "192.0.2.7")

    assert (principal.workspace_id, principal.livemode) == (ws, True)
    assert decision.allowed and decision.remaining == 1
    assert messenger.access.rate_policy(key.record).burst == 2


async def test_authorize_refuses_in_order_who_then_where_then_how_often() -> None:
    messenger = Messenger()
    ws = (await messenger.workspaces.create("acme")).id
    key = await messenger.keys.create(ws, rate_limit=0.001, rate_burst=1)
    await messenger.allowlist.add(ws, "10.0.0.0/8")

    with pytest.raises(Unauthorized) as who:
        await messenger.access.authorize("um_test_nope", "192.0.2.7")
    assert (who.value.code, who.value.http_status) == ("UNAUTHORIZED", 401)
    with pytest.raises(IpNotAllowed) as where:
        await messenger.access.authorize(key.secret, "192.0.2.7")
    assert (where.value.code, where.value.http_status) == ("IP_NOT_ALLOWED", 403)
    await messenger.access.check_client_ip(ws, "10.9.9.9")
    await messenger.access.authorize(key.secret, "10.9.9.9")
    with pytest.raises(RateLimited) as how_often:
        await messenger.access.authorize(key.secret, "10.9.9.9")
    assert (how_often.value.code, how_often.value.http_status) == ("RATE_LIMITED", 429)


async def test_the_default_policy_unless_the_key_has_its_own_and_each_hit_takes_a_token() -> None:
    messenger = Messenger()
    ws = (await messenger.workspaces.create("acme")).id
    plain = (await messenger.keys.create(ws)).record
    own = (await messenger.keys.create(ws, rate_limit=2, rate_burst=3)).record

    default = messenger.access.rate_policy(plain)
    assert (messenger.access.rate_policy(own).rate, messenger.access.rate_policy(own).burst) == (
        2, 3,
    )  # fmt: skip
    first = await messenger.access.hit_rate_limit(own)
    second = await messenger.access.hit_rate_limit(own)
    assert (first.remaining, second.remaining) == (2, 1)
    assert (await messenger.access.hit_rate_limit(plain)).remaining == default.burst - 1
