"""Send a message from the dashboard over real HTTP: test mode sends at once through
``Messenger.send`` and the message's page shows its text; live mode shows the provider
account it will charge and sends only when confirmed (through a fake of NetGSM's REST v2);
each send is one ``message.send`` audit row under the user's name; bad input gets the send's
own words beside the form; hostile text is shown as text; a post without the token fails."""

from __future__ import annotations

from _dash_support import Console
from fakes._server import serve
from fakes.netgsm import NetgsmFake

from unified_messaging import Messenger
from unified_messaging.testing import TestBed

NUMBER = "+905551234567"
HOSTILE = '<img src=x onerror="alert(1)"> Sipariş </textarea><script>alert(2)</script>'


async def _test_mode(console: Console) -> None:
    assert (await console.post("/view", {"livemode": "test"})).status_code == 303


async def test_a_test_message_is_sent_and_its_page_shows_the_text(
    signed_in: Console, bed: TestBed, messenger: Messenger
) -> None:
    await _test_mode(signed_in)
    form = await signed_in.get("/compose")
    assert form.status_code == 200 and "Send test message" in form.text
    assert "sms_c · Verimor" in form.text  # provider names beside their codes

    answer = await signed_in.post("/compose", {"to": "0555 123 45 67", "mode": "text",
                                               "body": HOSTILE})  # fmt: skip
    assert answer.status_code == 303
    location = answer.headers["location"]
    assert location.startswith("/dashboard/messages/msg_")
    job_id = location.rsplit("/", 1)[1]
    page = await signed_in.follow(answer)
    assert f"The test message to {NUMBER} was accepted" in page.text
    assert HOSTILE not in page.text and "&lt;script&gt;alert(2)&lt;/script&gt;" in page.text
    principal = await messenger.principal(bed.workspace.id, livemode=False)
    record = await messenger.get_message(principal, job_id)
    assert (record.to, record.body, record.livemode) == (NUMBER, HOSTILE, False)
    assert len(bed.outbox) == 1
    [event] = (await messenger.audit.list(action="message.send")).data
    assert (event.actor, event.workspace_id, event.target) == (
        "dashboard:ops@example.com", bed.workspace.id, job_id)  # fmt: skip


async def test_a_template_with_its_variables(
    signed_in: Console, bed: TestBed, messenger: Messenger
) -> None:
    await _test_mode(signed_in)
    await messenger.templates.set(bed.workspace.id, "shipped", "Merhaba {{ name }}, {{ order }}.")
    answer = await signed_in.post("/compose", {
        "to": NUMBER, "mode": "template", "template": "shipped",
        "variables": "name=Ayşe\norder=no=1042\n", "body": "ignored in template mode",
    })  # fmt: skip
    page = await signed_in.follow(answer)
    assert "Merhaba Ayşe, no=1042." in page.text


async def test_bad_input_is_said_beside_the_form_with_what_was_typed(
    signed_in: Console, bed: TestBed, messenger: Messenger
) -> None:
    await _test_mode(signed_in)
    bad = await signed_in.post("/compose", {"to": "12ab", "mode": "text", "body": "kept text"})
    assert bad.status_code == 422 and "The message was not sent" in bad.text
    assert "kept text" in bad.text
    typo = {"to": NUMBER, "mode": "template", "template": "x", "variables": "no equals"}
    vars_bad = await signed_in.post("/compose", typo)
    assert vars_bad.status_code == 400 and "name=value" in vars_bad.text
    unknown = await signed_in.post("/compose", {"to": NUMBER, "mode": "template",
                                                "template": "missing"})  # fmt: skip
    assert unknown.status_code == 404
    both = await signed_in.post("/compose", {"to": NUMBER, "mode": "text", "body": "x",
                                             "provider": "sms_a", "fallback": "sms_a"})  # fmt: skip
    assert both.status_code == 400
    assert (await messenger.audit.list(action="message.send")).data == []
    assert len(bed.outbox) == 0


async def test_a_post_without_the_token_sends_nothing(signed_in: Console, bed: TestBed) -> None:
    await _test_mode(signed_in)
    refused = await signed_in.post("/compose", {"to": NUMBER, "body": "x"}, csrf="")
    assert refused.status_code == 403
    foreign = await signed_in.post("/compose", {"to": NUMBER, "body": "x"},
                                   origin="https://evil.example")  # fmt: skip
    assert foreign.status_code == 403
    assert len(bed.outbox) == 0


async def test_live_mode_names_the_account_and_sends_only_when_confirmed(
    signed_in: Console, messenger: Messenger
) -> None:
    fake = NetgsmFake()
    async with serve(fake.app) as base:
        shop = await messenger.workspaces.create("Live Ltd")
        account = await messenger.connections.add(
            shop.id, "sms_a", credentials={"usercode": fake.usercode, "password": fake.password},
            default_sender="ACME", base_url=base,
        )  # fmt: skip
        await signed_in.post("/view", {"workspace_id": shop.id})
        await signed_in.post("/view", {"livemode": "live"})
        form = await signed_in.get("/compose")
        assert "Review and send" in form.text and "real phone" in form.text

        asked = await signed_in.post("/compose", {"to": NUMBER, "mode": "text",
                                                  "body": "Kargonuz yolda"})  # fmt: skip
        assert asked.status_code == 200 and "Send this live message?" in asked.text
        assert "sms_a · NetGSM" in asked.text and account.id in asked.text
        assert "Kargonuz yolda" in asked.text
        assert fake.sends == []

        typed = {"to": NUMBER, "mode": "text", "body": "Kargonuz yolda"}
        changed = await signed_in.post("/compose", {**typed, "edit": "1"})
        assert changed.status_code == 200 and "Kargonuz yolda" in changed.text
        assert fake.sends == []

        sent = await signed_in.post("/compose", {**typed, "confirmed": "1"})
        page = await signed_in.follow(sent)
        assert "The live message to" in page.text and "Kargonuz yolda" in page.text
        assert len(fake.sends) == 1
        [event] = (await messenger.audit.list(action="message.send")).data
        assert event.actor == "dashboard:ops@example.com" and event.workspace_id == shop.id
