"""The dashboard's sign-in on the real ``serve`` process (SQLite, uvicorn, its access log),
reached over loopback: sign-ins racing each other, the server answering while passwords are
checked, the one-time link's token kept out of the access log, and HTTPS behind a proxy."""

from __future__ import annotations

import asyncio
import html
import json
import re
import signal
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookies import SimpleCookie
from typing import Any

import httpx
from _cli_support import Cli
from test_cli_serve import serving, stop

PASSWORD = "correct horse battery staple"
WRONG = "not the password at all"
OPERATOR = "ops@example.com"


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert found
    return html.unescape(found.group(1))


@contextmanager
def _served(cli: Cli, *args: str, **env: str) -> Iterator[tuple[dict[str, Any], list[str]]]:
    """``serve --demo --json`` with an operator who has a password; yields what it printed
    and, once the block is over, its stderr (the access log) as the list's one item."""
    cli("users", "create", OPERATOR, "--operator", "--password-stdin", stdin=PASSWORD).ok()
    cli.env.update(env)
    log: list[str] = []
    with serving(cli, "--demo", "--json", *args) as proc:
        assert proc.stdout is not None
        yield json.loads(proc.stdout.readline()), log
        _, stderr = stop(proc, signal.SIGTERM)
        log.append(stderr)


async def _sign_in(base: str, email: str, password: str) -> int:
    """One browser (its own cookie jar) signing in; the answer's status."""
    async with httpx.AsyncClient(follow_redirects=False, timeout=60) as http:
        form = await http.get(base + "/dashboard/login")
        answer = await http.post(
            base + "/dashboard/login",
            data={"email": email, "password": password, "csrf_token": _csrf(form.text)},
            headers={"Origin": base},
        )
        return answer.status_code


def test_racing_wrong_passwords_get_five_401_and_the_rest_429(cli: Cli) -> None:
    """D31: 5 failed sign-ins per account and client. Each attempt is counted before its
    password is checked, in one step with the count, so 20 at once cannot all slip under."""

    async def race(base: str) -> list[int]:
        return await asyncio.gather(*(_sign_in(base, OPERATOR, WRONG) for _ in range(20)))

    with _served(cli) as (demo, _):
        codes = asyncio.run(race(demo["url"]))
    assert Counter(codes) == {401: 5, 429: 15}


def test_health_answers_while_sign_ins_are_checked(cli: Cli) -> None:
    """A password check is CPU work (argon2id): it runs beside the event loop, so the server
    answers others while sign-ins wait their turn. Once the first of 8 sign-ins (distinct
    e-mails, none throttled) has its answer, /v1/health is asked: it answers before the
    last of them, which waits for the checks before it."""

    async def race(base: str) -> list[str]:
        done: list[str] = []
        first = asyncio.Event()

        async def sign_in(n: int) -> None:
            await _sign_in(base, f"guess{n}@example.com", WRONG)
            done.append("sign-in")
            first.set()

        tasks = [asyncio.create_task(sign_in(n)) for n in range(8)]
        await first.wait()
        async with httpx.AsyncClient(timeout=60) as http:
            assert (await http.get(base + "/v1/health")).status_code == 200
        done.append("health")
        await asyncio.gather(*tasks)
        return done

    with _served(cli) as (demo, _):
        order = asyncio.run(race(demo["url"]))
    assert order.count("sign-in") == 8
    assert order[-1] == "sign-in", order  # health answered before the sign-ins finished


def test_the_sign_in_link_token_never_reaches_the_access_log(cli: Cli) -> None:
    with _served(cli) as (demo, log):
        link = demo["dashboard_login_url"]
        token = link.rpartition("token=")[2]
        with httpx.Client(timeout=10) as browser:
            page = browser.get(link)
            signed = browser.post(link, data={"csrf_token": _csrf(page.text)},
                                  headers={"Origin": demo["url"]})  # fmt: skip
    assert signed.status_code == 303, signed.text
    assert len(token) >= 32
    assert token not in log[0]
    assert "GET /dashboard/login/link?token=***" in log[0]  # the requests were logged
    assert "POST /dashboard/login/link?token=***" in log[0]


def _cookies(answer: httpx.Response) -> dict[str, str]:
    """Each cookie set by the answer, with its attributes as the header spelled them."""
    found = {}
    for header in answer.headers.get_list("set-cookie"):
        cookie = SimpleCookie()
        cookie.load(header)
        (name,) = cookie
        found[name] = header
    return found


def _signed_in_over(base: str, link: str, headers: dict[str, str]) -> list[httpx.Response]:
    """The link page and the sign-in it leads to, cookies sent by hand: a client on plain
    HTTP keeps a ``Secure`` cookie to itself, but the proxy in front would pass it on."""
    with httpx.Client(timeout=10) as browser:
        page = browser.get(link, headers=headers)
        login_cookie = SimpleCookie()
        login_cookie.load(_cookies(page)["um_login"])
        signed = browser.post(
            link,
            data={"csrf_token": _csrf(page.text)},
            headers={**headers, "Origin": base,
                     "Cookie": f"um_login={login_cookie['um_login'].value}"},
        )  # fmt: skip
    return [page, signed]


def test_behind_a_trusted_proxy_saying_https_cookies_are_secure_and_hsts_is_sent(
    cli: Cli,
) -> None:
    with _served(cli, "--trusted-proxy", "127.0.0.1") as (demo, _):
        base, link = demo["url"], demo["dashboard_login_url"]
        page, signed = _signed_in_over(base, link, {"X-Forwarded-Proto": "https"})
        plain = httpx.get(base + "/dashboard/login", timeout=10)
    assert signed.status_code == 303, signed.text
    assert "secure" in _cookies(page)["um_login"].lower()
    assert "secure" in _cookies(signed)["um_session"].lower()
    for answer in (page, signed):
        assert answer.headers["strict-transport-security"] == "max-age=31536000"
    # The same server reached over plain HTTP, with no proxy saying otherwise.
    assert "secure" not in _cookies(plain)["um_login"].lower()
    assert "strict-transport-security" not in plain.headers


def test_a_client_saying_https_itself_is_not_believed(cli: Cli) -> None:
    with _served(cli) as (demo, _):  # no trusted proxy: the peer is the client
        page = httpx.get(demo["url"] + "/dashboard/login", headers={"X-Forwarded-Proto": "https"},
                         timeout=10)  # fmt: skip
    assert "secure" not in _cookies(page)["um_login"].lower()
    assert "strict-transport-security" not in page.headers


def test_with_an_https_public_url_cookies_are_always_secure(cli: Cli) -> None:
    """The proxy may end TLS without saying so: ``UM_PUBLIC_URL`` (``--public-url``) does."""
    with _served(cli, UM_PUBLIC_URL="https://messaging.example.com") as (demo, _):
        page, signed = _signed_in_over(demo["url"], demo["dashboard_login_url"], {})
    assert signed.status_code == 303, signed.text
    assert "secure" in _cookies(page)["um_login"].lower()
    assert "secure" in _cookies(signed)["um_session"].lower()
    assert signed.headers["strict-transport-security"] == "max-age=31536000"


def test_a_public_url_that_is_not_one_is_refused(cli: Cli) -> None:
    refused = cli("serve", "--public-url", "messaging.example.com")
    assert refused.returncode == 78, refused.stderr
    assert "--public-url" in refused.stderr and "https://" in refused.stderr
