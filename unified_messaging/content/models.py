"""The shapes REST, MCP, the Client and the library share for content hints and the dry run
of a send (D33): rendered from :mod:`.rules`' records, validated by the same models."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .._models import _Response
from .._types import Category, Channel, Encoding, ProviderCode, RecipientType
from .parts import SmsParts
from .rules import ContentHint, ContentLint, HintCode

__all__ = ["ContentHintOut", "ContentLintOut", "SendPreview", "SmsPartsOut"]


class ContentHintOut(_Response):
    """One thing a commercial text misses (a warning, or why it was refused)."""

    code: HintCode = Field(
        description="OPT_OUT_MISSING, TRADE_NAME_MISSING, MERSIS_MISSING, BRAND_NOT_SET or "
        "COMMERCIAL_TAG_MISSING."
    )
    message: str

    @classmethod
    def of(cls, hint: ContentHint) -> ContentHintOut:
        return cls(code=hint.code, message=hint.message)


class SmsPartsOut(_Response):
    """A text as an SMS: what it costs as written and as sent (the operator's 5 characters
    appended)."""

    encoding: Encoding
    characters: int
    units: int = Field(description="Septets (GSM-7; an escaped character is 2) or UTF-16 units.")
    parts: int = Field(description="Parts as written.")
    parts_with_operator_code: int = Field(
        description="Parts as sent and billed: every operator appends a space and its "
        "4-character code (BTK), 5 characters."
    )

    @classmethod
    def of(cls, parts: SmsParts) -> SmsPartsOut:
        return cls(
            encoding=parts.encoding,
            characters=parts.characters,
            units=parts.units,
            parts=parts.parts,
            parts_with_operator_code=parts.parts_with_operator_code,
        )


class ContentLintOut(_Response):
    """A text's hints as a commercial SMS, and its parts."""

    _omit_none = False

    hints: list[ContentHintOut]
    sms: SmsPartsOut

    @classmethod
    def of(cls, lint: ContentLint) -> ContentLintOut:
        return cls(hints=[ContentHintOut.of(h) for h in lint.hints], sms=SmsPartsOut.of(lint.parts))


class SendPreview(_Response):
    """200 body of ``POST /v1/messages?dry_run=true``: the message as it would be accepted,
    nothing stored or sent."""

    _omit_none = False

    dry_run: Literal[True] = True
    to: str = Field(description="The recipient, normalised as the send would.")
    channel: Channel
    provider: ProviderCode = Field(description="The connection it would be handed to first.")
    fallback: list[ProviderCode]
    category: Category
    recipient_type: RecipientType | None
    text: str = Field(description="The text as the recipient would get it (a template rendered).")
    template: str | None
    sms: SmsPartsOut | None = Field(description="Its encoding and parts; null off SMS.")
    hints: list[ContentHintOut] = Field(
        description="What the text misses as a commercial SMS (D33); empty for an "
        "informational or chat message. Warnings: a workspace whose content rules refuse "
        "answers 422 COMMERCIAL_CONTENT_REFUSED instead, as the send would."
    )
