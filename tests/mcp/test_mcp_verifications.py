"""``start_verification`` and ``check_verification`` through the official MCP client (D34):
an agent starts a code, the user reads it (here: the test-mode message), the agent checks it."""

from __future__ import annotations

import re

from _mcp_support import NORMAL, Harness, code_of, data_of


async def test_an_agent_starts_and_checks_a_code(mcp: Harness) -> None:
    started = data_of(await mcp.call("start_verification", {"to": NORMAL}))
    sends = started["sends"]
    assert isinstance(sends, list)
    message = data_of(await mcp.call("get_message", {"job_id": sends[0]["job_id"]}))
    found = re.search(r"[0-9]{6}", str(message["body"]))
    assert found is not None

    checked = data_of(await mcp.call("check_verification", {"id": started["id"],
                                                            "code": found[0]}))  # fmt: skip
    replay = await mcp.call("check_verification", {"id": started["id"], "code": found[0]})

    assert (started["status"], checked["status"]) == ("pending", "approved")
    assert code_of(replay) == "VERIFICATION_ALREADY_APPROVED"


async def test_the_verification_tools_refuse_as_rest_does(mcp: Harness) -> None:
    started = data_of(await mcp.call("start_verification", {"to": NORMAL}))

    again = await mcp.call("start_verification", {"to": NORMAL})
    foreign = await mcp.call("start_verification", {"to": "+4915112345678"})
    whatsapp = await mcp.call("start_verification", {"to": NORMAL, "channel": "bizchat"})
    twice = await mcp.call("start_verification", {"to": NORMAL, "channels": ["sms", "sms"]})
    unknown = await mcp.call("check_verification", {"id": "ver_nothing", "code": "1234"})
    extra = await mcp.call("check_verification", {"id": started["id"], "code": "1", "x": 1})
    wrong = data_of(await mcp.call("check_verification", {"id": started["id"], "code": "x"}))

    assert code_of(again) == "VERIFICATION_RATE_LIMITED"
    assert code_of(foreign) == "INVALID_RECIPIENT"
    assert code_of(whatsapp) == "CHANNEL_NOT_SUPPORTED"
    assert code_of(twice) == "ESCALATION_INVALID"
    assert code_of(unknown) == "VERIFICATION_NOT_FOUND"
    assert code_of(extra) == "VALIDATION_ERROR"
    assert (wrong["status"], wrong["checks_remaining"]) == ("pending", 4)
