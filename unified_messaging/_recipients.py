"""Recipient normalization per channel (DESIGN.md D5).

Runs on every send, before a provider is chosen, and turns what a person typed into the one
form the providers and the message store use:

* ``sms``: Turkish **mobile** numbers only, out as E.164 (``+905550000001``). Every usual
  way of writing one is read: ``+90 5xx…``, ``0 5xx…``, the bare 10 digits ``5xx…``,
  ``90 5xx…``, ``0090 5xx…``, ``+90 (0555) …``, with spaces, dashes, dots, slashes and
  brackets between the digits, and any Unicode decimal digits (full-width, Arabic-Indic …).
  Landlines, service numbers (``0850``, ``0800``, ``0900``, ``444``), the ``512`` pager range
  and foreign numbers are rejected.
* ``chatbot`` (Telegram): an integer chat id (``123``, ``-1001234567890``: ASCII digits, no
  ``+``, no leading zeros, at most 20 digits) or ``@username`` (5-32 of ``[A-Za-z0-9_]``),
  echoed as given once surrounding spaces are stripped. Whether the chat is reachable (``0``
  is syntactically fine) is decided later, by the provider.
* ``bizchat`` (WhatsApp): any valid phone number of any country, out as E.164. Without a
  ``+``: ``00…`` is an international call from Turkey, ``0…`` is Turkish national, and bare
  digits (``905550000001``, ``447911123456``) are read as Turkish first and, if that is not a
  valid number, as international (``+`` prepended). The Turkish-first order makes a bare
  ``5xx…`` a Turkish mobile, as a Turkish user means it.

Every rejection is :class:`~unified_messaging._errors.InvalidRecipient`; nothing of
``phonenumbers`` escapes. Error messages echo at most 64 characters of the input, through
``repr`` so control and format characters show as escapes, never raw.

Control and format characters (tab, newline, NUL, zero-width or bidi marks …) are rejected
anywhere in the input, even at its ends: only space separators (``Zs``: space, no-break
space …) are stripped. Inputs over 64 characters, the contract's limit, are rejected before
any parsing.

Phone-number checks go through a small whitelist regex first (cheap rejection of text,
injection strings and huge inputs), then through ``phonenumbers`` on the cleaned string of
ASCII digits, whose result is cached: every way of typing a number cleans to a few keys,
and a cached call takes 2-3 µs against 60-90 µs for a parse.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final, NamedTuple

from ._errors import InvalidRecipient
from ._types import Channel

__all__ = [
    "is_chat_username",
    "normalize_bizchat_number",
    "normalize_chat_target",
    "normalize_recipient",
    "normalize_turkish_mobile",
]

#: The contract's limit on a recipient's length; longer input is rejected unparsed.
MAX_RECIPIENT_LENGTH: Final = 64
_ECHO_LIMIT: Final = 64

_TURKEY_REGION: Final = "TR"
_TURKEY_CODE: Final = 90

# Unicode space separators (category Zs). Stripped at the ends and allowed between digits,
# since numbers copied from web pages and documents carry no-break and narrow spaces.
_SPACES: Final = (
    " \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u202f\u205f\u3000"
)
_PLUS_SIGNS: Final = "+\uff0b"  # ASCII and full-width plus
# Separators people put between digits: hyphens and dashes (incl. minus and full-width
# hyphen-minus), dots, slashes, round brackets (ASCII and full-width).
_SEPARATORS: Final = (
    _SPACES + "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\uff0d" + ".\uff0e/\uff0f()\uff08\uff09"
)
# ``\d`` on str is exactly the Unicode decimal digits (Nd): superscripts and other numerics
# that are not decimal digits are excluded, as they should be.
_PHONE_SHAPE: Final = re.compile(
    "[" + re.escape(_PLUS_SIGNS) + "]?[" + r"\d" + re.escape(_SEPARATORS) + "]+"
)
_NOT_DIGIT: Final = re.compile(r"\D")

# Digit counts (after cleaning) that can still be a Turkish mobile: 10 national digits, plus
# "0" (11), "90" (12), "90 0" (13) or "0090" (14) in front.
_SMS_DIGITS: Final = range(10, 15)
# E.164 allows at most 15 digits; "00" in front makes 17. Short numbers exist (Niue: 4-digit
# national numbers), so the lower bound only excludes the hopeless.
_BIZCHAT_DIGITS: Final = range(4, 18)

# Chat ids are signed 64-bit integers (19 digits at most; 20 leaves headroom); ASCII only,
# because the id is passed to the Telegram API as typed.
_CHAT_ID: Final = re.compile(r"-?(?:0|[1-9][0-9]{0,19})", re.ASCII)
_CHAT_USERNAME: Final = re.compile(r"@[A-Za-z0-9_]{5,32}", re.ASCII)


class _Parsed(NamedTuple):
    e164: str
    country_code: int
    mobile: bool


def normalize_recipient(channel: Channel, raw: str) -> str:
    """Normalize ``raw`` for ``channel`` or raise :class:`InvalidRecipient`.

    An unknown channel is a programming error, not a bad recipient: it raises ``ValueError``.
    """
    if channel == "sms":
        return normalize_turkish_mobile(raw)
    if channel == "chatbot":
        return normalize_chat_target(raw)
    if channel == "bizchat":
        return normalize_bizchat_number(raw)
    raise ValueError(f"unknown channel: {channel!r}")


def normalize_turkish_mobile(raw: str) -> str:
    """A Turkish mobile number in any typed form as E.164 (``+905550000001``).

    The number must be valid and of type ``MOBILE`` in ``phonenumbers``' Turkish metadata.
    ``FIXED_LINE_OR_MOBILE`` is not accepted: that metadata keeps the two ranges disjoint
    (mobile ``5xx``, fixed ``2xx``-``4xx``), so the type never occurs for +90, and a number
    that cannot be told from a landline is no SMS target anyway.
    """
    plus, digits = _clean_phone(raw)
    if len(digits) not in _SMS_DIGITS:
        raise InvalidRecipient(f"Not a Turkish mobile number: {_echo(raw)}.")
    # A bare "90 5xx…" needs no second try: parsing with region TR already strips a leading
    # country code when only the rest is a valid national number.
    parsed = _lookup(f"+{digits}" if plus else digits)
    if parsed is None:
        raise InvalidRecipient(f"Not a Turkish mobile number: {_echo(raw)}.")
    if parsed.country_code != _TURKEY_CODE:
        raise InvalidRecipient(f"SMS goes to Turkish (+90) mobile numbers only: {_echo(raw)}.")
    if not parsed.mobile:
        raise InvalidRecipient(f"Not a mobile number (landline or service number): {_echo(raw)}.")
    return parsed.e164


def normalize_chat_target(raw: str) -> str:
    """A Telegram chat id (``-1001234567890``) or ``@username``, as given without end spaces."""
    value = _precheck(raw).strip(_SPACES)
    is_chat_id = _CHAT_ID.fullmatch(value) is not None and value != "-0"
    if not is_chat_id and _CHAT_USERNAME.fullmatch(value) is None:
        raise InvalidRecipient(f"Not a Telegram chat id or @username: {_echo(raw)}.")
    return value


def normalize_bizchat_number(raw: str) -> str:
    """Any valid phone number as E.164; without ``+``, Turkish first (see the module doc)."""
    plus, digits = _clean_phone(raw)
    if len(digits) not in _BIZCHAT_DIGITS:
        raise InvalidRecipient(f"Not a valid phone number: {_echo(raw)}.")
    if plus:
        parsed = _lookup(f"+{digits}")
    else:
        # "0…" and "00…" are unambiguous with region TR (national and international prefix);
        # only bare digits get the second reading as international.
        parsed = _lookup(digits)
        if parsed is None and not digits.startswith("0"):
            parsed = _lookup(f"+{digits}")
    if parsed is None:
        raise InvalidRecipient(f"Not a valid phone number: {_echo(raw)}.")
    return parsed.e164


def is_chat_username(value: str) -> bool:
    """True if the normalized chat target ``value`` is an ``@username``, not a chat id."""
    return _CHAT_USERNAME.fullmatch(value) is not None


# --- helpers ----------------------------------------------------------------------------


def _precheck(raw: str) -> str:
    """Type, emptiness and length checks shared by every channel."""
    if not isinstance(raw, str):
        raise InvalidRecipient(f"The recipient must be a string, not {type(raw).__name__}.")
    if len(raw) > MAX_RECIPIENT_LENGTH:
        raise InvalidRecipient(
            f"The recipient is longer than {MAX_RECIPIENT_LENGTH} characters: {_echo(raw)}."
        )
    if not raw.strip(_SPACES):
        raise InvalidRecipient("The recipient is empty.")
    return raw


def _clean_phone(raw: str) -> tuple[bool, str]:
    """Whether ``raw`` has a leading plus, and its digits as ASCII; rejects other text."""
    value = _precheck(raw).strip(_SPACES)
    if _PHONE_SHAPE.fullmatch(value) is None:
        raise InvalidRecipient(f"Not a phone number: {_echo(raw)}.")
    digits = _NOT_DIGIT.sub("", value)
    if not digits.isascii():
        # Fold other scripts' digits here so that every typing of a number shares one cache
        # key; phonenumbers would fold them too, but after the cache.
        digits = "".join(str(unicodedata.decimal(char)) for char in digits)
    return value[0] in _PLUS_SIGNS, digits


@lru_cache(maxsize=4096)
def _lookup(candidate: str) -> _Parsed | None:
    """Parse ``+digits`` or ``digits`` (region TR) into a valid number, or None.

    Keys are short ASCII strings, so the cache stays small however many inputs it sees.
    """
    # Imported on the first lookup (a cache hit never gets here): phonenumbers costs about
    # 30 ms, which a process that never checks a number (an admin command) need not pay.
    import phonenumbers

    try:
        number = phonenumbers.parse(candidate, _TURKEY_REGION)
    except phonenumbers.NumberParseException:
        return None
    if number.country_code is None or not phonenumbers.is_valid_number(number):
        return None
    return _Parsed(
        e164=phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164),
        country_code=number.country_code,
        mobile=phonenumbers.number_type(number) == phonenumbers.PhoneNumberType.MOBILE,
    )


def _echo(raw: str) -> str:
    """``raw`` for an error message: at most 64 characters, control characters escaped."""
    if len(raw) <= _ECHO_LIMIT:
        return repr(raw)
    return f"{raw[:_ECHO_LIMIT]!r}… ({len(raw)} characters)"
