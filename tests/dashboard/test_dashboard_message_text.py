"""What was sent, and with which key, on the Messages pages: the text as escaped text (never
markup), the key's name, and the switch that hides the text of live messages."""

from __future__ import annotations

import html

import httpx
from _dash_support import Console, PageAudit

from unified_messaging import Messenger
from unified_messaging.testing import TestBed

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)> & Şükrü'


async def _send(url: str, key: str, body: dict[str, object]) -> httpx.Response:
    async with httpx.AsyncClient() as rest:
        return await rest.post(
            url + "/v1/messages", json=body, headers={"Authorization": f"Bearer {key}"}
        )


async def test_a_message_page_shows_its_text_as_text_and_its_key(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    job_id = (await _send(url, bed.api_key, {"to": "+905551234567", "body": HOSTILE})).json()[
        "job_id"
    ]

    detail = await signed_in.get(f"/messages/{job_id}")
    assert html.escape(HOSTILE, quote=False) in detail.text.replace("&#34;", '"').replace(
        "&#39;", "'"
    )
    assert "<script>alert" not in detail.text and "<img src=x" not in detail.text
    assert PageAudit(detail.text).inline_scripts == 0
    assert "pytest" in detail.text  # the testbed key's name
    listing = await signed_in.get("/messages")
    assert "&lt;script&gt;alert" in listing.text and "<script>alert" not in listing.text


async def test_a_template_message_shows_the_text_its_variables_made(
    signed_in: Console, url: str, bed: TestBed, messenger: Messenger
) -> None:
    await messenger.templates.set(bed.workspace.id, "otp_note", "Merhaba {{ name }}!")
    sent = await _send(
        url, bed.api_key, {"to": "+905551234567", "template": "otp_note",
                           "variables": {"name": "<b>Ayşe</b>"}},
    )  # fmt: skip

    detail = await signed_in.get(f"/messages/{sent.json()['job_id']}")
    assert "the template, rendered" in detail.text
    assert "Merhaba &lt;b&gt;Ayşe&lt;/b&gt;!" in detail.text


async def test_hiding_live_text_hides_it_on_both_pages_and_is_audited_with_the_user(
    signed_in: Console, url: str, bed: TestBed, messenger: Messenger
) -> None:
    shop = await messenger.workspaces.create("Live Ltd")
    # A live account nobody answers for (port 9 refuses): the send fails, and is kept.
    await messenger.connections.add(
        shop.id, "sms_a", credentials={"usercode": "u", "password": "p"},
        default_sender="ACME", base_url="http://127.0.0.1:9",
    )  # fmt: skip
    live_key = await messenger.keys.create(shop.id, livemode=True, name="prod")
    sent = await _send(url, live_key.secret, {"to": "+905551234567", "body": "Sipariş 77 hazır"})
    assert sent.status_code == 502
    live = await messenger.principal(shop.id, livemode=True)
    job_id = (await messenger.list_messages(live)).data[0].job_id
    await signed_in.post("/view", {"workspace_id": shop.id})
    await signed_in.post("/view", {"livemode": "live"})
    assert "Sipariş 77 hazır" in (await signed_in.get(f"/messages/{job_id}")).text

    answer = await signed_in.post("/messages/text-masking", {"mask_live_text": "1"})
    page = await signed_in.follow(answer)

    assert "hidden everywhere" in page.text and "Sipariş 77" not in page.text
    detail = await signed_in.get(f"/messages/{job_id}")
    assert "Sipariş 77" not in detail.text and "masks the text of live messages" in detail.text
    assert "prod" in detail.text  # the key that sent it is still named
    audit = await messenger.audit.list(action="workspace.text_masking")
    assert [e.actor for e in audit.data] == ["dashboard:ops@example.com"]
    test_key = await messenger.keys.create(shop.id, livemode=False)
    await signed_in.post("/view", {"livemode": "test"})
    test_sent = await _send(url, test_key.secret, {"to": "+905551234567", "body": "test metni"})
    shown = await signed_in.get(f"/messages/{test_sent.json()['job_id']}")
    assert "test metni" in shown.text  # test mode always shows its text
