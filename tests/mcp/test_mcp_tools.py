"""The five tools (D25) through the SDK's own client: their listing, schemas, answers and errors.

Every successful call is also checked by the SDK client itself against the tool's output
schema (``ClientSession.call_tool`` validates structured content).
"""

from __future__ import annotations

import httpx
import jsonschema
import pytest
from _mcp_support import NORMAL, Harness, bearer, code_of, data_of, error_of
from mcp_types import Tool

from unified_messaging import BulkRequest, SendRequest
from unified_messaging.asgi._schemas import _ContractSchema
from unified_messaging.testing import TestBed

NO_REPORT = "+905550000008"  # the simulator never reports on it (DESIGN §6, 08)
TOOLS = [
    "send_message", "send_bulk", "preview_message", "get_message", "cancel_message",
    "list_providers", "list_templates", "list_suppressions", "add_suppression",
    "remove_suppression",
    "create_consent", "list_consents", "get_consent", "start_verification", "check_verification",
]  # fmt: skip
WRITES = ("send_message", "send_bulk", "cancel_message", "add_suppression", "remove_suppression",
          "create_consent", "start_verification", "check_verification")  # fmt: skip


async def _tools(mcp: Harness) -> dict[str, Tool]:
    async with mcp.session() as session:
        listing = await session.list_tools()
    return {tool.name: tool for tool in listing.tools}


# --------------------------------------------------------------------------- listing


async def test_initialize_names_the_server(mcp: Harness) -> None:
    async with mcp.session() as session:
        info = session.initialize_result
    assert info is not None
    assert info.server_info.name == "unified-messaging"
    assert info.instructions is not None
    assert "um_test_" in info.instructions


async def test_the_tools_are_listed(mcp: Harness) -> None:
    assert list(await _tools(mcp)) == TOOLS


@pytest.mark.parametrize(
    ("name", "model"), [("send_message", SendRequest), ("send_bulk", BulkRequest)]
)
async def test_send_tools_take_the_rest_bodies(
    mcp: Harness, name: str, model: type[SendRequest | BulkRequest]
) -> None:
    schema = (await _tools(mcp))[name].input_schema
    assert schema == model.model_json_schema(schema_generator=_ContractSchema)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False


async def test_input_schema_accepts_a_rest_body_and_refuses_unknown_fields(mcp: Harness) -> None:
    schema = (await _tools(mcp))["send_message"].input_schema
    jsonschema.validate({"to": NORMAL, "body": "Merhaba", "fallback": ["sms_b"]}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"to": NORMAL, "body": "x", "colour": "red"}, schema)


async def test_read_tools_take_only_what_they_need(mcp: Harness) -> None:
    tools = await _tools(mcp)
    assert tools["get_message"].input_schema["required"] == ["job_id"]
    for name in ("list_providers", "list_templates"):
        assert tools[name].input_schema["properties"] == {}
        assert tools[name].input_schema["additionalProperties"] is False


async def test_every_tool_publishes_an_output_schema_and_its_effects(mcp: Harness) -> None:
    tools = await _tools(mcp)
    for name, tool in tools.items():
        assert tool.output_schema is not None, name
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint == (name not in WRITES)


async def test_send_descriptions_say_what_a_send_costs_and_how_test_mode_behaves(
    mcp: Harness,
) -> None:
    for name in ("send_message", "send_bulk"):
        description = (await _tools(mcp))[name].description or ""
        assert "provider credit" in description
        assert "+90555000000X" in description
        assert "@unreachable_bot_user" in description


# --------------------------------------------------------------------------- send_message


async def test_send_message_answers_like_rest(mcp: Harness, bed: TestBed) -> None:
    data = data_of(await mcp.call("send_message", {"to": "0555 123 45 67", "body": "Merhaba"}))
    assert data["status"] == "sent"
    assert data["to"] == NORMAL
    assert data["provider"] == "sms_a"
    assert bed.outbox.recipients() == [NORMAL]


async def test_send_message_with_fallback_lists_attempts(mcp: Harness) -> None:
    arguments = {"to": "+905550000011", "body": "x", "fallback": ["sms_b"]}
    data = data_of(await mcp.call("send_message", arguments))
    assert data["provider"] == "sms_b"
    assert [a["status"] for a in data["attempts"]] == ["rejected", "accepted"]  # type: ignore[union-attr]


async def test_send_message_failed_at_the_provider_is_a_result_not_an_error(mcp: Harness) -> None:
    data = data_of(await mcp.call("send_message", {"to": "+905550000002", "body": "x"}))
    assert data["status"] == "failed"
    error = data["error"]
    assert isinstance(error, dict)
    assert error["code"] == "IYS_CONSENT_MISSING"


async def test_invalid_recipient_is_a_tool_error(mcp: Harness, bed: TestBed) -> None:
    result = await mcp.call("send_message", {"to": "+12025550100", "body": "x"})
    assert code_of(result) == "INVALID_RECIPIENT"
    assert bed.outbox.recipients() == []


async def test_unknown_field_is_a_validation_error_naming_it(mcp: Harness) -> None:
    result = await mcp.call("send_message", {"to": NORMAL, "body": "x", "colour": "red"})
    error = error_of(result)
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"] == [{"field": "colour", "message": "unknown field"}]


async def test_body_and_template_missing_is_a_validation_error(mcp: Harness) -> None:
    error = error_of(await mcp.call("send_message", {"to": NORMAL}))
    assert error["details"] == [
        {"field": "body", "message": "exactly one of body or template is required"}
    ]


async def test_provider_not_connected(mcp: Harness, bed: TestBed) -> None:
    workspace = await bed.messenger.workspaces.create("sms only")
    await bed.messenger.connections.add(workspace.id, "sms_a", default_sender="ACME")
    key = await bed.messenger.keys.create(workspace.id)
    result = await mcp.call(
        "send_message", {"to": NORMAL, "body": "x", "provider": "sms_b"}, key=key.secret
    )
    assert code_of(result) == "PROVIDER_NOT_CONNECTED"


async def test_template_not_found(mcp: Harness) -> None:
    result = await mcp.call("send_message", {"to": NORMAL, "template": "nope"})
    assert code_of(result) == "TEMPLATE_NOT_FOUND"


async def test_chat_unreachable(mcp: Harness) -> None:
    result = await mcp.call("send_message", {"to": "0", "body": "x", "provider": "chatbot"})
    assert code_of(result) == "CHAT_UNREACHABLE"


async def test_provider_unavailable_names_the_job_it_kept(mcp: Harness) -> None:
    result = await mcp.call("send_message", {"to": "+905550000003", "body": "x"})
    error = error_of(result)
    assert error["code"] == "PROVIDER_UNAVAILABLE"
    job_id = error["job_id"]
    assert isinstance(job_id, str)
    assert f"(job_id: {job_id})" in result.content[0].text  # type: ignore[union-attr]
    record = data_of(await mcp.call("get_message", {"job_id": job_id}))
    assert record["status"] == "failed"


async def test_a_live_key_never_falls_back_to_the_simulator(mcp: Harness, bed: TestBed) -> None:
    # The testbed's connections hold no credentials: a live send cannot go anywhere.
    live = await bed.messenger.keys.create(bed.workspace.id, livemode=True)
    result = await mcp.call("send_message", {"to": NORMAL, "body": "x"}, key=live.secret)
    assert code_of(result) == "INVALID_CREDENTIALS"
    assert bed.outbox.recipients() == []


# --------------------------------------------------------------------------- send_bulk


async def test_send_bulk_fails_a_bad_item_only(mcp: Harness) -> None:
    items = [{"to": NORMAL, "body": "a"}, {"to": "not a number", "body": "b"}]
    data = data_of(await mcp.call("send_bulk", {"items": items}))
    assert (data["total"], data["sent"], data["failed"]) == (2, 1, 1)
    results = data["results"]
    assert isinstance(results, list)
    assert results[1]["error"]["code"] == "INVALID_RECIPIENT"
    assert results[1]["job_id"]


async def test_send_bulk_in_template_mode(mcp: Harness, bed: TestBed) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "greet", "Merhaba {{ name }}")
    items = [{"to": NORMAL, "variables": {"name": "Ayşe"}}, {"to": "+905551234568"}]
    data = data_of(await mcp.call("send_bulk", {"template": "greet", "items": items}))
    assert data["template_key"] == "greet"
    results = data["results"]
    assert isinstance(results, list)
    assert results[1]["error"]["code"] == "TEMPLATE_VARIABLE_MISSING"
    assert bed.outbox.texts() == ["Merhaba Ayşe"]


async def test_send_bulk_over_200_items_is_a_validation_error(mcp: Harness) -> None:
    items = [{"to": NORMAL, "body": "x"}] * 201
    error = error_of(await mcp.call("send_bulk", {"items": items}))
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"][0]["field"] == "items"  # type: ignore[index]


async def test_send_bulk_with_an_unknown_template(mcp: Harness) -> None:
    result = await mcp.call("send_bulk", {"template": "nope", "items": [{"to": NORMAL}]})
    assert code_of(result) == "TEMPLATE_NOT_FOUND"


# --------------------------------------------------------------------------- get_message


async def test_get_message_is_the_rest_status_record(mcp: Harness, bed: TestBed) -> None:
    # A recipient whose report never comes (simulator 08): the record cannot change between
    # the two reads (a normal one's report could land in between, from the app's worker).
    sent = data_of(await mcp.call("send_message", {"to": NO_REPORT, "body": "x"}))
    record = data_of(await mcp.call("get_message", {"job_id": sent["job_id"]}))
    assert mcp.app is not None
    transport = httpx.ASGITransport(app=mcp.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as rest:
        response = await rest.get(f"/v1/messages/{sent['job_id']}", headers=bearer(bed.api_key))
    assert record == response.json()


async def test_get_message_of_an_unknown_job(mcp: Harness) -> None:
    assert code_of(await mcp.call("get_message", {"job_id": "msg_nope"})) == "MESSAGE_NOT_FOUND"


@pytest.mark.parametrize("arguments", [{}, {"job_id": ""}, {"job_id": "m", "extra": 1}])
async def test_get_message_with_bad_arguments(mcp: Harness, arguments: dict[str, object]) -> None:
    assert code_of(await mcp.call("get_message", arguments)) == "VALIDATION_ERROR"


# --------------------------------------------------------------------------- list_*


async def test_list_providers_shows_connections_without_credentials(mcp: Harness) -> None:
    data = data_of(await mcp.call("list_providers", {}))
    assert data["livemode"] is False
    providers = data["providers"]
    assert isinstance(providers, list)
    assert [p["provider"] for p in providers] == [
        "sms_a", "sms_b", "sms_c", "sms_d", "sms_e", "chatbot", "bizchat",
    ]  # fmt: skip
    assert providers[0] == {
        "provider": "sms_a",
        "channel": "sms",
        "is_default": True,
        "default_sender": "UMTEST",
        "approved_senders": ["UMTEST"],
    }
    text = str(data)
    assert "credentials" not in text
    assert "dlr_token" not in text


async def test_list_templates_shows_keys_bodies_and_variables(mcp: Harness, bed: TestBed) -> None:
    await bed.messenger.templates.set(
        bed.workspace.id,
        "order_shipped",
        "Merhaba {{ name }}, {{ order }} yolda.",
        description="Shipping notice",
        provider_template="order_shipped_v2",
    )
    data = data_of(await mcp.call("list_templates", {}))
    assert data["templates"] == [
        {
            "key": "order_shipped",
            "body": "Merhaba {{ name }}, {{ order }} yolda.",
            "variables": ["name", "order"],
            "description": "Shipping notice",
            "provider_template": "order_shipped_v2",
        }
    ]


@pytest.mark.parametrize("name", ["list_providers", "list_templates"])
async def test_list_tools_refuse_arguments(mcp: Harness, name: str) -> None:
    error = error_of(await mcp.call(name, {"workspace_id": "ws_other"}))
    assert error["details"] == [{"field": "workspace_id", "message": "unknown field"}]


async def test_unknown_tool_is_a_tool_error(mcp: Harness) -> None:
    result = await mcp.call("delete_everything", {})
    assert result.is_error
    assert "Unknown tool: delete_everything" in result.content[0].text  # type: ignore[union-attr]


# --------------------------------------------------------------------------- suppressions


async def test_a_suppressed_recipient_is_refused_and_listed(mcp: Harness, bed: TestBed) -> None:
    added = data_of(
        await mcp.call("add_suppression", {"channel": "sms", "recipient": "0555 123 45 67"})
    )
    refused = await mcp.call("send_message", {"to": NORMAL, "body": "Merhaba"})
    listed = data_of(await mcp.call("list_suppressions", {"channel": "sms"}))
    removed = data_of(await mcp.call("remove_suppression", {"channel": "sms", "recipient": NORMAL}))
    again = await mcp.call("remove_suppression", {"channel": "sms", "recipient": NORMAL})

    assert (added["recipient"], added["source"]) == (NORMAL, "api")
    assert code_of(refused) == "RECIPIENT_SUPPRESSED"
    assert bed.outbox.recipients() == []
    assert [e["id"] for e in listed["data"]] == [added["id"]]  # type: ignore[index,union-attr]
    assert removed["id"] == added["id"]
    assert code_of(again) == "NOT_FOUND"


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"channel": "fax", "recipient": NORMAL}, "VALIDATION_ERROR"),
        ({"channel": "sms", "recipient": "+12025550100"}, "INVALID_RECIPIENT"),
        ({"channel": "sms", "recipient": NORMAL, "colour": "red"}, "VALIDATION_ERROR"),
    ],
)
async def test_bad_suppression_arguments_are_tool_errors(
    mcp: Harness, arguments: dict[str, object], code: str
) -> None:
    assert code_of(await mcp.call("add_suppression", arguments)) == code


# --------------------------------------------------------------------------- consents


async def test_a_consent_is_recorded_listed_and_read(mcp: Harness, bed: TestBed) -> None:
    created = data_of(
        await mcp.call(
            "create_consent", {"recipient": "0532 123 45 67", "status": "ONAY", "source": "HS_WEB"}
        )
    )
    first_ret = await mcp.call(
        "create_consent", {"recipient": "+905321234568", "status": "RET", "source": "HS_WEB"}
    )
    unknown_source = await mcp.call(
        "create_consent", {"recipient": "+905321234568", "status": "ONAY", "source": "HS_X"}
    )
    listed = data_of(await mcp.call("list_consents", {"status": "ONAY"}))
    shown = data_of(await mcp.call("get_consent", {"consent_id": created["id"]}))
    missing = await mcp.call("get_consent", {"consent_id": "cns_nope"})

    assert (created["recipient"], created["iys_state"], created["livemode"]) == (
        "+905321234567", "pending", False
    )  # fmt: skip
    assert code_of(first_ret) == "CONSENT_FIRST_RET"
    assert code_of(unknown_source) == "VALIDATION_ERROR"
    assert [c["id"] for c in listed["data"]] == [created["id"]]  # type: ignore[index,union-attr]
    assert [h["status"] for h in shown["history"]] == ["ONAY"]  # type: ignore[index,union-attr]
    assert code_of(missing) == "CONSENT_NOT_FOUND"
