"""``send_at`` and ``cancel_message`` through the official MCP client: the same
fields, answers and error codes as REST."""

from __future__ import annotations

from datetime import datetime, timedelta

from _mcp_support import NORMAL, Harness, code_of, data_of


async def test_send_message_takes_send_at_and_cancel_message_cancels_it(mcp: Harness) -> None:
    due = mcp.bed.clock.now() + timedelta(hours=2)

    sent = data_of(await mcp.call("send_message", {"to": NORMAL, "body": "Randevu",
                                                   "send_at": due.isoformat()}))  # fmt: skip
    canceled = data_of(await mcp.call("cancel_message", {"job_id": sent["job_id"]}))
    again = data_of(await mcp.call("cancel_message", {"job_id": sent["job_id"]}))

    assert (sent["status"], datetime.fromisoformat(str(sent["send_at"]))) == ("queued", due)
    assert canceled["status"] == "failed"
    assert canceled["error"] == again["error"]
    assert isinstance(canceled["error"], dict) and canceled["error"]["code"] == "CANCELED"


async def test_send_bulk_takes_a_time_for_all_and_for_one_item(mcp: Harness) -> None:
    now = mcp.bed.clock.now()
    answer = data_of(await mcp.call("send_bulk", {
        "send_at": (now + timedelta(minutes=5)).isoformat(),
        "items": [{"to": NORMAL, "body": "a"},
                  {"to": NORMAL, "body": "b", "send_at": (now + timedelta(days=1)).isoformat()}],
    }))  # fmt: skip

    results = answer["results"]
    assert isinstance(results, list)
    assert [r["status"] for r in results] == ["queued", "queued"]
    assert [datetime.fromisoformat(r["send_at"]) - now for r in results] == [
        timedelta(minutes=5), timedelta(days=1),
    ]  # fmt: skip


async def test_the_tools_refuse_as_rest_does(mcp: Harness) -> None:
    sent = data_of(await mcp.call("send_message", {"to": NORMAL, "body": "now"}))
    past = (mcp.bed.clock.now() - timedelta(minutes=1)).isoformat()

    assert code_of(await mcp.call("cancel_message", {"job_id": sent["job_id"]})) == (
        "MESSAGE_NOT_CANCELABLE"
    )
    assert code_of(await mcp.call("cancel_message", {"job_id": "msg_nope"})) == "MESSAGE_NOT_FOUND"
    assert code_of(await mcp.call("cancel_message", {})) == "VALIDATION_ERROR"
    assert code_of(await mcp.call("cancel_message", {"job_id": "x", "extra": 1})) == (
        "VALIDATION_ERROR"
    )
    too_early = await mcp.call("send_message", {"to": NORMAL, "body": "x", "send_at": past})
    assert code_of(too_early) == "SEND_AT_OUT_OF_RANGE"
    naive = await mcp.call("send_message", {"to": NORMAL, "body": "x",
                                            "send_at": "2026-01-01T09:00:00"})  # fmt: skip
    assert code_of(naive) == "VALIDATION_ERROR"


async def test_the_send_tools_describe_scheduling(mcp: Harness) -> None:
    async with mcp.session() as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    for name in ("send_message", "send_bulk"):
        assert "send_at" in tools[name].input_schema["properties"]
        assert "send_at" in (tools[name].description or "")
    assert "MESSAGE_NOT_CANCELABLE" in (tools["cancel_message"].description or "")
