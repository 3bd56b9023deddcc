"""Templates over real HTTP: create, edit and delete through ``set_template`` /
``delete_template``, and the live preview through ``Messenger.preview_template``."""

from __future__ import annotations

import httpx
from _dash_support import Console

from unified_messaging.testing import TestBed

MARKUP = '<script>alert("t")</script>'


async def test_a_template_made_in_the_dashboard_is_sent_over_rest(
    signed_in: Console, url: str, bed: TestBed
) -> None:
    saved = await signed_in.post("/templates", {"key": "otp", "description": "login code",
                                                "body": "Kodunuz: {{ code }}"})  # fmt: skip
    assert saved.status_code == 303 and saved.headers["location"] == "/dashboard/templates"
    listing = await signed_in.get("/templates")
    assert "otp" in listing.text and "login code" in listing.text
    async with httpx.AsyncClient() as rest:
        sent = await rest.post(
            url + "/v1/messages",
            json={"to": "+905551234567", "template": "otp", "variables": {"code": "4821"}},
            headers={"Authorization": f"Bearer {bed.api_key}"},
        )
    assert sent.status_code == 201 and sent.json()["template_key"] == "otp"
    assert bed.outbox[-1].text == "Kodunuz: 4821"


async def test_editing_keeps_the_key_and_replaces_the_text(
    signed_in: Console, bed: TestBed
) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "greet", "Merhaba {{ name }}!")
    editor = await signed_in.get("/templates/greet")
    assert editor.status_code == 200 and "readonly" in editor.text
    assert "Merhaba {{ name }}!" in editor.text
    await signed_in.post("/templates", {"key": "greet", "body": "Selam {{ name }}", "editing": "1"})
    assert (await bed.messenger.templates.get(bed.workspace.id, "greet")).body == "Selam {{ name }}"


async def test_the_admin_rules_refuse_a_bad_template(signed_in: Console, bed: TestBed) -> None:
    bad_key = await signed_in.post("/templates", {"key": "Not OK", "body": "x"})
    assert bad_key.status_code == 400 and "The key must match" in bad_key.text
    stray = await signed_in.post("/templates", {"key": "ok", "body": "Merhaba {{ name"})
    assert stray.status_code == 400 and "opens no placeholder" in stray.text
    assert await bed.messenger.templates.list(bed.workspace.id) == []


async def test_the_preview_renders_counts_and_names_the_variables(signed_in: Console) -> None:
    token = await signed_in.token("/templates/new")
    turkish = await signed_in.post(
        "/templates/preview",
        {"body": "Merhaba {{ name }}, {{ order }} kargoda.", "var_name": "Ayşe"},
        csrf=token,
    )
    assert turkish.status_code == 200
    assert "Merhaba Ayşe, {{ order }} kargoda." in turkish.text
    assert "gsm7_turkish" in turkish.text
    assert "name, order" in turkish.text  # the variables it needs
    assert "Without a sample value</dt><dd>order" in turkish.text
    emoji = await signed_in.post("/templates/preview", {"body": "Tebrikler 🎉"}, csrf=token)
    assert "ucs2" in emoji.text
    long = await signed_in.post("/templates/preview", {"body": "a" * 161}, csrf=token)
    assert "<dt>SMS parts</dt><dd>2 " in long.text
    stray = await signed_in.post("/templates/preview", {"body": "Merhaba {{ name"}, csrf=token)
    assert "cannot be saved" in stray.text and "opens no placeholder" in stray.text


async def test_markup_in_a_template_is_shown_as_text(signed_in: Console, bed: TestBed) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "xss", MARKUP)
    for path in ("/templates", "/templates/xss"):
        page = await signed_in.get(path)
        assert MARKUP not in page.text and "&lt;script&gt;" in page.text
    token = await signed_in.token("/templates/new")
    shown = await signed_in.post("/templates/preview", {"body": MARKUP}, csrf=token)
    assert MARKUP not in shown.text and "&lt;script&gt;" in shown.text


async def test_a_template_is_deleted(signed_in: Console, bed: TestBed) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "old", "x")
    deleted = await signed_in.post("/templates/old/delete")
    assert deleted.status_code == 303
    assert await bed.messenger.templates.list(bed.workspace.id) == []
    assert (await signed_in.get("/templates/old")).status_code == 404


async def test_a_whatsapp_template_name_and_language_are_saved_and_used_by_bizchat(
    signed_in: Console, bed: TestBed
) -> None:
    editor = await signed_in.get("/templates/new")
    assert '<details class="group" open>' in editor.text  # a bizchat connection: shown open
    saved = await signed_in.post("/templates", {
        "key": "shipped", "body": "Kargonuz {{ code }} yolda",
        "provider_template": "order_shipped", "provider_language": "en_US",
    })  # fmt: skip
    assert saved.status_code == 303
    template = await bed.messenger.templates.get(bed.workspace.id, "shipped")
    assert (template.provider_template, template.provider_language) == ("order_shipped", "en_US")
    listing = await signed_in.follow(saved)
    assert "order_shipped" in listing.text and "(en_US)" in listing.text
    principal = await bed.messenger.authenticate(bed.api_key)
    await bed.messenger.send(
        principal,
        {
            "to": "+905551234567",
            "provider": "bizchat",
            "template": "shipped",
            "variables": {"code": "K12"},
        },
    )
    sent = bed.outbox[-1]
    assert sent.template is not None
    assert (sent.template.name, sent.template.language, sent.template.parameters) == (
        "order_shipped", "en_US", ("K12",))  # fmt: skip


async def test_a_bad_whatsapp_template_name_is_said_beside_its_field(
    signed_in: Console, bed: TestBed
) -> None:
    refused = await signed_in.post("/templates", {
        "key": "shipped", "body": "x", "provider_template": "Order Shipped",
    })  # fmt: skip
    assert refused.status_code == 400
    assert 'id="provider_template-error">must be 1-512 lower-case letters' in refused.text
    assert (
        'value="Order Shipped"' in refused.text and '<details class="group" open>' in refused.text
    )
    orphan = await signed_in.post(
        "/templates", {"key": "x", "body": "x", "provider_language": "tr"}
    )
    assert orphan.status_code == 400 and 'id="provider_language-error"' in orphan.text
    assert await bed.messenger.templates.list(bed.workspace.id) == []


async def test_save_is_disabled_while_the_preview_says_the_text_cannot_be_saved(
    signed_in: Console,
) -> None:
    token = await signed_in.token("/templates/new")
    htmx = {"HX-Request": "true"}
    stray = await signed_in.post(
        "/templates/preview", {"body": "Merhaba {{ name"}, csrf=token, headers=htmx
    )
    assert 'id="save-state" hx-swap-oob="innerHTML"' in stray.text
    assert 'id="save-template" disabled' in stray.text
    fine = await signed_in.post("/templates/preview", {"body": "Merhaba"}, csrf=token, headers=htmx)
    assert 'id="save-state" hx-swap-oob="innerHTML"' in fine.text
    assert 'id="save-template">' in fine.text
    refused = await signed_in.post(
        "/templates", {"key": "stray", "editing": "0", "body": "Merhaba {{ name"}, csrf=token
    )
    assert refused.status_code == 400 and 'id="save-template" disabled' in refused.text
