"""The Standard Webhooks signing core (D19): secrets, signatures, headers and event bodies.

Pure functions, no I/O. The sender signs with them, and :mod:`unified_messaging.webhooks`
(the public receiver-side module) verifies with them, so both sides share one definition of
the signed content: ``{webhook-id}.{webhook-timestamp}.{body}`` over the **raw body bytes**.
Signing a decoded-and-re-encoded string instead (as the reference library does) is how
receivers end up with signatures that fail on the first non-ASCII character.

Secrets are ``whsec_`` + base64 of 24-64 random bytes. Raw base64 without the prefix is
accepted too, as the reference library accepts it. Nothing here ever formats a secret, or a
signature computed from one, into an error message.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets as _secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

from .._ids import new_id
from .._lifecycle.rules import EVENT_TYPES, EventType

if TYPE_CHECKING:
    # Only a type here: the public verifier (``webhooks``) imports this module, and a
    # receiver or an admin command should not pay for pydantic.
    from .._models import StatusRecord

__all__ = [
    "HEADER_ID",
    "HEADER_SIGNATURE",
    "HEADER_TIMESTAMP",
    "MAX_SECRET_BYTES",
    "MIN_SECRET_BYTES",
    "SECRET_PREFIX",
    "SIGNATURE_VERSION",
    "build_event",
    "decode_secret",
    "event_id",
    "format_timestamp",
    "generate_secret",
    "sign",
    "sign_with_key",
    "signature_headers",
    "signed_content",
]

SECRET_PREFIX: Final = "whsec_"  # noqa: S105 - a prefix, not a secret
SIGNATURE_VERSION: Final = "v1"
HEADER_ID: Final = "webhook-id"
HEADER_TIMESTAMP: Final = "webhook-timestamp"
HEADER_SIGNATURE: Final = "webhook-signature"
#: The spec's bounds for symmetric secrets (at least 192 bits); 32 bytes is our default.
MIN_SECRET_BYTES: Final = 24
MAX_SECRET_BYTES: Final = 64
_DEFAULT_SECRET_BYTES: Final = 32


def generate_secret(nbytes: int = _DEFAULT_SECRET_BYTES) -> str:
    """A new endpoint secret: ``whsec_`` + base64 of ``nbytes`` random bytes (24-64)."""
    if not MIN_SECRET_BYTES <= nbytes <= MAX_SECRET_BYTES:
        raise ValueError(f"nbytes must be {MIN_SECRET_BYTES}-{MAX_SECRET_BYTES}")
    return SECRET_PREFIX + base64.b64encode(_secrets.token_bytes(nbytes)).decode("ascii")


def decode_secret(secret: str) -> bytes:
    """The HMAC key of ``secret`` (``whsec_<base64>`` or bare base64).

    Raises ``TypeError`` for a non-string and ``ValueError`` for anything that is not base64
    of at least one byte; neither message repeats the secret.
    """
    if not isinstance(secret, str):
        raise TypeError(f"a webhook secret is a str (whsec_<base64>), not {type(secret).__name__}")
    encoded = secret.strip()
    encoded = encoded.removeprefix(SECRET_PREFIX)
    # Secrets copied from some dashboards lose their padding; base64 ignores surplus "=".
    try:
        key = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            "the webhook secret is not valid base64 (expected whsec_<base64>)"
        ) from None
    if not key:
        raise ValueError("the webhook secret is empty")
    return key


def signed_content(msg_id: str, timestamp: int, body: bytes) -> bytes:
    """``{msg_id}.{timestamp}.{body}`` as bytes: exactly what the HMAC covers."""
    return b"%s.%d.%s" % (msg_id.encode("utf-8"), timestamp, bytes(body))


def sign_with_key(key: bytes, msg_id: str, timestamp: int, body: bytes) -> bytes:
    """The raw HMAC-SHA256 digest over :func:`signed_content` with an already-decoded key."""
    return hmac.new(key, signed_content(msg_id, timestamp, body), hashlib.sha256).digest()


def _check_signable(msg_id: str, timestamp: int, body: bytes) -> None:
    if not isinstance(body, bytes | bytearray | memoryview):
        raise TypeError(
            "sign the raw body bytes (the exact bytes sent), not a "
            f"{type(body).__name__}: re-encoding text can change the bytes"
        )
    if not msg_id or "." in msg_id:
        # A "." in the id would make "{id}.{ts}.{body}" ambiguous (the spec forbids it).
        raise ValueError("msg_id must be non-empty and contain no '.'")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0:
        raise TypeError("timestamp is whole Unix seconds (a non-negative int)")


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """One ``v1,<base64 HMAC-SHA256>`` signature of ``body`` under ``secret``."""
    _check_signable(msg_id, timestamp, body)
    digest = sign_with_key(decode_secret(secret), msg_id, timestamp, body)
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode('ascii')}"


def signature_headers(
    secrets: Sequence[str], msg_id: str, timestamp: int, body: bytes
) -> dict[str, str]:
    """The three Standard Webhooks headers, with one signature per secret.

    Pass the new and the old secret while rotating: the receiver accepts the request if any
    one signature matches a secret it knows, so neither side has to switch at the same moment.
    """
    if isinstance(secrets, str):
        secrets = [secrets]  # a lone str is a Sequence[str] of characters: never what is meant
    if not secrets:
        raise ValueError("at least one secret is needed to sign")
    signatures = " ".join(sign(secret, msg_id, timestamp, body) for secret in secrets)
    return {
        HEADER_ID: msg_id,
        HEADER_TIMESTAMP: str(timestamp),
        HEADER_SIGNATURE: signatures,
    }


def event_id() -> str:
    """A new ``webhook-id``: unique per event, kept the same across retries of that event."""
    return new_id("evt")


def format_timestamp(when: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, the way the status record's own times are written."""
    if when.tzinfo is None:
        raise ValueError("event times must be timezone-aware")
    text = when.astimezone(UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


def build_event(event_type: EventType, record: StatusRecord, *, now: datetime) -> bytes:
    """The event body: ``{"type", "timestamp", "data": <status record>}`` as compact UTF-8.

    These bytes are signed and sent as they are; keys keep this order and the record's own
    field order (D11), so the same event always serializes the same way.
    """
    return build_event_document(event_type, record.to_dict(), now=now)


def build_event_document(
    event_type: EventType, data: Mapping[str, object], *, now: datetime
) -> bytes:
    """:func:`build_event` from a status record already in its JSON form (``to_dict()``)."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r}")
    event = {"type": event_type, "timestamp": format_timestamp(now), "data": dict(data)}
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
