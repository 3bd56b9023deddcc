"""Every route, fuzzed with ugly input on SQLite and PostgreSQL: never a 5xx, always the contract.

Hypothesis sends NUL, lone surrogates, control characters, huge strings, injection strings
and JSON of the wrong types to every route: the five REST endpoints, ``/v1/dlr/…`` (not in
the OpenAPI document, so schemathesis never reaches it) and ``/mcp`` (``tools/call`` of each
of the five tools). Whatever arrives, the answer is below 500; an HTTP error is the D13 body
with a known code and ``X-Request-ID``; a tool error carries a known code too; only a
malformed JSON-RPC message is answered as JSON-RPC. A fixed seed and a bounded number of
examples keep the run reproducible and short.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import quote

import httpx
import pytest
from _sql_apps import BACKENDS, lifespan_running, sql_testbed
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_messaging.asgi import create_app

#: D14's codes and the refusals of HTTP itself (unknown route, method, media, host, origin).
KNOWN_CODES: Final = frozenset(
    {
        "VALIDATION_ERROR", "UNAUTHORIZED", "IP_NOT_ALLOWED", "PROVIDER_NOT_CONNECTED",
        "MESSAGE_NOT_FOUND", "TEMPLATE_NOT_FOUND", "IDEMPOTENCY_CONFLICT",
        "IDEMPOTENCY_IN_PROGRESS", "PAYLOAD_TOO_LARGE", "INVALID_RECIPIENT", "CHAT_UNREACHABLE",
        "SENDER_NOT_APPROVED", "SENDER_REQUIRED", "FALLBACK_NOT_ALLOWED",
        "TEMPLATE_VARIABLE_MISSING", "BODY_TOO_LONG", "RATE_LIMITED", "QUOTA_EXCEEDED",
        "RECIPIENT_RATE_LIMITED", "PROVIDER_UNAVAILABLE", "INVALID_CREDENTIALS", "NOT_FOUND",
        "METHOD_NOT_ALLOWED", "NOT_ACCEPTABLE", "FORBIDDEN", "MISDIRECTED_REQUEST",
    }
)  # fmt: skip
TOOLS: Final = ("send_message", "send_bulk", "get_message", "list_providers", "list_templates")
MCP_HEADERS: Final = {"Content-Type": "application/json", "Accept": "application/json"}
#: Where the SDK may answer with a JSON-RPC body: results, and refusals of the message.
JSON_RPC_STATUSES: Final = frozenset({200, 400, 404})

# --------------------------------------------------------------------------- ugly values

_NASTY: Final = [
    "", "\x00", "msg_\x00x", "\ud800", "a\udfffb", "\x7f\x1b[31m", "' OR 1=1 --",
    "'; DROP TABLE messages; --", "${jndi:ldap://x}", "{{ name }}", "../../etc/passwd",
    "%00", "%s%n", "\u202e\u200b\ufeff", "İıŞşĞğ", "𝔘𝔫𝔦", "null", "+905551234567",
    "+905550000001", "0", "@unreachable_bot_user", "sms_a", "order_shipped", "x" * 5000,
]  # fmt: skip
ugly_text = st.one_of(
    st.sampled_from(_NASTY),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=40),
    st.text(st.sampled_from('\x00\ud800\udc00a0+ \n\t"\\'), max_size=20),
)
ugly_scalar = st.one_of(
    ugly_text, st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False)
)
ugly_json = st.recursive(
    ugly_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(ugly_text, inner, max_size=3)
    ),
    max_leaves=8,
)
_SEND_FIELDS: Final = ["to", "body", "template", "variables", "sender", "provider", "fallback"]


def _object(fields: list[str]) -> st.SearchStrategy[dict[str, object]]:
    return st.dictionaries(st.one_of(st.sampled_from(fields), ugly_text), ugly_json, max_size=5)


send_body = _object(_SEND_FIELDS)
bulk_body = st.fixed_dictionaries(
    {"items": st.lists(_object(["to", "body", "variables"]), max_size=3)},
    optional={"sender": ugly_json, "template": ugly_json, "provider": ugly_json},
)


def segment(text: str) -> str:
    """``text`` as one path segment, every byte escaped (lone surrogates as their bytes)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def json_bytes(value: object) -> bytes:
    # ensure_ascii writes a lone surrogate as its \u escape, as a hostile client would.
    return json.dumps(value).encode("ascii")


def raw_header(text: str) -> bytes:
    """``text`` as header bytes, whatever they are: the server gets exactly these."""
    return text.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    content: bytes = b""
    headers: tuple[tuple[str, str | bytes], ...] = ()
    mcp: bool = False


@dataclass(frozen=True)
class Target:
    client: httpx.AsyncClient
    api_key: str
    dlr_path: str  # a real connection's report URL, so the fuzz gets past the token check


@st.composite
def rest_calls(draw: st.DrawFn) -> Call:
    kind = draw(st.sampled_from(["get", "send", "bulk", "raw", "health", "other"]))
    if kind == "get":
        return Call("GET", f"/v1/messages/{segment(draw(ugly_text))}")
    if kind == "health":
        return Call(draw(st.sampled_from(["GET", "POST"])), "/v1/health")
    if kind == "other":
        return Call(draw(st.sampled_from(["GET", "DELETE", "PUT"])), f"/{segment(draw(ugly_text))}")
    path = "/v1/messages/bulk" if kind == "bulk" else "/v1/messages"
    body = draw(bulk_body if kind == "bulk" else send_body)
    content = draw(st.binary(max_size=64)) if kind == "raw" else json_bytes(body)
    headers: list[tuple[str, str | bytes]] = [
        ("Content-Type", draw(st.sampled_from(["application/json", "text/plain"])))
    ]
    if draw(st.booleans()):
        headers.append(("Idempotency-Key", raw_header(draw(ugly_text))[:300]))
    return Call("POST", path, content, tuple(headers))


@st.composite
def dlr_calls(draw: st.DrawFn, real_path: str) -> Call:
    _, _, _, connection_id, token = real_path.split("/")
    aim = draw(st.sampled_from(["real", "real", "real", "connection_id", "token"]))
    if aim == "connection_id":
        connection_id = segment(draw(ugly_text))
    elif aim == "token":
        token = segment(draw(ugly_text))
    method = draw(st.sampled_from(["GET", "POST"]))
    query = draw(st.dictionaries(st.sampled_from(["hub.mode", "hub.challenge", "id"]), ugly_text))
    path = f"/v1/dlr/{connection_id}/{token}"
    if query:
        path += "?" + "&".join(f"{segment(k)}={segment(v)}" for k, v in query.items())
    report = st.fixed_dictionaries(
        {
            "provider_message_id": st.one_of(ugly_text, ugly_json),
            "status": st.sampled_from(["delivered", "failed", "pending"]),
        },
        optional={"provider_status": ugly_text},
    )
    content = draw(st.one_of(report.map(json_bytes), st.binary(max_size=64)))
    return Call(method, path, content)


@st.composite
def mcp_calls(draw: st.DrawFn) -> Call:
    name = draw(st.sampled_from(TOOLS))
    arguments = draw(st.one_of(_object([*_SEND_FIELDS, "items", "job_id"]), ugly_json))
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    content = json_bytes({**message, "params": {"name": name, "arguments": arguments}})
    headers: dict[str, str | bytes] = dict(MCP_HEADERS)
    if draw(st.booleans()):
        name = draw(st.sampled_from(["Content-Type", "Accept", "MCP-Protocol-Version"]))
        headers[name] = raw_header(draw(ugly_text))[:80]
    return Call("POST", "/mcp", content, tuple(headers.items()), mcp=True)


def calls(dlr_path: str) -> st.SearchStrategy[Call]:
    return st.one_of(rest_calls(), dlr_calls(dlr_path), mcp_calls())


# --------------------------------------------------------------------------- the contract


def assert_d13(response: httpx.Response) -> None:
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert error["code"] in KNOWN_CODES, error
    assert isinstance(error["message"], str)
    assert ("details" in error) == (response.status_code == 400), error


def assert_mcp_answer(response: httpx.Response) -> None:
    body = response.json()
    if "error" in body:  # a malformed message: JSON-RPC's own error, as MCP clients expect
        assert isinstance(body["error"]["code"], int)
        return
    result = body["result"]
    if result.get("isError"):
        assert result["structuredContent"]["error"]["code"] in KNOWN_CODES, result


def _is_json_rpc(response: httpx.Response) -> bool:
    if response.headers.get("content-type") != "application/json":
        return False
    body = response.json()
    return isinstance(body, dict) and "jsonrpc" in body


def assert_in_contract(call: Call, response: httpx.Response) -> None:
    assert response.status_code < 500, (call, response.text)
    assert response.headers.get("x-request-id"), call
    if call.mcp and response.status_code in JSON_RPC_STATUSES and _is_json_rpc(response):
        assert_mcp_answer(response)
    elif response.status_code >= 400:
        assert response.headers["content-type"] == "application/json", (call, response.text)
        assert_d13(response)


# --------------------------------------------------------------------------- the test


@pytest.fixture(params=BACKENDS)
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Target]:
    async with sql_testbed(request.param, tmp_path) as bed:
        messenger = bed.messenger
        await messenger.templates.set(bed.workspace.id, "order_shipped", "Merhaba {{ name }}")
        key = await messenger.keys.create(
            bed.workspace.id, name="fuzz", rate_limit=1_000_000, rate_burst=1_000_000
        )
        connection = next(
            c for c in await messenger.connections.list(bed.workspace.id) if c.provider == "sms_c"
        )
        app = create_app(messenger, worker=False)
        async with lifespan_running(app):
            transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 40000))
            async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
                path = f"/v1/dlr/{connection.id}/{connection.dlr_token}"
                yield Target(c, key.secret, path)


@settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_no_input_gets_a_5xx_or_an_answer_outside_the_contract(
    target: Target, data: st.DataObject
) -> None:
    call = data.draw(calls(target.dlr_path))
    headers = {"Authorization": f"Bearer {target.api_key}", **dict(call.headers)}
    response = await target.client.request(
        call.method, call.path, content=call.content, headers=headers
    )
    assert_in_contract(call, response)
