"""The answer of a send's dry run (``POST /v1/messages?dry_run=true``, D33): a message as it
would be accepted, built from what ``Messenger.preview_send`` resolved with the send's own
rules. Pure: nothing here reads or writes."""

from __future__ import annotations

from collections.abc import Sequence

from .._domain import Connection
from .._message_class import class_of
from .._types import IysMode, ProviderCode
from ..providers.base import uses_turkish_shift
from .models import ContentHintOut, SendPreview, SmsPartsOut
from .parts import count_parts
from .rules import ContentRules, hints_for

__all__ = ["send_preview"]


def send_preview(
    *,
    rules: ContentRules,
    connection: Connection,
    fallback: Sequence[ProviderCode],
    iys_mode: IysMode,
    to: str,
    text: str,
    template: str | None,
) -> SendPreview:
    """``text`` to ``to`` through ``connection`` (then ``fallback``) in ``iys_mode``: its
    SMS parts as that connection encodes them, and the hints of ``rules`` when it is a
    commercial SMS."""
    category, recipient_type = class_of(iys_mode)
    sms = connection.channel == "sms"
    hints = hints_for(text, rules) if sms and category == "commercial" else ()
    parts = count_parts(text, turkish_shift=uses_turkish_shift(connection)) if sms else None
    return SendPreview(
        to=to,
        channel=connection.channel,
        provider=connection.provider,
        fallback=list(fallback),
        category=category,
        recipient_type=recipient_type,
        text=text,
        template=template,
        sms=None if parts is None else SmsPartsOut.of(parts),
        hints=[ContentHintOut.of(hint) for hint in hints],
    )
