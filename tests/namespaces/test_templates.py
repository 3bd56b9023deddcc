"""Templates (D9): ``render_template``, template sends, and the admin rules on templates."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from namespaces._audit import audit_rows
from unified_messaging import (
    BodyTooLong,
    ManualClock,
    RequestInvalid,
    ResourceNotFound,
    TemplateNotFound,
    TemplateVariableMissing,
    render_template,
)
from unified_messaging.testing import TestBed

NUMBER = "+905321234567"
OTHER_NUMBER = "+905339876543"


async def add_template(bed: TestBed, key: str, body: str) -> None:
    await bed.messenger.templates.set(bed.workspace.id, key, body)


def template_send(key: str, to: str = NUMBER, **variables: Any) -> dict[str, Any]:
    return {"to": to, "template": key, "variables": variables}


# ------------------------------------------------------------------------------ render_template


@pytest.mark.parametrize(
    "body",
    ["Hi {{name}}!", "Hi {{ name }}!", "Hi {{  name  }}!", "Hi {{\tname\n}}!", "Hi {{name }}!"],
)
def test_placeholder_spaces_are_optional(body: str) -> None:
    assert render_template(body, {"name": "Ayşe"}) == "Hi Ayşe!"


def test_a_repeated_placeholder_is_filled_everywhere() -> None:
    assert render_template("{{ a }}-{{a}}-{{  a }}", {"a": "x"}) == "x-x-x"


def test_several_placeholders_are_filled_independently() -> None:
    body = "Dear {{ first }} {{ last }}, order {{ order_1 }} ships {{_when}}."
    values = {"first": "Ayşe", "last": "Yılmaz", "order_1": "A-1042", "_when": "today"}
    assert render_template(body, values) == "Dear Ayşe Yılmaz, order A-1042 ships today."


def test_a_missing_variable_is_named() -> None:
    with pytest.raises(TemplateVariableMissing) as info:
        render_template("Hi {{ name }}, your code is {{ code }}", {"code": 1234})
    assert (info.value.code, info.value.http_status) == ("TEMPLATE_VARIABLE_MISSING", 422)
    assert "name" in info.value.message
    assert "code" not in info.value.message


def test_every_missing_variable_is_named() -> None:
    with pytest.raises(TemplateVariableMissing) as info:
        render_template("{{ first }} {{ second }} {{ first }}", None)
    assert "first" in info.value.message
    assert "second" in info.value.message


def test_variable_names_are_case_sensitive() -> None:
    with pytest.raises(TemplateVariableMissing):
        render_template("Hi {{ Name }}", {"name": "x"})


def test_extra_variables_are_ignored() -> None:
    assert render_template("Hi {{ name }}", {"name": "A", "unused": "B", "x": 1}) == "Hi A"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (42, "42"),
        (-7, "-7"),
        (1.5, "1.5"),
        (-0.25, "-0.25"),
        (True, "true"),
        (False, "false"),
        ("", ""),
        ("Ayşe 😀", "Ayşe 😀"),
    ],
)
def test_scalar_values_render_as_json_reads_them(value: object, text: str) -> None:
    assert render_template("[{{ v }}]", {"v": value}) == f"[{text}]"


def test_a_value_that_looks_like_a_placeholder_is_not_expanded() -> None:
    values = {"a": "{{ b }}", "b": "expanded"}
    assert render_template("{{ a }} / {{ b }}", values) == "{{ b }} / expanded"


@pytest.mark.parametrize(
    "literal",
    [
        "{{ 1name }}",
        "{{ first-name }}",
        "{{ user.name }}",
        "{ name }",
        "{{}}",
        "{{ }}",
        "{{ a b }}",
    ],
)
def test_text_that_is_not_a_placeholder_stays_literal(literal: str) -> None:
    assert render_template(f"x {literal} y", {"name": "N", "a": "A"}) == f"x {literal} y"


def test_a_body_without_placeholders_renders_as_itself() -> None:
    assert render_template("Plain text, 100% {literal}.", None) == "Plain text, 100% {literal}."


def test_rendered_text_of_1600_characters_is_allowed() -> None:
    assert render_template("{{ v }}!", {"v": "x" * 1599}) == "x" * 1599 + "!"


def test_rendered_text_of_1601_characters_is_422_body_too_long() -> None:
    with pytest.raises(BodyTooLong) as info:
        render_template("{{ v }}!", {"v": "x" * 1600})
    assert (info.value.code, info.value.http_status) == ("BODY_TOO_LONG", 422)
    assert "1601" in info.value.message


def test_rendering_to_empty_text_is_422_body_too_long() -> None:
    with pytest.raises(BodyTooLong):
        render_template("{{ v }}", {"v": ""})


def test_an_integer_too_long_to_print_is_body_too_long_not_a_crash() -> None:
    # Python refuses str() of ints over 4300 digits with a ValueError.
    with pytest.raises(BodyTooLong):
        render_template("{{ v }}", {"v": 10**5000})


# ------------------------------------------------------------------------------ template sends


async def test_a_template_send_renders_the_variables(bed: TestBed) -> None:
    await add_template(bed, "order_shipped", "Merhaba {{ name }}, {{order}} yolda.")
    request = template_send("order_shipped", name="Ayşe", order="A-1042")
    response = await bed.messenger.send(bed.principal, request)

    assert response.status == "sent"
    assert bed.outbox.texts() == ["Merhaba Ayşe, A-1042 yolda."]


async def test_a_template_send_response_carries_template_and_template_key(bed: TestBed) -> None:
    await add_template(bed, "welcome", "Hoş geldiniz")
    response = await bed.messenger.send(bed.principal, {"to": NUMBER, "template": "welcome"})

    body = response.to_dict()
    assert (body["template"], body["template_key"]) == ("welcome", "welcome")
    record = await bed.messenger.get_message(bed.principal, response.job_id)
    assert (record.template, record.template_key) == ("welcome", "welcome")


async def test_a_plain_send_response_carries_no_template(bed: TestBed) -> None:
    response = await bed.messenger.send(bed.principal, {"to": NUMBER, "body": "x"})
    assert "template" not in response.to_dict()
    assert "template_key" not in response.to_dict()


async def test_a_template_send_with_typed_variables(bed: TestBed) -> None:
    await add_template(bed, "typed", "{{ n }} items, {{ price }} TL, paid: {{ paid }}")
    request = {"to": NUMBER, "template": "typed", "variables": {"n": 3, "price": 9.5, "paid": True}}
    await bed.messenger.send(bed.principal, request)
    assert bed.outbox.texts() == ["3 items, 9.5 TL, paid: true"]


async def test_a_missing_variable_in_a_send_is_422_naming_it(bed: TestBed) -> None:
    await add_template(bed, "otp", "Your code is {{ code }}")
    with pytest.raises(TemplateVariableMissing) as info:
        await bed.messenger.send(bed.principal, template_send("otp", cod="1234"))
    assert (info.value.code, info.value.http_status) == ("TEMPLATE_VARIABLE_MISSING", 422)
    assert "code" in info.value.message
    assert len(bed.outbox) == 0


async def test_extra_variables_in_a_send_are_ignored(bed: TestBed) -> None:
    await add_template(bed, "otp", "Your code is {{ code }}")
    await bed.messenger.send(bed.principal, template_send("otp", code="1234", lang="tr"))
    assert bed.outbox.texts() == ["Your code is 1234"]


async def test_a_send_rendering_1600_characters_is_sent(bed: TestBed) -> None:
    await add_template(bed, "long", "{{ v }}")
    await bed.messenger.send(bed.principal, template_send("long", v="ş" * 1600))
    assert bed.outbox.texts() == ["ş" * 1600]


async def test_a_send_rendering_1601_characters_is_422_and_sends_nothing(bed: TestBed) -> None:
    await add_template(bed, "long", "{{ v }}.")
    with pytest.raises(BodyTooLong) as info:
        await bed.messenger.send(bed.principal, template_send("long", v="x" * 1600))
    assert (info.value.code, info.value.http_status) == ("BODY_TOO_LONG", 422)
    assert len(bed.outbox) == 0


async def test_a_send_rendering_empty_text_is_422(bed: TestBed) -> None:
    await add_template(bed, "empty", "{{ v }}")
    with pytest.raises(BodyTooLong):
        await bed.messenger.send(bed.principal, template_send("empty", v=""))


async def test_a_variable_value_is_not_re_expanded_in_a_send(bed: TestBed) -> None:
    await add_template(bed, "echo", "{{ a }}|{{ b }}")
    await bed.messenger.send(bed.principal, template_send("echo", a="{{ b }}", b="B"))
    assert bed.outbox.texts() == ["{{ b }}|B"]


async def test_a_control_character_in_a_variable_is_a_400_naming_it(bed: TestBed) -> None:
    # The rendered text is the message body, so a variable obeys the body's character rules.
    await add_template(bed, "hello", "Hi {{ name }}")
    with pytest.raises(RequestInvalid) as info:
        await bed.messenger.send(bed.principal, template_send("hello", name="A\x00B"))
    assert [d.field for d in info.value.details] == ["variables.name"]
    assert len(bed.outbox) == 0


async def test_newlines_in_a_variable_are_kept(bed: TestBed) -> None:
    await add_template(bed, "hello", "Hi {{ name }}")
    await bed.messenger.send(bed.principal, template_send("hello", name="A\r\n\tB"))
    assert bed.outbox.texts() == ["Hi A\r\n\tB"]


async def test_an_unknown_template_key_is_404(bed: TestBed) -> None:
    with pytest.raises(TemplateNotFound) as info:
        await bed.messenger.send(bed.principal, {"to": NUMBER, "template": "missing"})
    assert (info.value.code, info.value.http_status) == ("TEMPLATE_NOT_FOUND", 404)


async def test_another_workspaces_template_is_404(bed: TestBed) -> None:
    other = await bed.messenger.workspaces.create("other")
    await bed.messenger.templates.set(other.id, "theirs", "Not yours")
    with pytest.raises(TemplateNotFound):
        await bed.messenger.send(bed.principal, {"to": NUMBER, "template": "theirs"})


async def test_the_same_key_in_two_workspaces_keeps_each_body(bed: TestBed) -> None:
    other = await bed.messenger.workspaces.create("other")
    await bed.messenger.templates.set(other.id, "hello", "theirs")
    await add_template(bed, "hello", "ours")
    await bed.messenger.send(bed.principal, {"to": NUMBER, "template": "hello"})
    assert bed.outbox.texts() == ["ours"]


async def test_a_deleted_template_is_404(bed: TestBed) -> None:
    await add_template(bed, "gone", "soon gone")
    await bed.messenger.templates.delete(bed.workspace.id, "gone")
    with pytest.raises(TemplateNotFound):
        await bed.messenger.send(bed.principal, {"to": NUMBER, "template": "gone"})


async def test_bulk_template_mode_renders_each_items_variables(bed: TestBed) -> None:
    await add_template(bed, "hello", "Hi {{ name }}")
    items = [
        {"to": NUMBER, "variables": {"name": "A"}},
        {"to": OTHER_NUMBER, "variables": {"name": "B"}},
    ]
    response = await bed.messenger.send_bulk(bed.principal, {"template": "hello", "items": items})

    assert (response.template, response.template_key) == ("hello", "hello")
    assert sorted(zip(bed.outbox.recipients(), bed.outbox.texts(), strict=True)) == [
        (NUMBER, "Hi A"),
        (OTHER_NUMBER, "Hi B"),
    ]


async def test_bulk_item_rendering_too_long_fails_only_that_item(bed: TestBed) -> None:
    await add_template(bed, "hello", "Hi {{ name }}")
    items = [
        {"to": NUMBER, "variables": {"name": "x" * 1600}},
        {"to": NUMBER, "variables": {"name": "A"}},
    ]
    response = await bed.messenger.send_bulk(bed.principal, {"template": "hello", "items": items})

    assert [r.status for r in response.results] == ["failed", "sent"]
    assert response.results[0].error is not None
    assert response.results[0].error.code == "BODY_TOO_LONG"


# ------------------------------------------------------------------------------ admin


@pytest.mark.parametrize(
    "key", ["Welcome", "order-shipped", "a" * 65, "", "with space", "ünicode", "a\n"]
)
async def test_set_template_with_a_bad_key_is_a_400_naming_key(bed: TestBed, key: str) -> None:
    with pytest.raises(RequestInvalid) as info:
        await bed.messenger.templates.set(bed.workspace.id, key, "body")
    assert info.value.http_status == 400
    assert [d.field for d in info.value.details] == ["key"]


@pytest.mark.parametrize("key", ["a", "a" * 64, "order_shipped_2"])
async def test_set_template_accepts_keys_of_the_pattern(bed: TestBed, key: str) -> None:
    template = await bed.messenger.templates.set(bed.workspace.id, key, "body")
    assert template.key == key


@pytest.mark.parametrize("body", ["", "x" * 1601])
async def test_set_template_with_a_body_outside_1_to_1600_is_a_400(bed: TestBed, body: str) -> None:
    with pytest.raises(RequestInvalid) as info:
        await bed.messenger.templates.set(bed.workspace.id, "key", body)
    assert [d.field for d in info.value.details] == ["body"]


async def test_set_template_accepts_a_body_of_1600_characters(bed: TestBed) -> None:
    template = await bed.messenger.templates.set(bed.workspace.id, "key", "x" * 1600)
    assert len(template.body) == 1600


async def test_updating_a_template_keeps_created_at_and_moves_updated_at(bed: TestBed) -> None:
    clock = bed.clock
    assert isinstance(clock, ManualClock)
    first = await bed.messenger.templates.set(bed.workspace.id, "promo", "v1")
    clock.advance(timedelta(hours=1))
    second = await bed.messenger.templates.set(
        bed.workspace.id, "promo", "v2", description="second"
    )

    assert second.created_at == first.created_at
    assert second.updated_at == first.updated_at + timedelta(hours=1)
    stored = await bed.messenger.templates.get(bed.workspace.id, "promo")
    assert (stored.body, stored.description, stored.created_at) == (
        "v2",
        "second",
        first.created_at,
    )


async def test_a_send_uses_the_updated_body(bed: TestBed) -> None:
    await add_template(bed, "promo", "v1")
    await add_template(bed, "promo", "v2")
    await bed.messenger.send(bed.principal, {"to": NUMBER, "template": "promo"})
    assert bed.outbox.texts() == ["v2"]


async def test_set_template_in_an_unknown_workspace_is_404(bed: TestBed) -> None:
    with pytest.raises(ResourceNotFound) as info:
        await bed.messenger.templates.set("ws_missing", "key", "body")
    assert info.value.http_status == 404


# ------------------------------------------------------------------ list, preview, audit


async def test_list_holds_the_workspaces_templates_by_key(bed: TestBed) -> None:
    await add_template(bed, "welcome", "Hi {{ name }}")
    await add_template(bed, "bye", "Bye")
    other = await bed.messenger.workspaces.create("other")
    await bed.messenger.templates.set(other.id, "elsewhere", "x")

    listed = await bed.messenger.templates.list(bed.workspace.id)

    assert [(t.key, t.body) for t in listed] == [("bye", "Bye"), ("welcome", "Hi {{ name }}")]


async def test_preview_fills_what_it_has_and_names_what_is_missing(bed: TestBed) -> None:
    preview = bed.messenger.templates.preview(
        "Merhaba {{ name }}, kod {{ code }}", {"name": "Ayşe"}
    )

    assert preview.text == "Merhaba Ayşe, kod {{ code }}"
    assert (preview.variables, preview.missing, preview.problem) == (
        ("name", "code"),
        ("code",),
        None,
    )
    assert preview.sms is not None and preview.sms.segments == 1
    assert bed.messenger.templates.preview("x" * 1601).problem is not None


async def test_set_and_delete_are_audited_and_a_refused_set_writes_no_row(bed: TestBed) -> None:
    await add_template(bed, "welcome", "Hi")
    with pytest.raises(RequestInvalid):
        await bed.messenger.templates.set(bed.workspace.id, "bad key!", "Hi")
    await bed.messenger.templates.delete(bed.workspace.id, "welcome")

    rows = [row for row in await audit_rows(bed.messenger) if row[0].startswith("template.")]
    assert rows == [
        ("template.delete", bed.workspace.id, "welcome"),
        ("template.set", bed.workspace.id, "welcome"),
    ]
    with pytest.raises(TemplateNotFound) as gone:
        await bed.messenger.templates.get(bed.workspace.id, "welcome")
    assert gone.value.code == "TEMPLATE_NOT_FOUND"
