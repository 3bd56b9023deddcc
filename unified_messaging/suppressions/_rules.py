"""The suppression list: recipients who must get no more messages, per channel.

The rules, with no I/O:

- **One entry per workspace, mode, channel and recipient.** The recipient is normalised by
  the same rule as a send's ``to`` (:func:`~._recipients.normalize_recipient`, D5), so
  ``0555 000 00 20`` and ``+905550000020`` are one entry, and a send finds it whatever form
  it was typed in. Live and test entries are apart, like keys and messages (D2): a test key
  neither reads nor changes who opted out for real.
- **Adding is idempotent.** Adding an entry that exists keeps the first one (its reason,
  source and time): the first opt-out is the one that counts.
- **Where an entry came from** (``source``): ``api``, ``cli``, ``dashboard``, ``library``,
  ``import`` (a CSV) for entries added by hand; the channel (``sms``, ``chatbot``,
  ``bizchat``) for opt-outs that arrived by themselves (a STOP reply, a blocked bot).
- **Stop words**: an inbound reply whose whole text (trimmed of spaces and punctuation) is a
  stop word opts its sender out. The defaults are ``STOP``, ``DUR``, ``İPTAL``, ``RET``;
  a messenger adds its own. Matching ignores case and diacritics the Turkish way
  (:func:`fold_word`): ``İ``/``i`` and ``I``/``ı`` are each one letter's two cases, and
  ``iptal``, ``IPTAL``, ``İptal`` and ``ıptal`` all match ``İPTAL``.

The shapes REST, MCP, the CLI and the library share are the pydantic models here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Final, Literal, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from .._errors import RecipientSuppressed
from .._models import Recipient, _no_control_chars, _Response
from .._types import Channel
from ..content.fold import fold

__all__ = [
    "DEFAULT_STOP_WORDS",
    "MAX_REASON_LENGTH",
    "SOURCES",
    "StopWords",
    "Suppression",
    "SuppressionCreate",
    "SuppressionOut",
    "SuppressionPage",
    "SuppressionSearch",
    "SuppressionSource",
    "SuppressionTarget",
    "fold_word",
    "opt_out_entry",
    "suppressed_refusal",
    "suppression_key",
]

SuppressionSource = Literal[
    "api", "cli", "dashboard", "library", "import", "sms", "chatbot", "bizchat"
]
SOURCES: Final[tuple[SuppressionSource, ...]] = get_args(SuppressionSource)
CHANNELS: Final[tuple[Channel, ...]] = get_args(Channel)
MAX_REASON_LENGTH: Final = 200
DEFAULT_STOP_WORDS: Final = ("STOP", "DUR", "İPTAL", "RET")
MAX_CURSOR_LENGTH: Final = 255
DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 100


@dataclass(frozen=True, slots=True)
class Suppression:
    """One entry: ``recipient`` (normalised for ``channel``) gets nothing more there."""

    id: str
    workspace_id: str
    livemode: bool
    channel: Channel
    recipient: str
    reason: str | None
    source: SuppressionSource
    created_at: datetime


def opt_out_entry(
    workspace_id: str,
    livemode: bool,
    channel: Channel,
    recipient: str,
    reason: str,
    *,
    now: datetime,
) -> Suppression:
    """The entry of an opt-out that arrived by itself (a STOP reply, a blocked bot): its
    source is the channel. One builder for the messenger's and the worker's opt-outs."""
    from .._ids import new_id

    return Suppression(
        id=new_id("sup"),
        workspace_id=workspace_id,
        livemode=livemode,
        channel=channel,
        recipient=suppression_key(channel, recipient),
        reason=reason[:MAX_REASON_LENGTH],
        source=channel,
        created_at=now,
    )


def suppressed_refusal(channel: Channel, to: str) -> RecipientSuppressed:
    """The refusal of a message to a listed recipient: admission's 422, a bulk item's and
    the hand-over gate's ``failed`` alike (D35)."""
    return RecipientSuppressed(f"{to} is on the workspace's {channel} suppression list.")


def suppression_key(channel: Channel, recipient: str) -> str:
    """How a (normalised) recipient is listed and looked up: as it is, but a Telegram
    ``@username`` case-folded, since Telegram's usernames are case-insensitive
    (``@ShopNews`` who opted out is ``@shopnews`` too; D35). Usernames are
    ``[A-Za-z0-9_]``, so ASCII ``lower()`` folds them; chat ids have no case."""
    if channel == "chatbot" and recipient.startswith("@"):
        return recipient.lower()
    return recipient


# ----------------------------------------------------------------------------- stop words


def fold_word(text: str) -> str:
    """``text`` without case or diacritics, the Turkish way (:func:`.content.fold.fold`):
    ``İPTAL``, ``IPTAL``, ``ıptal`` and ``iptal`` all fold to ``iptal``; ``ş``, ``ç``, ``ğ``,
    ``ö``, ``ü`` lose their marks. Surrounding spaces and punctuation go too (``Stop!`` is
    ``stop``)."""
    return fold(text).strip().strip(".!?,;:'\"()[]…-_ \t\r\n")


class StopWords:
    """The stop words one messenger listens for: the defaults and ``extra`` ones."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        words = [*DEFAULT_STOP_WORDS, *extra]
        self._folded: dict[str, str] = {}
        for word in words:
            folded = fold_word(word)
            if not folded or len(folded) > 64:
                raise ValueError(f"not a usable stop word: {word!r}")
            self._folded.setdefault(folded, word)

    def __repr__(self) -> str:
        return f"StopWords({sorted(self._folded.values())!r})"

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self._folded.values())

    def match(self, text: str) -> str | None:
        """The stop word ``text`` is, as configured, or ``None`` (most replies)."""
        if len(text) > 80:  # a sentence is a reply, not an opt-out
            return None
        return self._folded.get(fold_word(text))


# ----------------------------------------------------------------------------- shapes


def _one_of(values: tuple[str, ...], what: str) -> BeforeValidator:
    def check(value: object) -> object:
        if value not in values:
            raise ValueError(f"unknown {what}; one of {', '.join(values)}")
        return value

    return BeforeValidator(check)


ChannelField = Annotated[Channel, _one_of(CHANNELS, "channel")]
Reason = Annotated[
    str,
    Field(min_length=1, max_length=MAX_REASON_LENGTH, examples=["Asked by phone to stop"]),
    AfterValidator(_no_control_chars),
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SuppressionTarget(_Request):
    """Which entry: a channel and a recipient (in any form a send accepts)."""

    channel: ChannelField = Field(description="sms, chatbot or bizchat.")
    recipient: Recipient = Field(
        description="As a send's `to`: normalised the same way (E.164 for numbers)."
    )


class SuppressionCreate(SuppressionTarget):
    """Body of ``POST /v1/suppressions``."""

    reason: Reason | None = Field(default=None, description="Why, in your words (1-200).")


class SuppressionSearch(_Request):
    """What ``GET /v1/suppressions`` asks for: filters, page size and cursor."""

    channel: ChannelField | None = Field(default=None, description="Only this channel.")
    recipient: Recipient | None = Field(
        default=None, description="Only this recipient (normalised as a send's `to`)."
    )
    limit: int = Field(
        default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="How many a page holds, 1-100."
    )
    starting_after: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CURSOR_LENGTH,
        description="The id of the last entry of the previous page: the page after it.",
    )


class SuppressionOut(_Response):
    """One entry of the suppression list."""

    _omit_none = False

    id: str = Field(examples=["sup_01JD0000000000000000000000"])
    channel: Channel
    recipient: str = Field(examples=["+905551234567"])
    reason: str | None
    source: SuppressionSource = Field(
        description="Who added it: api, cli, dashboard, library, import, or the channel "
        "whose opt-out added it (sms, chatbot, bizchat)."
    )
    created_at: datetime
    livemode: bool

    @classmethod
    def of(cls, entry: Suppression) -> SuppressionOut:
        return cls(
            id=entry.id,
            channel=entry.channel,
            recipient=entry.recipient,
            reason=entry.reason,
            source=entry.source,
            created_at=entry.created_at,
            livemode=entry.livemode,
        )


class SuppressionPage(_Response):
    """200 body of ``GET /v1/suppressions``: entries, newest first, and whether more follow."""

    _omit_none = False

    data: list[SuppressionOut]
    has_more: bool = Field(
        description="Whether a next page exists: ask again with starting_after the last id."
    )
