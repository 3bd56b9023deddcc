"""The one rule for text the store can keep: no NUL, no lone surrogate (``_text``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from unified_messaging import RequestInvalid
from unified_messaging._domain import ErrorInfo
from unified_messaging._models import SendRequest, parse_model
from unified_messaging._text import scrubbed, storable, storable_report
from unified_messaging.providers import ProviderReport


@pytest.mark.parametrize("text", ["", "msg_01J9", "İıŞş ğ", "😀", "\t\n\r", "\x1b"])
def test_text_without_nul_or_lone_surrogates_is_storable(text: str) -> None:
    assert storable(text)


@pytest.mark.parametrize("text", ["\x00", "a\x00", "\ud800", "x\udfff", "\ud83d\ude00"])
def test_nul_and_lone_surrogates_are_not(text: str) -> None:
    # "\ud83d\ude00" is two lone code points in a str, not the emoji: no UTF-8 form either.
    assert not storable(text)


def test_scrubbing_replaces_each_unstorable_character() -> None:
    assert scrubbed("a\x00b\ud800c") == "a\ufffdb\ufffdc"


def _report(provider_message_id: str, text: str) -> ProviderReport:
    return ProviderReport(
        provider_message_id=provider_message_id,
        status="failed",
        provider_status=text,
        occurred_at=datetime(2025, 1, 1, tzinfo=UTC),
        error=ErrorInfo(text, text),
        to=text,
    )


def test_a_report_for_an_unstorable_id_is_nothing_for_us() -> None:
    assert storable_report(_report("id\x00", "ok")) is None


def test_a_reports_text_is_kept_with_unstorable_characters_replaced() -> None:
    kept = storable_report(_report("id-1", "E\x00\ud800"))
    assert kept == _report("id-1", "E\ufffd\ufffd")


def test_a_clean_report_is_kept_as_it_is() -> None:
    report = _report("id-1", "DELIVRD")
    assert storable_report(report) == report


@pytest.mark.parametrize("field", ["to", "body", "sender"])
def test_a_request_model_refuses_a_lone_surrogate_naming_the_field(field: str) -> None:
    # Pydantic's own str validation refuses them, for MCP arguments that skip our JSON reader.
    data = {"to": "+905551234567", "body": "x", field: "a\ud800"}
    with pytest.raises(RequestInvalid) as caught:
        parse_model(SendRequest, data)
    assert [d.field for d in caught.value.details] == [field]
