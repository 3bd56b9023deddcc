"""``Client.preview_send`` (D33) against the real ``serve --demo``: the dry run of a send,
its hints and parts, and nothing sent."""

from __future__ import annotations

import pytest
from _served import Served

from unified_messaging import Client, RequestInvalid, SendPreview


def test_the_client_previews_a_commercial_text_and_sends_nothing(demo: Served) -> None:
    body = {"to": "0532 400 00 01", "body": "Yeni sezon %20 indirim", "category": "commercial"}
    with Client(demo.url, demo.started["api_key"]) as client:
        preview = client.preview_send(body)
        with pytest.raises(RequestInvalid):
            client.preview_send({"to": "+905324000001"})  # no body: the send's own 400
        sent_to = [m.to for m in client.list_messages(to="+905324000001")]

    assert isinstance(preview, SendPreview)
    assert (preview.to, preview.category, preview.text) == (
        "+905324000001", "commercial", "Yeni sezon %20 indirim"
    )  # fmt: skip
    assert [hint.code for hint in preview.hints] == [
        "OPT_OUT_MISSING", "BRAND_NOT_SET", "COMMERCIAL_TAG_MISSING"
    ]  # fmt: skip
    assert sent_to == []
