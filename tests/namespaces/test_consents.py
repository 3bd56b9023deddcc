"""``messenger.consents``: record a consent and its changes, list, read with history; the
workspace's consent policy; refusals and audit rows."""

from __future__ import annotations

from datetime import timedelta

import pytest

from namespaces._audit import audit_rows
from unified_messaging import ManualClock, RequestInvalid, ResourceNotFound
from unified_messaging.consents import ConsentNotFound, ConsentRefused
from unified_messaging.testing import TestBed

ONAY = {"recipient": "0555 000 00 22", "status": "ONAY", "source": "HS_WEB"}


async def test_create_a_consent_change_it_and_read_its_history(bed: TestBed) -> None:
    consents = bed.messenger.consents
    given = await consents.create(bed.principal, ONAY)
    assert (given.recipient, given.type, given.recipient_type, given.status, given.iys_state) == (
        "+905550000022", "MESAJ", "BIREYSEL", "ONAY", "pending",
    )  # fmt: skip

    assert isinstance(bed.clock, ManualClock)
    bed.clock.advance(timedelta(minutes=1))  # a change is dated after the one on record
    taken_back = await consents.create(bed.principal, {**ONAY, "status": "RET"})

    assert taken_back.id == given.id  # the same record, changed
    detail = await consents.get(bed.principal, given.id)
    assert detail.status == "RET"
    assert [change.status for change in detail.history] == ["ONAY", "RET"]
    page = await consents.list(bed.principal, {"recipient": "05550000022"})
    assert [c.id for c in page.data] == [given.id] and not page.has_more
    assert [row for row in await audit_rows(bed.messenger) if row[0] == "consent.record"] == [
        ("consent.record", bed.workspace.id, given.id),
        ("consent.record", bed.workspace.id, given.id),
    ]


async def test_set_policy_changes_the_workspace_check_and_is_audited(bed: TestBed) -> None:
    workspace = await bed.messenger.consents.set_policy(bed.workspace.id, "local")

    assert workspace.consent_policy == "local"
    assert (await bed.messenger.workspaces.get(bed.workspace.id)).consent_policy == "local"
    assert (await audit_rows(bed.messenger))[0] == (
        "workspace.consent_policy", bed.workspace.id, bed.workspace.id,
    )  # fmt: skip
    with pytest.raises(RequestInvalid) as bad:
        await bed.messenger.consents.set_policy(bed.workspace.id, "strict")  # type: ignore[arg-type]
    assert [d.field for d in bad.value.details] == ["consent_policy"]
    with pytest.raises(ResourceNotFound):
        await bed.messenger.consents.set_policy("ws_nope", "off")


async def test_refusals_a_rule_of_iys_a_bad_field_and_another_modes_consent(bed: TestBed) -> None:
    consents = bed.messenger.consents
    with pytest.raises(ConsentRefused) as no_source:
        await consents.create(bed.principal, {"recipient": "+905550000022", "status": "ONAY"})
    assert (no_source.value.code, no_source.value.http_status) == ("CONSENT_SOURCE_REQUIRED", 422)
    with pytest.raises(RequestInvalid) as bad:
        await consents.create(bed.principal, {**ONAY, "status": "MAYBE"})
    assert bad.value.code == "VALIDATION_ERROR"
    assert not [row for row in await audit_rows(bed.messenger) if row[0] == "consent.record"]

    given = await consents.create(bed.principal, ONAY)
    live = await bed.messenger.principal(bed.workspace.id, livemode=True)
    with pytest.raises(ConsentNotFound) as elsewhere:
        await consents.get(live, given.id)  # test keys keep their own (D2)
    assert elsewhere.value.code == "CONSENT_NOT_FOUND"
    assert (await consents.list(live)).data == []
