"""``create_dashboard`` on its own, mounted under a host's prefix; ``Secure`` cookies behind
HTTPS."""

from __future__ import annotations

import httpx
from _dash_support import Console
from fakes._server import serve
from starlette.applications import Starlette
from starlette.routing import Mount

from unified_messaging import Messenger
from unified_messaging.dashboard import create_dashboard
from unified_messaging.users._store import User


async def test_a_host_mounts_the_dashboard_under_its_own_prefix(
    messenger: Messenger, operator: User
) -> None:
    host = Starlette(routes=[Mount("/admin/console", app=create_dashboard(messenger))])
    async with serve(host) as url, httpx.AsyncClient() as http:
        console = Console(http, url + "/admin/console")
        answer = await console.sign_in(operator.email)
        assert answer.status_code == 303
        assert answer.headers["location"] == "/admin/console/"
        assert "path=/admin/console" in answer.headers["set-cookie"].lower()
        page = await console.get("/keys")
        assert page.status_code == 200
        assert 'href="/admin/console/static/dashboard.css' in page.text
        assert (await console.get("/static/htmx.min.js")).status_code == 200


async def test_behind_https_the_session_cookie_is_secure(
    messenger: Messenger, operator: User
) -> None:
    transport = httpx.ASGITransport(app=create_dashboard(messenger, open_messenger=False))
    async with httpx.AsyncClient(transport=transport, base_url="https://console.example") as http:
        console = Console(http, "https://console.example")
        answer = await console.sign_in(operator.email)
    assert answer.status_code == 303
    cookie = next(v for k, v in answer.headers.multi_items() if k == "set-cookie"
              and v.startswith("um_session="))  # fmt: skip
    assert "secure" in [part.strip().lower() for part in cookie.split(";")]
