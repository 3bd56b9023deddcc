"""``messenger.content``: the workspace's content rules (rules, update_rules, set_rules) and
the hints ``lint`` gives a commercial SMS under them; refusals and the audit row."""

from __future__ import annotations

import pytest

from namespaces._audit import audit_rows
from unified_messaging import ContentRules, RequestInvalid, ResourceNotFound
from unified_messaging.testing import TestBed

MERSIS = "0123456789012345"


async def test_rules_start_empty_and_update_changes_only_what_is_given(bed: TestBed) -> None:
    content = bed.messenger.content
    assert await content.rules(bed.workspace.id) == ContentRules()

    updated = await content.update_rules(
        bed.workspace.id, trade_name=" Acme A.Ş. ", mersis="0123-4567.8901 2345"
    )
    kept = await content.update_rules(bed.workspace.id, opt_out="IPTAL yaz")

    assert (updated.trade_name, updated.mersis) == ("Acme A.Ş.", MERSIS)
    assert (kept.trade_name, kept.mersis, kept.opt_out, kept.refuse) == (
        "Acme A.Ş.", MERSIS, "IPTAL yaz", False,
    )  # fmt: skip
    assert await content.rules(bed.workspace.id) == kept
    assert (await audit_rows(bed.messenger))[0] == (
        "workspace.content_rules", bed.workspace.id, bed.workspace.id,
    )  # fmt: skip


async def test_set_rules_replaces_them_and_lint_reads_them(bed: TestBed) -> None:
    content = bed.messenger.content
    before = await content.lint(bed.principal, "Kampanya! %20 indirim")
    assert "BRAND_NOT_SET" in before.codes

    workspace = await content.set_rules(
        bed.workspace.id, ContentRules(trade_name="Acme", mersis=MERSIS)
    )
    assert workspace.content_rules.trade_name == "Acme"

    missing = await content.lint(bed.principal, "Kampanya! %20 indirim")
    assert {"TRADE_NAME_MISSING", "MERSIS_MISSING", "OPT_OUT_MISSING"} <= set(missing.codes)
    complete = await content.lint(
        bed.principal, f"Acme: Kampanya! %20 indirim. Mersis {MERSIS}. RET yaz 3338'e gonder"
    )
    assert not {"TRADE_NAME_MISSING", "MERSIS_MISSING"} & set(complete.codes)
    assert (complete.parts.parts, complete.parts.parts_with_operator_code) == (1, 1)


async def test_a_bad_value_or_an_unknown_workspace_is_refused_and_nothing_changes(
    bed: TestBed,
) -> None:
    content = bed.messenger.content
    rows = await audit_rows(bed.messenger)
    with pytest.raises(RequestInvalid) as bad:
        await content.update_rules(bed.workspace.id, mersis="12345")
    assert (bad.value.code, [d.field for d in bad.value.details]) == (
        "VALIDATION_ERROR",
        ["mersis"],
    )
    with pytest.raises(RequestInvalid):
        await content.update_rules(bed.workspace.id, refuse=True)  # nothing to check yet
    with pytest.raises(ResourceNotFound):
        await content.rules("ws_nope")
    assert await content.rules(bed.workspace.id) == ContentRules()
    assert await audit_rows(bed.messenger) == rows
