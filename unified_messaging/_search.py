"""Listing a workspace's messages (D29): the query's shape and rules, and the page it gives.

``GET /v1/messages?to=&status=&provider=&created_after=&created_before=&limit=&starting_after=``
and :meth:`Messenger.list_messages` take the same :class:`MessageSearch`, so the REST edge,
the CLI and a library caller get the same answers and the same errors:

- every filter is optional and every one given must hold; ``to`` matches the number as
  typed and in its E.164 form; ``created_after`` is inclusive, ``created_before``
  exclusive; times are RFC 3339 with a time zone;
- newest first (``created_at``, ties by ``job_id``), ``limit`` 1-100 (default 20);
- ``starting_after`` is a ``job_id`` from an earlier page (Stripe's cursor): the page
  continues after it. A job this key cannot read (unknown, another workspace's, the other
  mode's) is 404 ``MESSAGE_NOT_FOUND``, the answer ``GET /v1/messages/{job_id}`` gives, so
  a cursor tells nothing about other workspaces;
- a value that breaks a rule, an unknown parameter, or one given twice is 400
  ``VALIDATION_ERROR`` naming the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Final, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ._domain import MessageRecord
from ._errors import ErrorDetail, InvalidRecipient, MessageNotFound, RequestInvalid
from ._models import Recipient, StatusRecord, _Response, parse_model
from ._recipients import normalize_recipient
from ._responses import status_record
from ._text import storable
from ._types import MessageStatus, ProviderCode
from .store.base import MessageQuery, Store

__all__ = [
    "DEFAULT_LIST_LIMIT",
    "MAX_LIST_LIMIT",
    "MessagePage",
    "MessageSearch",
    "SearchInput",
    "parse_query_string",
    "search_messages",
]

DEFAULT_LIST_LIMIT: Final = 20
MAX_LIST_LIMIT: Final = 100
MAX_CURSOR_LENGTH: Final = 255

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})")
# "+03:00" in a URL's query string reads as " 03:00" unless the client wrote %2B.
_PLUS_AS_SPACE = re.compile(r".*\d \d{2}:\d{2}")


def _one_of(values: tuple[str, ...], what: str) -> BeforeValidator:
    def check(value: object) -> object:
        if value not in values:
            raise ValueError(f"unknown {what}; one of {', '.join(values)}")
        return value

    return BeforeValidator(check)


def _moment(value: object) -> object:
    """An RFC 3339 time with a time zone, as a UTC datetime (a datetime passes through)."""
    if isinstance(value, datetime):
        if value.utcoffset() is None:
            raise ValueError("needs a time zone, e.g. 2026-01-31T00:00:00Z")
        return _utc(value)
    if not isinstance(value, str):
        return value  # pydantic's own type error
    if _PLUS_AS_SPACE.fullmatch(value):
        raise ValueError("not an RFC 3339 time: write a '+' in a URL query as %2B")
    if not _RFC3339.fullmatch(value):
        raise ValueError("not an RFC 3339 time with a time zone, e.g. 2026-01-31T00:00:00Z")
    try:
        moment = datetime.fromisoformat(value.upper().replace(" ", "T"))
    except ValueError:
        raise ValueError("not a valid time (a field is out of range)") from None
    return _utc(moment)


def _utc(moment: datetime) -> datetime:
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        # Year 1 at +05:00 or year 9999 at -05:00: before or after anything stored, so the
        # nearest representable instant bounds the same messages.
        edge = datetime.min if moment.year == 1 else datetime.max
        return edge.replace(tzinfo=UTC)


Moment = Annotated[datetime, BeforeValidator(_moment)]
Status = Annotated[MessageStatus, _one_of(get_args(MessageStatus), "status")]
Provider = Annotated[ProviderCode, _one_of(get_args(ProviderCode), "provider code")]


class MessageSearch(BaseModel):
    """What ``GET /v1/messages`` asks for (D29): filters, page size and cursor."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    to: Recipient | None = Field(
        default=None, description="Only messages to this recipient (as typed, or in E.164)."
    )
    status: Status | None = Field(default=None, description="Only messages in this status.")
    provider: Provider | None = Field(
        default=None, description="Only messages whose current provider is this one."
    )
    created_after: Moment | None = Field(
        default=None, description="Only messages created at or after this time (RFC 3339)."
    )
    created_before: Moment | None = Field(
        default=None, description="Only messages created before this time (RFC 3339)."
    )
    limit: int = Field(
        default=DEFAULT_LIST_LIMIT,
        ge=1,
        le=MAX_LIST_LIMIT,
        description="How many messages a page holds, 1-100.",
    )
    starting_after: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CURSOR_LENGTH,
        description="The job_id of the last message of the previous page: the page after it.",
    )


class MessagePage(_Response):
    """200 body of ``GET /v1/messages``: status records, newest first, and whether more follow."""

    _omit_none = False

    data: list[StatusRecord] = Field(description="Status records (as GET by job_id), newest first.")
    has_more: bool = Field(
        description="Whether a next page exists: ask again with starting_after the last job_id."
    )


SearchInput = MessageSearch | Mapping[str, object]


def parse_query_string(items: Iterable[tuple[str, str]]) -> MessageSearch:
    """A URL query's parameters as a :class:`MessageSearch`; a parameter given twice is a
    400 (which of the two was meant is anybody's guess)."""
    values: dict[str, str] = {}
    repeated: list[str] = []
    for name, value in items:
        if name in values and name not in repeated:
            repeated.append(name)
        values[name] = value
    if repeated:
        details = [ErrorDetail(name, "given more than once") for name in repeated]
        raise RequestInvalid(f"{repeated[0]}: given more than once", details)
    return parse_model(MessageSearch, values)


async def search_messages(
    store: Store,
    workspace_id: str,
    livemode: bool,
    search: SearchInput | None,
    *,
    mask_live_text: bool = False,
) -> MessagePage:
    """One page of the workspace's messages of one mode (the rules: see the module);
    ``mask_live_text``: the workspace hides live text (:func:`~._responses.shown_text`)."""
    parsed = MessageSearch() if search is None else parse_model(MessageSearch, search)
    older_than = None
    if parsed.starting_after is not None:
        older_than = await _cursor(store, workspace_id, livemode, parsed.starting_after)
    query = MessageQuery(
        workspace_id=workspace_id,
        livemode=livemode,
        to=_recipient_forms(parsed.to),
        status=parsed.status,
        provider=parsed.provider,
        created_after=parsed.created_after,
        created_before=parsed.created_before,
        older_than=older_than,
        # One more than asked: whether it comes back says whether a next page exists.
        limit=parsed.limit + 1,
    )
    found = await store.list_messages(query)
    return MessagePage(
        data=[status_record(r, mask_live_text=mask_live_text) for r in found[: parsed.limit]],
        has_more=len(found) > parsed.limit,
    )


async def _cursor(
    store: Store, workspace_id: str, livemode: bool, job_id: str
) -> tuple[datetime, str]:
    # Looked up as GET by job_id does, within the caller's workspace and mode (D2, D11).
    record: MessageRecord | None = None
    if storable(job_id):
        record = await store.get_message(workspace_id, livemode, job_id)
    if record is None:
        raise MessageNotFound(f"starting_after: no message {job_id!r} for this key.")
    return record.created_at, record.job_id


def _recipient_forms(to: str | None) -> tuple[str, ...]:
    """``to`` as typed, and as the phone number it reads as (stored numbers are E.164)."""
    if to is None:
        return ()
    forms = [to]
    for channel in ("sms", "bizchat"):
        try:
            normalized = normalize_recipient(channel, to)
        except InvalidRecipient:
            continue
        if normalized not in forms:
            forms.append(normalized)
    return tuple(forms)
