"""The real ``serve`` command's HTTP edge, over loopback: the headers every API answer
carries, /mcp's Host and Origin checks (D25), and what its access log shows of tokens and
numbers. (The parser-level rules: test_serve_edge.py.)"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from _cli_support import Cli
from test_cli_serve import serving, stop

pytest.importorskip("mcp")

MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
TOOLS_LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})


def started(proc: Any) -> dict[str, Any]:
    assert proc.stdout is not None
    return json.loads(proc.stdout.readline())  # type: ignore[no-any-return]


@pytest.fixture
def demo_serve(cli: Cli) -> Iterator[tuple[Any, dict[str, Any]]]:
    with serving(cli, "--demo", "--json") as proc:
        yield proc, started(proc)


def test_every_api_answer_says_no_store_and_nosniff(
    demo_serve: tuple[Any, dict[str, Any]],
) -> None:
    proc, demo = demo_serve
    auth = {"Authorization": f"Bearer {demo['api_key']}"}
    with httpx.Client(base_url=demo["url"], timeout=10) as client:
        answers = {
            "health": client.get("/v1/health"),
            "record": client.post(
                "/v1/messages", headers=auth, json={"to": "+905551234567", "body": "Selam"}
            ),
            "list": client.get("/v1/messages?limit=1", headers=auth),
            "401": client.get("/v1/messages"),
            "404": client.get("/v1/nowhere"),
            "mcp": client.post("/mcp", headers={**MCP_HEADERS, **auth}, content=TOOLS_LIST),
            "mcp-401": client.post("/mcp", headers=MCP_HEADERS, content=TOOLS_LIST),
        }
        # The dashboard keeps its own headers (D31): its static files may be cached.
        static = (
            client.get("/dashboard/static/dashboard.css") if "dashboard_login_url" in demo else None
        )
    stop(proc, signal.SIGTERM)

    assert {name: a.status_code for name, a in answers.items()} == {
        "health": 200,
        "record": 201,
        "list": 200,
        "401": 401,
        "404": 404,
        "mcp": 200,
        "mcp-401": 401,
    }
    for name, answer in answers.items():
        assert answer.headers.get("cache-control") == "no-store", name
        assert answer.headers.get("x-content-type-options") == "nosniff", name
    if static is not None:
        assert static.status_code == 200
        assert static.headers.get("cache-control") != "no-store"


def test_mcp_under_serve_refuses_a_foreign_host_or_origin(
    demo_serve: tuple[Any, dict[str, Any]],
) -> None:
    proc, demo = demo_serve
    auth = {**MCP_HEADERS, "Authorization": f"Bearer {demo['api_key']}"}
    port = demo["url"].rsplit(":", 1)[1]

    def call(**extra: str) -> httpx.Response:
        return httpx.post(
            f"{demo['url']}/mcp", headers={**auth, **extra}, content=TOOLS_LIST, timeout=10
        )

    answers = {
        "own": call(),
        "localhost": call(Host=f"localhost:{port}"),
        "own-origin": call(Origin=f"http://127.0.0.1:{port}"),
        "foreign-host": call(Host="evil.example"),
        "rebound-host": call(Host=f"evil.example:{port}"),
        "foreign-origin": call(Origin="http://evil.example"),
    }
    stop(proc, signal.SIGTERM)

    assert {name: a.status_code for name, a in answers.items()} == {
        "own": 200,
        "localhost": 200,
        "own-origin": 200,
        "foreign-host": 421,
        "rebound-host": 421,
        "foreign-origin": 403,
    }
    assert answers["foreign-host"].json()["error"]["code"] == "MISDIRECTED_REQUEST"
    assert answers["foreign-origin"].json()["error"]["code"] == "FORBIDDEN"


def test_allowed_host_names_the_hosts_mcp_answers_to(cli: Cli) -> None:
    with serving(
        cli, "--demo", "--json", "--allowed-host", "api.example.com",
        "--allowed-origin", "https://console.example.com",
    ) as proc:  # fmt: skip
        demo = started(proc)
        auth = {**MCP_HEADERS, "Authorization": f"Bearer {demo['api_key']}"}

        def call(**extra: str) -> int:
            return httpx.post(
                f"{demo['url']}/mcp", headers={**auth, **extra}, content=TOOLS_LIST, timeout=10
            ).status_code

        named = call(Host="api.example.com")
        named_with_port = call(Host="api.example.com:8443")
        console = call(Host="api.example.com", Origin="https://console.example.com")
        loopback = call()  # not named: --allowed-host replaces the bind address's names
        stop(proc, signal.SIGTERM)

    assert (named, named_with_port, console, loopback) == (200, 200, 200, 421)


def test_the_access_log_masks_minted_tokens_anywhere_and_keeps_a_unix_time(cli: Cli) -> None:
    with serving(cli, "--demo", "--json") as proc:
        demo = started(proc)
        [connection] = [
            c
            for c in cli(
                "connections", "list", "--workspace", demo["workspace_id"], "--json"
            ).json()
            if c["is_default"]
        ]
        token = connection["dlr_path"].rsplit("/", 1)[1]
        paths = [
            f"/v1/dlrs/{connection['id']}/{token}",
            f"/v1/dlr;x/{connection['id']}/{token}",
            f"/v1/messages/{token}",
            "/v1/messages?ts=1764630000&to=%2B905321112233",
        ]
        link = demo.get("dashboard_login_url")
        link_token = link.rsplit("/", 1)[1] if link else None
        if link:  # the dashboard extra is installed: its one-time link, mistyped
            paths.append(link.removeprefix(demo["url"]).replace("/link/", "/lnk/"))
        with httpx.Client(base_url=demo["url"], timeout=10) as client:
            for path in paths:
                client.get(path)
        _, stderr = stop(proc, signal.SIGTERM)

    assert token not in stderr
    assert f"/v1/dlrs/{connection['id']}/***" in stderr
    assert "/v1/messages/***" in stderr
    if link_token:
        assert link_token not in stderr
    assert "ts=1764630000" in stderr  # a Unix time is not a phone number
    assert "%2B********2233" in stderr
