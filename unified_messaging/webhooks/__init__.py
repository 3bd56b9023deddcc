"""Receive our webhooks: verify a delivery, and sign payloads in your own tests.

Every webhook we send follows the Standard Webhooks scheme (https://www.standardwebhooks.com):
three headers, ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature``, the last a
space-separated list of ``v1,<base64 HMAC-SHA256>`` signatures of
``{webhook-id}.{webhook-timestamp}.{raw body}`` under the endpoint's ``whsec_…`` secret.

    from unified_messaging.webhooks import WebhookVerificationError, verify

    async def receive(request):
        try:
            event = verify(await request.body(), request.headers, secret)
        except WebhookVerificationError:
            return Response(status_code=400)
        ...

Pass the **raw body bytes** exactly as they arrived. Parsing the JSON and serializing it
again changes bytes (spacing, key order, escapes), and the signature no longer matches.

    WebhookVerificationError        .reason says which check failed (never why in detail:
                                    no secret and no expected signature is ever in a message)
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

from .._lifecycle.rules import EVENT_TYPES, EventType
from ._signing import (
    HEADER_ID,
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    SIGNATURE_VERSION,
    decode_secret,
    event_id,
    generate_secret,
    sign,
    sign_with_key,
    signature_headers,
)

__all__ = [
    "DEFAULT_TOLERANCE",
    "EVENT_TYPES",
    "EventType",
    "Payload",
    "VerificationFailure",
    "Webhook",
    "WebhookVerificationError",
    "generate_secret",
    "generate_test_headers",
    "sign",
    "signature_headers",
    "verify",
]

#: How far ``webhook-timestamp`` may be from the receiver's clock, either way (replay guard).
DEFAULT_TOLERANCE: Final = timedelta(minutes=5)

#: The raw request body; ``str`` is refused (its bytes on the wire would be a guess).
Payload = bytes | bytearray | memoryview
VerificationFailure = Literal[
    "missing_header",
    "invalid_header",
    "timestamp_too_old",
    "timestamp_too_new",
    "no_matching_signature",
    "invalid_payload",
]

# More entries than any rotation needs: bounds the HMAC work a forged header can cause.
_MAX_SIGNATURES: Final = 32
_SHA256_SIZE: Final = 32


class WebhookVerificationError(Exception):
    """The request is not a genuine, fresh webhook from us: answer it with a 4xx.

    ``reason`` names the failed check. The message never contains the secret or the
    signature we expected, so it is safe to log.
    """

    def __init__(self, reason: VerificationFailure, message: str) -> None:
        super().__init__(message)
        self.reason: VerificationFailure = reason

    def __repr__(self) -> str:
        return f"WebhookVerificationError(reason={self.reason!r}, message={str(self)!r})"


def _keys_of(secret: str | Sequence[str]) -> tuple[bytes, ...]:
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise ValueError("at least one webhook secret is needed")
    return tuple(decode_secret(item) for item in secrets)


def _header(headers: Mapping[str, str], name: str) -> str:
    # Starlette's, httpx's and Django's header mappings are case-insensitive; a plain dict
    # from another framework may not be, so look for any spelling of the name.
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    if not value:
        raise WebhookVerificationError("missing_header", f"missing {name} header")
    return value


def _timestamp(value: str) -> int:
    # The spec says integer Unix seconds; anything else (floats, signs, spaces) is refused
    # rather than guessed at, so the signed content is never ambiguous.
    text = value.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 20:
        raise WebhookVerificationError("invalid_header", f"{HEADER_TIMESTAMP} is not Unix seconds")
    return int(text)


def _signatures(value: str) -> list[bytes]:
    """The decoded ``v1`` signatures of the header; other versions and junk are skipped."""
    found: list[bytes] = []
    for entry in value.split()[:_MAX_SIGNATURES]:
        version, _, encoded = entry.partition(",")
        if version != SIGNATURE_VERSION or not encoded:
            continue  # v1a (asymmetric) or a future scheme: not ours to judge
        try:
            found.append(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError):
            continue
    return found


def _check_time(timestamp: int, now: datetime, tolerance: timedelta) -> None:
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    # Whole seconds on both sides: the header has no fraction, and int arithmetic cannot
    # overflow the way datetime.fromtimestamp(huge) does.
    age = int(now.astimezone(UTC).timestamp()) - timestamp
    limit = int(tolerance.total_seconds())
    if age > limit:
        raise WebhookVerificationError("timestamp_too_old", "message timestamp too old")
    if -age > limit:
        raise WebhookVerificationError("timestamp_too_new", "message timestamp too new")


def _parse(payload: bytes) -> dict[str, object]:
    try:
        event = json.loads(payload)
    except (UnicodeDecodeError, ValueError):
        raise WebhookVerificationError("invalid_payload", "payload is not JSON") from None
    if not isinstance(event, dict):
        raise WebhookVerificationError("invalid_payload", "payload is not a JSON object")
    return event


class Webhook:
    """A verifier for one endpoint: ``Webhook(secret).verify(body, headers)``.

    Give several secrets while rotating (the new one and the old one): a request passes when
    any ``v1`` signature in it matches any of them. Secrets are decoded once, here, so a bad
    secret fails at start-up (``ValueError``) rather than on the first request.
    """

    __slots__ = ("_keys", "_tolerance")

    def __init__(
        self, secret: str | Sequence[str], *, tolerance: timedelta = DEFAULT_TOLERANCE
    ) -> None:
        if tolerance < timedelta(0):
            raise ValueError("tolerance must not be negative")
        self._keys = _keys_of(secret)
        self._tolerance = tolerance

    def __repr__(self) -> str:
        return f"Webhook(<{len(self._keys)} secret(s)>, tolerance={self._tolerance!r})"

    def verify(
        self, payload: Payload, headers: Mapping[str, str], *, now: datetime | None = None
    ) -> dict[str, object]:
        """Check signature and freshness, then return the parsed event.

        ``payload`` must be the raw body bytes; a ``str`` is a ``TypeError`` (its bytes would
        be a guess). Raises :class:`WebhookVerificationError` for everything about the request.
        """
        if not isinstance(payload, bytes | bytearray | memoryview):
            raise TypeError(
                "verify() takes the raw request body as bytes (e.g. await request.body()), "
                f"not {type(payload).__name__}: a decoded and re-encoded body may differ"
            )
        body = bytes(payload)
        msg_id = _header(headers, HEADER_ID)
        timestamp = _timestamp(_header(headers, HEADER_TIMESTAMP))
        offered = _signatures(_header(headers, HEADER_SIGNATURE))
        _check_time(timestamp, now or datetime.now(UTC), self._tolerance)
        if not self._matches(msg_id, timestamp, body, offered):
            raise WebhookVerificationError("no_matching_signature", "no matching signature")
        return _parse(body)

    def _matches(self, msg_id: str, timestamp: int, body: bytes, offered: list[bytes]) -> bool:
        candidates = [sig for sig in offered if len(sig) == _SHA256_SIZE]
        matched = False
        for key in self._keys:
            expected = sign_with_key(key, msg_id, timestamp, body)
            for signature in candidates:
                # No early exit: every comparison runs, in constant time.
                matched |= hmac.compare_digest(expected, signature)
        return matched


def verify(
    payload: Payload,
    headers: Mapping[str, str],
    secret: str | Sequence[str],
    *,
    tolerance: timedelta = DEFAULT_TOLERANCE,
    now: datetime | None = None,
) -> dict[str, object]:
    """Verify one webhook request and return its event (``{"type", "timestamp", "data"}``).

    ``payload`` is the raw body bytes, ``headers`` the request headers (any case),
    ``secret`` the endpoint's ``whsec_…`` secret, or a list of them while rotating.
    Raises :class:`WebhookVerificationError` when a header is missing or malformed, the
    timestamp is more than ``tolerance`` away from ``now`` (either way), no ``v1``
    signature matches, or the verified body is not a JSON object.
    """
    return Webhook(secret, tolerance=tolerance).verify(payload, headers, now=now)


def generate_test_headers(
    payload: Payload,
    secret: str | Sequence[str],
    *,
    msg_id: str | None = None,
    timestamp: int | None = None,
) -> dict[str, str]:
    """Headers that make ``payload`` pass :func:`verify`: useful for signing payloads in your
    tests, so a receiver's tests post exactly what we would send.

    ``msg_id`` defaults to a fresh id and ``timestamp`` to now (Unix seconds).
    """
    secrets = [secret] if isinstance(secret, str) else list(secret)
    when = int(datetime.now(UTC).timestamp()) if timestamp is None else timestamp
    return signature_headers(secrets, msg_id or event_id(), when, bytes(payload))
