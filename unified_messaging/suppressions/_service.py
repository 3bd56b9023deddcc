"""The façade's suppression list: the admin methods, the send's admission check,
and the opt-outs that arrive by themselves (inbound replies, a blocked bot).

The rules are in :mod:`._suppressions` and :mod:`._inbound`; this mixin runs them against
the store. Every edge (REST, MCP, the CLI, the dashboard, the library) calls these methods.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from .._clock import Clock
from .._domain import Connection
from .._errors import MessagingError, RequestInvalid, ResourceNotFound
from .._ids import new_id
from .._models import parse_model
from .._recipients import normalize_recipient
from .._text import storable
from .._types import Channel
from ..audit._actions import audited
from ..providers.base import InboundMessage
from ..store.base import Store, SuppressionQuery, WorkItem
from ._inbound import InboundRecord, SimulatedInbound, opt_out_word
from ._rules import (
    StopWords,
    Suppression,
    SuppressionCreate,
    SuppressionOut,
    SuppressionPage,
    SuppressionSearch,
    SuppressionTarget,
    opt_out_entry,
    suppressed_refusal,
    suppression_key,
)

if TYPE_CHECKING:
    from .._access.principal import Principal

__all__ = ["ImportResult", "OptOuts", "SimulationHelpers", "Suppressions", "refuse_suppressed"]

#: The work kind of the lifecycle's event items (``_lifecycle.runtime.WORK_EVENT``).
_WORK_EVENT = "event"
ManualSource = Literal["api", "cli", "dashboard", "library", "import"]


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What :meth:`Suppressions.add_many` did: how many entries were new,
    how many were on the list already, and each refused row (its 1-based number and why)."""

    added: int
    existing: int
    refused: tuple[tuple[int, str], ...]


def _of_entry(entry: Suppression, call: Mapping[str, object]) -> tuple[str | None, str]:
    return entry.workspace_id, entry.id


def _of_import(result: ImportResult, call: Mapping[str, object]) -> tuple[str | None, str]:
    auth = call["auth"]
    workspace_id = getattr(auth, "workspace_id", None)
    return workspace_id, f"{result.added} added, {result.existing} existing"


async def refuse_suppressed(
    store: Store, workspace_id: str, livemode: bool, channel: Channel, to: str
) -> None:
    """One message's check, at admission and again at the worker's hand-over of one that
    waited: :class:`RecipientSuppressed` (422) when ``to`` (normalised) is on
    the list of its workspace, mode and channel. One primary-key lookup."""
    if await store.suppressed(workspace_id, livemode, channel, [suppression_key(channel, to)]):
        raise suppressed_refusal(channel, to)


class Suppressions:
    """The caller's suppression list: ``messenger.suppressions.add(auth, {...})``."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def __repr__(self) -> str:
        return "<messenger.suppressions>"

    @audited("suppression.add", _of_entry)
    async def add(
        self,
        auth: Principal,
        entry: SuppressionCreate | Mapping[str, object],
        *,
        source: ManualSource = "library",
    ) -> Suppression:
        """Put a recipient on the caller's suppression list (its workspace and mode).

        ``entry``: ``channel`` (``sms``, ``chatbot``, ``bizchat``), ``recipient`` (any form a
        send's ``to`` accepts) and an optional ``reason``. A bad field is
        :class:`RequestInvalid` (400), a recipient the channel cannot reach
        :class:`InvalidRecipient` (422). Idempotent: an entry already there is returned as
        stored (its first reason, source and time stay)."""
        parsed = parse_model(SuppressionCreate, entry)
        recipient = _listed(parsed.channel, parsed.recipient)
        stored, _ = await self._store.add_suppression(self._entry(auth, parsed, recipient, source))
        return stored

    def _entry(
        self, auth: Principal, parsed: SuppressionCreate, recipient: str, source: ManualSource
    ) -> Suppression:
        return Suppression(
            id=new_id("sup"),
            workspace_id=auth.workspace_id,
            livemode=auth.livemode,
            channel=parsed.channel,
            recipient=recipient,
            reason=parsed.reason,
            source=source,
            created_at=self._clock.now(),
        )

    @audited("suppression.remove", _of_entry)
    async def remove(
        self, auth: Principal, target: SuppressionTarget | Mapping[str, object]
    ) -> Suppression:
        """Take a recipient off the list (``channel`` and ``recipient``, as for
        :meth:`add`); :class:`ResourceNotFound` (404) when it is not on it."""
        parsed = parse_model(SuppressionTarget, target)
        recipient = _listed(parsed.channel, parsed.recipient)
        removed = await self._store.remove_suppression(
            auth.workspace_id, auth.livemode, parsed.channel, recipient
        )
        if removed is None:
            raise ResourceNotFound(f"{recipient} is not on the {parsed.channel} suppression list.")
        return removed

    @audited("suppression.import", _of_import)
    async def add_many(
        self,
        auth: Principal,
        entries: Iterable[SuppressionCreate | Mapping[str, object]],
        *,
        source: ManualSource = "import",
    ) -> ImportResult:
        """Add many entries (a CSV's rows): each as :meth:`add`; a row it
        refuses is counted in ``refused`` with its reason and the others are still added.
        One audit row for the whole import."""
        added = existing = 0
        refused: builtins.list[tuple[int, str]] = []
        for number, entry in enumerate(entries, start=1):
            try:
                parsed = parse_model(SuppressionCreate, entry)
                recipient = _listed(parsed.channel, parsed.recipient)
            except MessagingError as exc:
                refused.append((number, exc.message))
                continue
            _, new = await self._store.add_suppression(self._entry(auth, parsed, recipient, source))
            added, existing = (added + 1, existing) if new else (added, existing + 1)
        return ImportResult(added, existing, tuple(refused))

    async def list(
        self,
        auth: Principal,
        search: SuppressionSearch | Mapping[str, object] | None = None,
    ) -> SuppressionPage:
        """A page of the caller's suppression list, newest first (``GET /v1/suppressions``):
        ``channel``, ``recipient`` (normalised as a send's ``to`` for ``channel``; without
        one, matched as typed and in each channel's form),
        ``limit`` 1-100 (default 20), ``starting_after`` (an entry's id; one this key cannot
        read is 404)."""
        parsed = SuppressionSearch() if search is None else parse_model(SuppressionSearch, search)
        recipients: tuple[str, ...] = ()
        if parsed.recipient is not None:
            recipients = _recipient_forms(parsed.channel, parsed.recipient)
        older_than = None
        if parsed.starting_after is not None:
            cursor = None
            if storable(parsed.starting_after):
                cursor = await self._store.get_suppression(
                    auth.workspace_id, auth.livemode, parsed.starting_after
                )
            if cursor is None:
                raise ResourceNotFound(f"starting_after: no entry {parsed.starting_after!r}.")
            older_than = (cursor.created_at, cursor.id)
        query = SuppressionQuery(
            workspace_id=auth.workspace_id,
            livemode=auth.livemode,
            channel=parsed.channel,
            recipients=recipients,
            older_than=older_than,
            limit=parsed.limit + 1,  # one more: whether it comes back says if more follow
        )
        found = await self._store.list_suppressions(query)
        return SuppressionPage(
            data=[SuppressionOut.of(entry) for entry in found[: parsed.limit]],
            has_more=len(found) > parsed.limit,
        )


class OptOuts:
    """The send path's side of the list (the façade's, not a namespace): a send's admission
    check, and the opt-outs that arrive by themselves (inbound replies, a blocked bot)."""

    def __init__(self, store: Store, clock: Clock, stop_words: StopWords) -> None:
        self._store = store
        self._clock = clock
        self._stop_words = stop_words

    # ------------------------------------------------------------------ a send's admission

    async def suppressed(
        self, auth: Principal, channel: Channel, recipients: Sequence[str]
    ) -> set[str]:
        """Which of a send's (normalised) recipients are on the list. One
        indexed lookup per request (the store's primary key), test keys included."""
        keys = [suppression_key(channel, r) for r in recipients]
        found = await self._store.suppressed(auth.workspace_id, auth.livemode, channel, keys)
        return {r for r, key in zip(recipients, keys, strict=True) if key in found}

    async def refuse(self, auth: Principal, channel: Channel, to: str) -> None:
        """A single send's admission check: :class:`RecipientSuppressed` (422)."""
        await refuse_suppressed(self._store, auth.workspace_id, auth.livemode, channel, to)

    # ------------------------------------------------------------------ opt-outs

    async def opt_out(
        self, workspace_id: str, livemode: bool, channel: Channel, recipient: str, reason: str
    ) -> None:
        """An opt-out that arrived by itself: an entry whose source is the channel. Not an
        admin change, so not audited; idempotent like every add."""
        now = self._clock.now()
        entry = opt_out_entry(workspace_id, livemode, channel, recipient, reason, now=now)
        await self._store.add_suppression(entry)

    async def take_inbound(
        self, connection: Connection, messages: Sequence[InboundMessage], *, livemode: bool
    ) -> builtins.list[InboundRecord]:
        """Each reply: an opt-out if it is one, and a ``message.inbound`` event for the
        workspace's endpoints (durable, under an id stable across the provider's retries).
        Returns the replies as taken (a text no store can keep is dropped)."""
        if not messages:
            return []
        wants_events = bool(await self._store.list_webhook_endpoints(connection.workspace_id))
        events: builtins.list[WorkItem] = []
        taken: builtins.list[InboundRecord] = []
        for message in messages:
            record = await self._inbound_record(connection, message, livemode)
            if record is not None:
                taken.append(record)
                if wants_events:
                    events.append(self._inbound_event(connection, record))
        if events:
            await self._store.enqueue_work_many(events)
        return taken

    async def simulate(
        self,
        auth: Principal,
        request: SimulatedInbound | Mapping[str, object],
    ) -> InboundRecord:
        """Test mode only: a reply from ``request.from_`` (``from`` in JSON), as if the
        provider of the workspace's ``channel`` connection (``provider``, or the channel's
        default) pushed it to the report URL. It takes the same path as a real one: a stop
        word (``STOP``, ``DUR``, ``İPTAL``, ``RET``, the ``stop_words`` setting; ``/stop`` on
        ``chatbot``) suppresses the sender in test mode, and the workspace's webhook
        endpoints get ``message.inbound``. A live key is :class:`ResourceNotFound` (404):
        nothing real is ever simulated."""
        if auth.livemode:
            raise ResourceNotFound("Simulated inbound messages are for test keys only.")
        parsed = parse_model(SimulatedInbound, request)
        if not storable(parsed.text):
            raise RequestInvalid.for_field("text", "must not contain NUL or unpaired surrogates")
        connection = await self._inbound_connection(auth, parsed.channel, parsed.provider)
        sender = normalize_recipient(parsed.channel, parsed.from_)
        message = InboundMessage(
            sender=sender,
            text=parsed.text,
            provider_message_id=new_id("sim"),
            received_at=self._clock.now(),
        )
        [record] = await self.take_inbound(connection, [message], livemode=False)
        return record

    async def _inbound_connection(
        self, auth: Principal, channel: Channel, provider: str | None
    ) -> Connection:
        """The connection a simulated reply arrives on: ``provider``'s, else the channel's
        default connection, else its first."""
        found = [
            c for c in await self._store.list_connections(auth.workspace_id)
            if c.channel == channel and (provider is None or c.provider == provider)
        ]  # fmt: skip
        if not found:
            where = f"the provider {provider}" if provider else f"a {channel} connection"
            raise ResourceNotFound(f"The workspace has no {where} to receive on.")
        return next((c for c in found if c.is_default), found[0])

    async def _inbound_record(
        self, connection: Connection, message: InboundMessage, livemode: bool
    ) -> InboundRecord | None:
        if not (storable(message.text) and storable(message.sender)):
            return None  # from a provider: text no store can keep is dropped, not a 500
        channel = connection.channel
        try:
            sender = normalize_recipient(channel, message.sender)
        except MessagingError:
            sender = None
        word = opt_out_word(channel, message.text, self._stop_words) if sender else None
        if sender is not None and word is not None:
            await self.opt_out(
                connection.workspace_id, livemode, channel, sender, f'Replied "{word}"'
            )
        return InboundRecord(
            id=_inbound_id(connection, message),
            channel=channel,
            provider=connection.provider,
            connection_id=connection.id,
            sender=sender or message.sender[:64],
            text=message.text[:4096],
            provider_message_id=message.provider_message_id[:255],
            received_at=message.received_at or self._clock.now(),
            livemode=livemode,
            opt_out=word is not None,
            stop_word=word,
        )

    def _inbound_event(self, connection: Connection, record: InboundRecord) -> WorkItem:
        now = self._clock.now()
        return WorkItem(
            id=f"evt_{record.id}",
            kind=_WORK_EVENT,
            ref=connection.id,
            due_at=now,
            created_at=now,
            payload={
                "workspace_id": connection.workspace_id,
                "event": "message.inbound",
                "record": record.to_dict(),
            },
        )


def _recipient_forms(channel: Channel | None, raw: str) -> tuple[str, ...]:
    """What a list's ``recipient`` filter matches: normalised for ``channel`` (422 if it
    cannot be), or without one, as typed and as each channel would normalise it."""
    if channel is not None:
        return (_listed(channel, raw),)
    forms = [raw]
    for each in get_args(Channel):
        try:
            normalized = _listed(each, raw)
        except MessagingError:
            continue
        if normalized not in forms:
            forms.append(normalized)
    return tuple(forms)


def _listed(channel: Channel, raw: str) -> str:
    """A recipient as the list keeps it: normalised as a send's ``to``, then its key."""
    return suppression_key(channel, normalize_recipient(channel, raw))


def _inbound_id(connection: Connection, message: InboundMessage) -> str:
    """Stable across the provider's retries of one push: a hash of the connection and the
    provider's own id for the message."""
    digest = hashlib.sha256(f"{connection.id}\0{message.provider_message_id}".encode())
    return f"in_{digest.hexdigest()[:26]}"


class SimulationHelpers:
    """``messenger.test_helpers``: what only test keys may do, as ``/v1/test_helpers`` does."""

    __test__ = False  # pytest: not a test class, whatever its module is imported into

    def __init__(self, opt_outs: OptOuts) -> None:
        self._opt_outs = opt_outs

    def __repr__(self) -> str:
        return "<messenger.test_helpers>"

    async def inbound(
        self, auth: Principal, request: SimulatedInbound | Mapping[str, object]
    ) -> InboundRecord:
        """Test mode only: a reply from ``request.from_`` (``from`` in JSON), as if the
        provider of the workspace's ``channel`` connection (``provider``, or the channel's
        default) pushed it to the report URL. It takes the same path as a real one: a stop
        word (``STOP``, ``DUR``, ``İPTAL``, ``RET``, the ``stop_words`` setting; ``/stop`` on
        ``chatbot``) suppresses the sender in test mode, and the workspace's webhook
        endpoints get ``message.inbound``. A live key is :class:`ResourceNotFound` (404):
        nothing real is ever simulated."""
        return await self._opt_outs.simulate(auth, request)
