"""Replies that arrive by themselves: what one is, and whether it opts out.

A provider pushes a recipient's own message to the connection's report URL (D20): a WhatsApp
``messages`` webhook, a Telegram ``Update``, a Verimor ``type: "inbound"`` SMS. Each becomes
an :class:`InboundRecord`, the ``data`` of a ``message.inbound`` webhook event, and when it
is an opt-out (:func:`opt_out_word`) its sender is added to the suppression list with the
channel as the source.

The rule of an opt-out, in one place:

- ``sms`` and ``bizchat``: the whole text is a stop word (:class:`~._suppressions.StopWords`);
- ``chatbot``: the ``/stop`` command (``/stop@<bot name>`` in a group), or a stop word.

A Telegram send that Telegram refuses with 403 "bot was blocked by the user" is an opt-out
too; it arrives as the send's outcome (``SubmitOutcome.opted_out``), not here.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from .._models import _Response
from .._types import Channel, ProviderCode
from ._rules import StopWords

__all__ = ["InboundRecord", "SimulatedInbound", "opt_out_word"]

_BOT_STOP: Final = re.compile(r"\s*/stop(@[A-Za-z0-9_]{1,64})?\s*", re.IGNORECASE)


def opt_out_word(channel: Channel, text: str, stop_words: StopWords) -> str | None:
    """The word by which ``text`` opts its sender out of ``channel``, else ``None``."""
    if channel == "chatbot" and _BOT_STOP.fullmatch(text):
        return "/stop"
    return stop_words.match(text)


class InboundRecord(_Response):
    """``data`` of a ``message.inbound`` event: one message a recipient sent back."""

    _omit_none = False

    id: str = Field(description="Stable id of this inbound message (the event's subject).")
    channel: Channel
    provider: ProviderCode
    connection_id: str
    sender: str = Field(
        description="Who wrote: E.164 for numbers (normalised as a send's `to`), the chat id "
        "for chatbot."
    )
    text: str
    provider_message_id: str
    received_at: datetime
    livemode: bool
    opt_out: bool = Field(description="The reply opted its sender out: they are suppressed.")
    stop_word: str | None = Field(description="The stop word or command that opted out.")


class SimulatedInbound(BaseModel):
    """A reply to simulate in test mode (``POST /v1/test_helpers/inbound``, ``unified-messaging
    simulate inbound``, ``TestBed.simulate_inbound``): who wrote, what, and on which channel."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    from_: str = Field(
        alias="from",
        min_length=1,
        max_length=64,
        description="Who wrote: a number (any form a send's `to` takes) or, for chatbot, a "
        "chat id.",
        examples=["+905551234567"],
    )
    text: str = Field(min_length=1, max_length=4096, examples=["STOP"])
    channel: Channel = "sms"
    provider: ProviderCode | None = Field(
        default=None,
        description="The connection it arrives on; default: the channel's default connection.",
    )
