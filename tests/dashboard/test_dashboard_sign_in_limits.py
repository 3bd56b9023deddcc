"""D31's sign-in throttle under attack, through the dashboard on real loopback HTTP: one
address naming a new e-mail each time, one account tried from many addresses, IPv6 clients
counted by their /64 (attempts racing on one account: ``tests/cli/test_cli_serve_sign_in.py``,
on the real ``serve``). Addresses other than loopback come through a
trusted proxy's ``X-Forwarded-For``, as behind a real one."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import httpx
import pytest
from _dash_support import PASSWORD, Console, csrf_of
from fakes._server import serve

from unified_messaging import Messenger
from unified_messaging.asgi import create_app
from unified_messaging.dashboard._auth import LoginThrottle
from unified_messaging.users._store import User

WRONG = "not the password at all"


@pytest.fixture
async def proxied_url(messenger: Messenger) -> AsyncIterator[str]:
    """The app behind a proxy on loopback: its ``X-Forwarded-For`` names the client."""
    app = create_app(messenger, dashboard=True, mcp=False, worker=False,
                     trusted_proxies=["127.0.0.1"])  # fmt: skip
    async with serve(app) as base:
        yield base


async def _sign_in(url: str, email: str, password: str, client: str | None = None) -> int:
    """One browser's sign-in (its own cookie jar), from ``client`` through the proxy."""
    forwarded = {"X-Forwarded-For": client} if client else {}
    async with httpx.AsyncClient(follow_redirects=False, timeout=60) as http:
        console = Console(http, url + "/dashboard")
        form = await console.get("/login", headers=forwarded)
        answer = await http.post(
            console.base + "/login",
            data={"email": email, "password": password, "csrf_token": csrf_of(form.text)},
            headers={"Origin": console.origin, **forwarded},
        )
        return answer.status_code


async def test_an_address_naming_a_new_e_mail_each_time_is_throttled(url: str) -> None:
    """No account is tried twice, yet one address may not queue more than its limit of
    password checks."""
    emails = [f"guess{n}@example.com" for n in range(40)]
    codes = await asyncio.gather(*(_sign_in(url, email, WRONG) for email in emails))
    assert Counter(codes) == {401: LoginThrottle.PER_CLIENT, 429: 40 - LoginThrottle.PER_CLIENT}


async def test_an_account_tried_from_many_addresses_is_throttled(
    proxied_url: str, operator: User, member: User
) -> None:
    addresses = [f"198.51.100.{n}" for n in range(1, LoginThrottle.PER_ACCOUNT + 1)]
    codes = await asyncio.gather(
        *(_sign_in(proxied_url, operator.email, WRONG, address) for address in addresses)
    )
    assert set(codes) == {401}
    # A new address, even with the right password: the account has had its tries.
    assert await _sign_in(proxied_url, operator.email, PASSWORD, "203.0.113.7") == 429
    # Other accounts are not held up.
    assert await _sign_in(proxied_url, member.email, PASSWORD, "203.0.113.7") == 303


async def test_an_ipv6_client_counts_by_its_64(proxied_url: str, operator: User) -> None:
    # Five addresses of one /64: one subscriber, who may change the low bits at will.
    for host in range(1, 6):
        address = f"2001:db8:1:2::{host:x}"
        assert await _sign_in(proxied_url, operator.email, WRONG, address) == 401
    assert await _sign_in(proxied_url, operator.email, PASSWORD, "2001:db8:1:2:ffff::1") == 429
    # The next /64 is someone else.
    assert await _sign_in(proxied_url, operator.email, PASSWORD, "2001:db8:1:3::1") == 303
