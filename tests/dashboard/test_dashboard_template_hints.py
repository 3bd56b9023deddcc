"""The template editor's commercial content hints over real HTTP (D33): what the text as
shown misses as a commercial SMS of the workspace, and its parts with the operator's code,
through ``messenger.content.lint``."""

from __future__ import annotations

from _dash_support import Console

from unified_messaging.testing import TestBed

COMPLETE = (
    "KAMPANYA: Örnek Gıda A.Ş. {{ name }}, %20 indirim. Mersis 0123456789012345. "
    "RET yazıp 3338'e gönderin."
)


async def test_the_preview_names_what_a_commercial_text_misses(signed_in: Console) -> None:
    token = await signed_in.token("/templates/new")

    bare = await signed_in.post("/templates/preview", {"body": "Merhaba {{ name }}"}, csrf=token)

    assert bare.status_code == 200
    for code in ("OPT_OUT_MISSING", "BRAND_NOT_SET", "COMMERCIAL_TAG_MISSING"):
        assert f"<code>{code}</code>" in bare.text
    assert "Warnings: a commercial SMS is still sent." in bare.text


async def test_a_complete_text_misses_nothing_under_the_workspaces_rules(
    signed_in: Console, bed: TestBed
) -> None:
    await bed.messenger.content.update_rules(
        bed.workspace.id, trade_name="Örnek Gıda A.Ş.", mersis="0123456789012345", refuse=True
    )
    token = await signed_in.token("/templates/new")

    complete = await signed_in.post("/templates/preview", {"body": COMPLETE, "var_name": "Ayşe"},
                                    csrf=token)  # fmt: skip
    partial = await signed_in.post("/templates/preview", {"body": "KAMPANYA RET 3338"},
                                   csrf=token)  # fmt: skip

    assert "Nothing missing" in complete.text
    assert "<code>TRADE_NAME_MISSING</code>" in partial.text
    assert "<code>MERSIS_MISSING</code>" in partial.text
    assert "This workspace refuses a commercial SMS" in partial.text


async def test_the_parts_as_sent_count_the_operators_code(signed_in: Console) -> None:
    token = await signed_in.token("/templates/new")

    fits = await signed_in.post("/templates/preview", {"body": "a" * 155}, csrf=token)
    spills = await signed_in.post("/templates/preview", {"body": "a" * 156}, csrf=token)

    assert "<dt>SMS parts</dt><dd>1 " in fits.text
    assert "<dt>SMS parts as sent</dt><dd>1 " in fits.text
    assert "<dt>SMS parts</dt><dd>1 " in spills.text
    assert "<dt>SMS parts as sent</dt><dd>2 " in spills.text


async def test_the_editor_page_shows_the_hints_of_the_stored_text(
    signed_in: Console, bed: TestBed
) -> None:
    await bed.messenger.templates.set(bed.workspace.id, "promo", "<b>indirim</b>")

    page = (await signed_in.get("/templates/promo")).text

    assert "<code>OPT_OUT_MISSING</code>" in page
    assert "<b>indirim</b>" not in page and "&lt;b&gt;indirim&lt;/b&gt;" in page
