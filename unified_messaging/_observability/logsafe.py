"""What may reach a log line: control characters escaped, secrets masked.

Log lines carry text a client chose (request paths, query strings, header values echoed in
errors). Two things must never follow it into a log:

* **forged lines and terminal escapes**: CR, LF and the other C0/C1 controls, DEL, the
  Unicode line separators and unpaired surrogates are written as ``\\n``, ``\\x1b``,
  ``\\ud800``…, so one record is one line, whatever the client sent (a traceback keeps its
  line breaks, indented, so none of its lines can pass for a record);
* **phone numbers**: 10-15 digits after ``+`` or ``%2B`` (any country), or a Turkish number
  without it (``5xxxxxxxxx``, ``05…``, ``905…``, ``0090…``, a mobile or a landline), keep
  their last four, ``+90*******4567``, enough to tell recipients apart and not to reach one;
  other bare digit runs (a Unix time ``ts=1764630000``, a count, a Telegram chat id) are
  left alone; ``serve --log-full-numbers`` (``SafeLogFilter(full_numbers=True)``) keeps
  them for debugging;
* **secrets**: the token segment of anything shaped like a delivery-report path (a ``dlr``
  segment in any case, with or without ``/v1``, with any number of segments after it, empty
  ones included: every segment after it that is not a connection id), query parameters
  whose name says they carry a credential (``api_key``, ``token``, ``hub.verify_token``,
  ``signature``, ``password``…), our own API keys (``um_live_…``, ``um_test_…``), webhook
  secrets (``whsec_…``) and ``Bearer`` values become ``***``; so does any path segment or
  query value shaped like the tokens we mint (``secrets.token_urlsafe``: 32 or more
  base64url characters that look random, :func:`_looks_random`, and are neither a UUID nor
  one of our ids), wherever the path goes: a delivery-report token under a mistyped prefix
  (``/v1/dlrs/…``, ``/v1/dlr;x/…``), a dashboard sign-in link's. Masking goes by what a
  value looks like, not by the route it came in on: a 404 for a mistyped DLR path carries
  the token as surely as the right one;
* **secret-shaped context fields**: a ``request_id`` (or any other context field) that
  :func:`looks_secret` is written as ``***``: the REST edge replaces such a client-given
  ``X-Request-ID``, and a host binding its own is covered too.

:class:`SafeLogFilter` applies both to every record a handler emits; ``serve`` installs it on
its log handlers, and a host may install it on its own.
"""

from __future__ import annotations

import logging
import re
import textwrap
from typing import Final
from urllib.parse import unquote_plus

from .log_context import CONTEXT_FIELDS

__all__ = [
    "MASK",
    "SafeLogFilter",
    "escape_controls",
    "looks_secret",
    "mask_numbers",
    "mask_secrets",
    "safe_log_text",
]

MASK: Final = "***"

_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_CONTROLS_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAMED_ESCAPES: Final = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# A "dlr" segment (any case; at the start, after "/" or after a space or quote) and every
# segment after it up to the query: see _mask_dlr_segments.
_DLR_PATH = re.compile(r"(?i)(?<![^/\s\"'=])(dlr)((?:/[^/?#\s\"']*)+)")
# What a DLR path's connection segment looks like (kept: it tells the lines apart).
_CONNECTION_ID = re.compile(r"conn_[0-9A-Za-z]{1,26}")
_SECRET_PREFIX = re.compile(r"(?i)(?:\bum_(?:live|test)_|\bwhsec_|\bbearer\b)")
# A long run of token characters (base64, base64url, base62, hex) that looks random (see
# _looks_random): credentials look like this.
_LONG_TOKEN = re.compile(r"[A-Za-z0-9_+/=-]{32,}")
# A path segment or query part (after "/", "=", ";", "?" or "&") of 32+ base64url
# characters, whole:
# the shape of secrets.token_urlsafe(24) (DLR tokens, 32) and (32) (sign-in links, 43).
_TOKEN_SEGMENT = re.compile(r"(?<=[/=;?&])[A-Za-z0-9_-]{32,}(?![A-Za-z0-9_-])")
# What may stand for a token: ours and UUIDs are ids, never secrets.
_NOT_A_TOKEN = re.compile(
    r"[a-z]{2,10}_[0-9A-HJKMNP-TV-Z]{26}"
    r"|(?i:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
)
_QUERY_PARAM = re.compile(r"([?&;])([^=&?#;\s\"']+)=([^&#;\s\"']*)")
_API_KEY = re.compile(r"\bum_(live|test)_[A-Za-z0-9]+")
_WEBHOOK_SECRET = re.compile(r"\bwhsec_[A-Za-z0-9+/=_-]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s\"',;]+")
# Not inside a longer word or number: ids such as msg_01J... are left alone. A candidate is
# a phone number when _phone_shaped says so.
_NUMBER = re.compile(r"(?<![0-9A-Za-z_])(\+|%2[Bb])?([0-9]{10,15})(?![0-9A-Za-z_])")
# Turkish numbers without "+": 10 digits from 2-5 (5 a mobile, 2-4 a landline's area code),
# after 0, 90 or 0090 (ITU-T E.164 country code 90; the national prefix 0). A bare
# 10-digit run starting with 1 (a Unix time until 2033) is not one.
_TURKISH_NUMBER = re.compile(r"(?:0090|90|0)?[2-5][0-9]{9}")
# A bare 10-digit run (no 0/90 prefix) must be a mobile: 5xxxxxxxxx.
_BARE_TEN = re.compile(r"5[0-9]{9}")
# A parameter is secret when its (decoded, lower-cased) name ends with one of these: that
# covers api_key, apikey, x-api-key, key, token, access_token, hub.verify_token, secret,
# client_secret, password, signature, sig, auth, authorization… and over-masks a little.
_SECRET_NAME_ENDINGS: Final = (
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "signature",
    "sig",
    "auth",
    "authorization",
    "credential",
    "credentials",
)


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character written as a visible escape.

    ``keep_newlines`` is for tracebacks, whose lines are ours; their other controls are
    still escaped.
    """
    pattern = _CONTROLS_BUT_NEWLINE if keep_newlines else _CONTROLS
    return pattern.sub(_escape, text)


def mask_secrets(text: str) -> str:
    """``text`` with DLR tokens, credential-like query values, keys and secrets masked."""
    text = _DLR_PATH.sub(_mask_dlr_segments, text)
    text = _TOKEN_SEGMENT.sub(_mask_token_segment, text)
    text = _QUERY_PARAM.sub(_mask_param, text)
    text = _API_KEY.sub(rf"um_\g<1>_{MASK}", text)
    text = _WEBHOOK_SECRET.sub(f"whsec_{MASK}", text)
    return _BEARER.sub(rf"\g<1>{MASK}", text)


def looks_secret(value: str) -> bool:
    """Does ``value`` look like a credential: one of our API keys, a webhook secret, a
    ``Bearer`` value, or a long token (32+ token characters with a letter and a digit that
    are not a UUID or one of our ids)? For values logged whole, such as a request id."""
    if _SECRET_PREFIX.search(value):
        return True
    return any(_looks_random(run) for run in _LONG_TOKEN.findall(_NOT_A_TOKEN.sub("-", value)))


def _looks_random(run: str) -> bool:
    """Does this long run of token characters look random rather than like words? It mixes
    at least two of lower case, upper case and digits. A token of ours (base64url) almost
    always has all three (one with no digit, about 1 in 230 of 32 characters, still mixes
    cases); words joined by dashes are one case, and a slug with a digit is masked, which
    costs a log line some detail, never a secret."""
    kinds = (
        any(c.islower() for c in run),
        any(c.isupper() for c in run),
        any(c.isdigit() for c in run),
    )
    return sum(kinds) >= 2


def mask_numbers(text: str) -> str:
    """``text`` with every phone number (:func:`_phone_shaped`) cut to its last four digits."""
    return _NUMBER.sub(_mask_number, text)


def safe_log_text(text: str, *, keep_newlines: bool = False, full_numbers: bool = False) -> str:
    """``text`` as it may be logged: escaped first, so a mask also covers what a control
    character was hiding behind."""
    text = mask_secrets(escape_controls(text, keep_newlines=keep_newlines))
    return text if full_numbers else mask_numbers(text)


class SafeLogFilter(logging.Filter):
    """Escapes and masks every record a handler emits (see the module docstring).

    Installed on handlers rather than loggers, so records propagated from any logger pass
    it. uvicorn's access records keep their argument tuple (its formatter unpacks it);
    every other record is rendered once and its arguments dropped.
    """

    _DONE: Final = "_unified_messaging_safe"

    def __init__(self, name: str = "", *, full_numbers: bool = False) -> None:
        super().__init__(name)
        self.full_numbers = full_numbers

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, self._DONE, False):
            return True
        setattr(record, self._DONE, True)
        _mask_context_fields(record)
        if record.name == "uvicorn.access" and isinstance(record.args, tuple):
            record.args = tuple(_safe_arg(arg, self.full_numbers) for arg in record.args)
        else:
            _render_safely(record, self.full_numbers)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = _safe_block(record.exc_text, self.full_numbers)
        if record.stack_info:
            record.stack_info = _safe_block(record.stack_info, self.full_numbers)
        return True


def _mask_context_fields(record: logging.LogRecord) -> None:
    # Copied onto the record by LogContextFilter (which runs first) and written as JSON
    # fields by JsonLogFormatter: a secret-shaped value goes whole, the rest is escaped.
    for name in CONTEXT_FIELDS:
        value = getattr(record, name, None)
        if isinstance(value, str):
            setattr(record, name, MASK if looks_secret(value) else safe_log_text(value))


def _safe_block(text: str, full_numbers: bool) -> str:
    # A traceback keeps its line breaks, but an exception's message may carry client text
    # with its own: indented, no line of the block can pass for a record of its own.
    safe = safe_log_text(text, keep_newlines=True, full_numbers=full_numbers)
    return textwrap.indent(safe, "  ")


def _render_safely(record: logging.LogRecord, full_numbers: bool) -> None:
    try:
        message = record.getMessage()
    except (TypeError, ValueError):
        # A broken format: leave it for the handler, which reports it the usual way.
        return
    record.msg = safe_log_text(message, full_numbers=full_numbers)
    record.args = None
    # uvicorn's coloured variant would re-format the raw arguments dropped above.
    record.__dict__.pop("color_message", None)


def _safe_arg(arg: object, full_numbers: bool) -> object:
    return safe_log_text(arg, full_numbers=full_numbers) if isinstance(arg, str) else arg


def _mask_number(match: re.Match[str]) -> str:
    plus, digits = match.groups()
    if not _phone_shaped(plus, digits):
        return match.group()
    return f"{plus or ''}{'*' * (len(digits) - 4)}{digits[-4:]}"


def _phone_shaped(plus: str | None, digits: str) -> bool:
    """Is this run of 10-15 digits (after ``+``/``%2B`` or not) a phone number? With the
    plus, any: E.164 numbers of every country. Without it, only a Turkish one (see
    ``_TURKISH_NUMBER``): a bare run may as well be a Unix time or a count."""
    if plus:
        return True
    if len(digits) == 10:
        return _BARE_TEN.fullmatch(digits) is not None
    return _TURKISH_NUMBER.fullmatch(digits) is not None


def _mask_token_segment(match: re.Match[str]) -> str:
    run = match.group()
    if _NOT_A_TOKEN.fullmatch(run) or not _looks_random(run):
        return run
    return MASK


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED_ESCAPES.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _mask_dlr_segments(match: re.Match[str]) -> str:
    # Which segment is the token depends on the path being right; it may not be (an empty
    # segment, an extra one, the connection id left out). So every segment after "dlr" is
    # masked except empty ones and connection ids (kept, to tell the lines apart).
    segments = match.group(2).split("/")
    kept = [s if not s or _CONNECTION_ID.fullmatch(s) else MASK for s in segments]
    return match.group(1) + "/".join(kept)


def _mask_param(match: re.Match[str]) -> str:
    separator, name, _ = match.groups()
    if not unquote_plus(name).lower().endswith(_SECRET_NAME_ENDINGS):
        return match.group()
    return f"{separator}{name}={MASK}"
