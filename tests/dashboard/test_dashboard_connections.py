"""Connections over real HTTP: the add form built from the provider's credentials schema,
credentials never shown back, make default, send rate and breaker thresholds through the
admin methods, and another workspace's connection out of reach."""

from __future__ import annotations

import httpx
from _dash_support import Console

from unified_messaging.testing import TestBed

SECRET = "s3cret-password-value"


async def test_the_form_is_built_from_the_providers_schema(signed_in: Console) -> None:
    form = await signed_in.get("/connections/new", params={"provider": "sms_a"})
    assert form.status_code == 200
    assert 'name="cred_usercode" type="text"' in form.text
    assert 'name="cred_password" type="password"' in form.text
    assert "App name (optional)" in form.text
    assert "Add a sms_a · NetGSM connection" in form.text
    bot = await signed_in.get("/connections/new", params={"provider": "chatbot"})
    assert 'name="cred_bot_token" type="password"' in bot.text
    unknown = await signed_in.get("/connections/new", params={"provider": "sms_z"})
    assert unknown.status_code == 400


async def test_credentials_are_labelled_in_words_with_the_providers_own_terms(
    signed_in: Console,
) -> None:
    form = await signed_in.get("/connections/new", params={"provider": "sms_b"})
    # The label a person reads, the field name a request uses, and a hint tied to the input.
    assert 'for="cred-api_key">API key <span class="mono muted">api_key</span>' in form.text
    assert 'for="cred-api_hash">API hash <span class="mono muted">api_hash</span>' in form.text
    assert 'aria-describedby="cred-api_hash-hint"' in form.text
    assert "İletimerkezi&#39;s API hash (hash)" in form.text
    whatsapp = await signed_in.get("/connections/new", params={"provider": "bizchat"})
    assert ">Phone number ID <span" in whatsapp.text


async def test_a_connection_is_added_and_its_credentials_never_come_back(
    signed_in: Console, messenger_workspace: tuple[TestBed, str]
) -> None:
    bed, workspace_id = messenger_workspace
    added = await signed_in.post("/connections", {
        "provider": "sms_c", "cred_username": "acme", "cred_password": SECRET,
        "default_sender": "ACME", "approved_senders": "ACME, ACME2", "iys_mode": "informational",
    })  # fmt: skip
    assert added.status_code == 303
    connection = (await bed.messenger.connections.list(workspace_id))[0]
    assert connection.approved_senders == ("ACME", "ACME2")
    for path in ("/connections", f"/connections/{connection.id}"):
        page = await signed_in.get(path)
        assert page.status_code == 200 and SECRET not in page.text and "acme" not in page.text


async def test_a_refused_connection_keeps_no_credential_in_the_form(
    signed_in: Console, messenger_workspace: tuple[TestBed, str]
) -> None:
    refused = await signed_in.post("/connections", {
        "provider": "sms_c", "cred_username": "acme", "cred_password": SECRET,
        "base_url": "not a url",
    })  # fmt: skip
    assert refused.status_code == 400 and "base_url" in refused.text
    assert SECRET not in refused.text


async def test_default_rate_and_breaker_through_the_admin_rules(
    signed_in: Console, bed: TestBed
) -> None:
    sms_b = next(c for c in await bed.messenger.connections.list(bed.workspace.id)
                 if c.provider == "sms_b")  # fmt: skip
    assert (await signed_in.post(f"/connections/{sms_b.id}/default")).status_code == 303
    assert (await bed.messenger.connections.get(sms_b.id)).is_default
    rate = await signed_in.post(f"/connections/{sms_b.id}/rate",
                                {"max_rate": "12.5", "max_calls": "off"})  # fmt: skip
    assert "Send rate saved." in (await signed_in.follow(rate)).text
    saved = await bed.messenger.connections.get(sms_b.id)
    assert (saved.max_rate, saved.max_calls) == (12.5, None)
    bad = await signed_in.post(f"/connections/{sms_b.id}/rate", {"max_rate": "-3"})
    assert bad.status_code == 400 and "max_rate" in bad.text
    breaker = await signed_in.post(f"/connections/{sms_b.id}/breaker",
                                   {"window": "60", "min_calls": "10"})  # fmt: skip
    assert "Breaker thresholds saved." in (await signed_in.follow(breaker)).text
    policy = (await bed.messenger.connections.get(sms_b.id)).breaker
    assert (policy.window.total_seconds(), policy.min_calls) == (60, 10)
    wrong = await signed_in.post(f"/connections/{sms_b.id}/breaker", {"cooldown": "0"})
    assert wrong.status_code == 400


async def test_another_workspaces_connection_is_out_of_reach(
    signed_in: Console, bed: TestBed
) -> None:
    other = await bed.messenger.workspaces.create("Other Ltd")
    theirs = await bed.messenger.connections.add(other.id, "sms_a")
    for path in ("default", "test", "rate", "breaker"):
        assert (await signed_in.post(f"/connections/{theirs.id}/{path}")).status_code == 404
    assert (await signed_in.get(f"/connections/{theirs.id}")).status_code == 404


async def test_senders_are_edited_through_set_senders_and_rest_keeps_them(
    signed_in: Console, bed: TestBed, url: str
) -> None:
    connection = next(
        c for c in await bed.messenger.connections.list(bed.workspace.id) if c.is_default
    )
    page = await signed_in.get(f"/connections/{connection.id}")
    assert 'action="/dashboard/connections/' + connection.id + '/senders"' in page.text
    saved = await signed_in.post(
        f"/connections/{connection.id}/senders",
        {"default_sender": "ACME", "approved_senders": "ACME, SHOP"},
    )
    assert saved.headers["location"] == f"/dashboard/connections/{connection.id}"
    shown = await signed_in.follow(saved)
    assert "Senders saved." in shown.text and 'value="ACME, SHOP"' in shown.text
    stored = await bed.messenger.connections.get(connection.id)
    assert (stored.default_sender, stored.approved_senders) == ("ACME", ("ACME", "SHOP"))
    async with httpx.AsyncClient() as rest:
        refused = await rest.post(
            url + "/v1/messages",
            json={"to": "+905551234567", "body": "x", "sender": "OTHER"},
            headers={"Authorization": f"Bearer {bed.api_key}"},
        )
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "SENDER_NOT_APPROVED"
    audit = await bed.messenger.audit.list(action="connection.senders")
    assert [(e.actor, e.target) for e in audit.data] == [
        ("dashboard:ops@example.com", connection.id)
    ]


async def test_a_bad_sender_is_shown_beside_its_field_and_changes_nothing(
    signed_in: Console, bed: TestBed
) -> None:
    connection = (await bed.messenger.connections.list(bed.workspace.id))[0]
    before = await bed.messenger.connections.get(connection.id)
    refused = await signed_in.post(
        f"/connections/{connection.id}/senders",
        {"default_sender": "A" * 33, "approved_senders": ""},
    )
    assert refused.status_code == 400
    # Beside the field, with the field marked, and what was typed still in it.
    assert 'id="default_sender-error">must be 1-32 characters</p>' in refused.text
    assert 'aria-describedby="default_sender-error"' in refused.text
    assert f'value="{"A" * 33}"' in refused.text
    assert await bed.messenger.connections.get(connection.id) == before
    rate = await signed_in.post(f"/connections/{connection.id}/rate", {"max_rate": "fast"})
    assert rate.status_code == 400 and 'id="max_rate-error"' in rate.text
    window = await signed_in.post(f"/connections/{connection.id}/breaker", {"window": "-1"})
    assert window.status_code == 400 and 'id="breaker_window-error"' in window.text
