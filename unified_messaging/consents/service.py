"""``messenger.consents``: the consents service (D33), the one door every edge uses.

REST (``/v1/consents``), MCP, the CLI and the library call these methods; the rules are
:mod:`.rules`' and the records the store's (:class:`~.store.ConsentStore`). Each recorded
change is ``iys_state`` ``pending`` and queues its registration with İYS (a work item, in
the transaction that records it: ``iys.work``); the worker registers it (``iys.register``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC
from typing import TYPE_CHECKING, Final

from .._domain import Workspace
from .._errors import Conflict, MessagingError, RequestInvalid, ResourceNotFound
from .._ids import new_id
from .._models import parse_model
from .._text import storable
from ..audit._actions import audited, of_workspace
from ..iys.work import registration_item
from .errors import ConsentNotFound
from .models import (
    Consent,
    ConsentChange,
    ConsentChangeOut,
    ConsentCreate,
    ConsentDetail,
    ConsentOut,
    ConsentPage,
    ConsentSearch,
    normalize_address,
)
from .rules import (
    CONSENT_POLICIES,
    ConsentPolicy,
    ConsentStatus,
    ConsentType,
    check_change,
    check_source,
    in_gmt3,
)
from .store import ConsentQuery

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._clock import Clock
    from ..store.base import Store

__all__ = ["Consents"]

#: How often a create re-reads and re-checks after a concurrent change of the same record
#: won the compare-and-set, before it answers 409.
_ATTEMPTS: Final = 3


def _of_consent(consent: ConsentOut, call: Mapping[str, object]) -> tuple[str | None, str]:
    auth = call["auth"]
    return getattr(auth, "workspace_id", None), consent.id


class Consents:
    """The consents of the caller's workspace and mode (D2: test keys keep their own)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    @audited("consent.record", _of_consent)
    async def create(
        self, auth: Principal, consent: ConsentCreate | Mapping[str, object]
    ) -> ConsentOut:
        """Record a consent: ``recipient``, ``type`` (MESAJ), ``recipient_type`` (BIREYSEL),
        ``status`` (ONAY/RET), ``source`` (an HS_* value; required unless TACIR) and
        ``consent_date`` (default now, unless TACIR). A second one for the same address,
        type and recipient type is a change of that record. A bad field is
        :class:`RequestInvalid` (400); a rule of İYS's a :class:`ConsentRefused` (422)."""
        parsed = parse_model(ConsentCreate, consent)
        recipient = normalize_address(parsed.type, parsed.recipient)
        check_source(parsed.recipient_type, parsed.source)
        # Kept in UTC like every time we store (to the second, as İYS reads it); shown to İYS
        # in GMT+3 (consent_date_iys).
        now = in_gmt3(self._clock.now()).astimezone(UTC)
        date = parsed.consent_date
        if date is not None:
            date = in_gmt3(date).astimezone(UTC)
        elif parsed.recipient_type == "BIREYSEL":
            date = now
        key = (recipient, parsed.type, parsed.recipient_type)
        # The change's id, kept by every try: the record names it as its current change.
        change_id = new_id("cnc")
        for _ in range(_ATTEMPTS):
            current = await self._store.find_consent(auth.workspace_id, auth.livemode, key)
            previous = None if current is None else current.status
            check_change(
                previous,
                None if current is None else current.consent_date,
                parsed.status,
                parsed.source,
                date,
                now,
            )
            if current is None:
                record = Consent(
                    id=new_id("cns"),
                    workspace_id=auth.workspace_id,
                    livemode=auth.livemode,
                    recipient=recipient,
                    type=parsed.type,
                    recipient_type=parsed.recipient_type,
                    status=parsed.status,
                    source=parsed.source,
                    consent_date=date,
                    created_at=now,
                    updated_at=now,
                    last_change_id=change_id,
                )
            else:
                record = replace(
                    current,
                    status=parsed.status,
                    source=parsed.source,
                    consent_date=date,
                    updated_at=now,
                    iys_state="pending",
                    last_change_id=change_id,
                    iys_transaction_id=None,
                    iys_error_code=None,
                    iys_error_message=None,
                )
            change = ConsentChange(record.id, parsed.status, parsed.source, date, now, change_id)
            if await self._record(record, change, previous):
                return ConsentOut.of(record)
        raise Conflict("The consent changed meanwhile; try again.")

    async def _record(
        self, record: Consent, change: ConsentChange, previous: ConsentStatus | None
    ) -> bool:
        """Store the change and queue its registration with İYS, in one transaction: a
        change recorded is a change the worker registers, whatever dies in between."""
        item = registration_item(
            change.id, record.id, record.workspace_id, livemode=record.livemode,
            now=change.recorded_at,
        )  # fmt: skip
        async with self._store.atomic():
            if not await self._store.record_consent(record, change, previous=previous):
                return False
            await self._store.enqueue_work(item)
        return True

    async def list(
        self, auth: Principal, search: ConsentSearch | Mapping[str, object] | None = None
    ) -> ConsentPage:
        """A page of the caller's consents, newest first (``GET /v1/consents``):
        ``recipient`` (a number or an e-mail, in any form a create takes), ``status``,
        ``limit`` 1-100 (default 20), ``starting_after`` (a consent's id; one this key
        cannot read is 404)."""
        parsed = ConsentSearch() if search is None else parse_model(ConsentSearch, search)
        recipients: tuple[str, ...] = ()
        if parsed.recipient is not None:
            recipients = _address_forms(parsed.recipient)
        older_than = None
        if parsed.starting_after is not None:
            cursor = await self._readable(auth, parsed.starting_after)
            if cursor is None:
                raise ResourceNotFound(f"starting_after: no consent {parsed.starting_after!r}.")
            older_than = (cursor.created_at, cursor.id)
        query = ConsentQuery(
            workspace_id=auth.workspace_id,
            livemode=auth.livemode,
            recipients=recipients,
            status=parsed.status,
            older_than=older_than,
            limit=parsed.limit + 1,  # one more: whether it comes back says if more follow
        )
        found = await self._store.list_consents(query)
        return ConsentPage(
            data=[ConsentOut.of(c) for c in found[: parsed.limit]],
            has_more=len(found) > parsed.limit,
        )

    async def get(self, auth: Principal, consent_id: str) -> ConsentDetail:
        """One consent with its history, oldest change first; :class:`ConsentNotFound`
        (404) for an id this key cannot read (another workspace's, or the other mode's)."""
        consent = await self._readable(auth, consent_id)
        if consent is None:
            raise ConsentNotFound(f"No consent {consent_id!r}.")
        history = await self._store.consent_history(consent.id)
        out = ConsentOut.of(consent)
        return ConsentDetail(
            **out.model_dump(), history=[ConsentChangeOut.of(change) for change in history]
        )

    @audited("workspace.consent_policy", of_workspace)
    async def set_policy(self, workspace_id: str, policy: ConsentPolicy) -> Workspace:
        """The workspace's consent check at the hand-over gate (D33): ``off`` (the default:
        the providers decide, as before), ``local`` (a commercial SMS whose recipient has
        no ONAY on record here for MESAJ and its recipient type ends ``failed`` with
        ``IYS_CONSENT_MISSING``, with no provider call) or ``iys`` (as ``local``, but a
        recipient with no record here is looked up in İYS, the answer cached)."""
        if policy not in CONSENT_POLICIES:
            raise RequestInvalid.for_field(
                "consent_policy", f"must be one of: {', '.join(CONSENT_POLICIES)}"
            )
        workspace = await self._store.get_workspace(workspace_id)
        if workspace is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        workspace = replace(workspace, consent_policy=policy)
        await self._store.update_workspace(workspace)
        return workspace

    async def _readable(self, auth: Principal, consent_id: str) -> Consent | None:
        if not storable(consent_id):
            return None
        return await self._store.get_consent(auth.workspace_id, auth.livemode, consent_id)


def _address_forms(raw: str) -> tuple[str, ...]:
    """What a list's ``recipient`` filter matches: as typed, and as a number and as an
    e-mail would be kept."""
    forms = [raw]
    types: tuple[ConsentType, ...] = ("MESAJ", "EPOSTA")
    for type_ in types:
        try:
            normalized = normalize_address(type_, raw)
        except MessagingError:
            continue
        if normalized not in forms:
            forms.append(normalized)
    return tuple(forms)
