"""``preview_message`` (D33) through the SDK's own client: a commercial text's hints and its
parts with the operator's code, nothing sent; a workspace whose content rules refuse gets
the send's error, with the hints in its structured content."""

from __future__ import annotations

from _mcp_support import Harness, data_of, error_of

from unified_messaging.testing import TestBed

TO = "0555 123 45 67"
GOOD = (
    "KAMPANYA: Örnek Gıda A.Ş. kışa özel %20 indirim. Mersis 0123456789012345. "
    "Listeden çıkmak için RET ORNEK yazıp 3338'e gönderin."
)


async def test_a_commercial_draft_gets_its_hints_and_parts_and_nothing_is_sent(
    mcp: Harness, bed: TestBed
) -> None:
    data = data_of(await mcp.call(
        "preview_message", {"to": TO, "body": "x" * 156, "category": "commercial"}
    ))  # fmt: skip

    assert (data["to"], data["category"], data["recipient_type"]) == (
        "+905551234567", "commercial", "BIREYSEL"
    )  # fmt: skip
    assert data["sms"] == {"encoding": "gsm7", "characters": 156, "units": 156, "parts": 1,
                           "parts_with_operator_code": 2}  # fmt: skip
    codes = [hint["code"] for hint in data["hints"]]  # type: ignore[attr-defined]
    assert codes == ["OPT_OUT_MISSING", "BRAND_NOT_SET", "COMMERCIAL_TAG_MISSING"]
    assert list(bed.outbox) == []
    assert (await bed.messenger.workspaces.quota_usage(bed.workspace.id)).used == 0


async def test_refusing_rules_answer_the_sends_error_with_the_hints(
    mcp: Harness, bed: TestBed
) -> None:
    await bed.messenger.content.update_rules(
        bed.workspace.id, trade_name="Örnek Gıda A.Ş.", mersis="0123456789012345", refuse=True
    )

    error = error_of(await mcp.call(
        "preview_message", {"to": TO, "body": "Kampanya: indirim", "category": "commercial"}
    ))  # fmt: skip
    passed = data_of(await mcp.call(
        "preview_message", {"to": TO, "body": GOOD, "category": "commercial"}
    ))  # fmt: skip

    assert error["code"] == "COMMERCIAL_CONTENT_REFUSED"
    assert [hint["code"] for hint in error["hints"]] == [  # type: ignore[attr-defined]
        "OPT_OUT_MISSING", "TRADE_NAME_MISSING", "MERSIS_MISSING"
    ]  # fmt: skip
    assert passed["hints"] == []
    assert list(bed.outbox) == []
