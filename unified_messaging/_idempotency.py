"""``Idempotency-Key`` (D22): the key's shape, the request fingerprint, and the replay rules.

A POST may carry a key chosen by the client. The first request with a key owns it; its answer
is stored and every later request with the same key (for the same workspace and API key,
within 24 hours) gets one of three answers:

- the same request (same method, path and canonical body): the first answer, replayed;
- another request: 409 ``IDEMPOTENCY_CONFLICT``;
- the first one is still running: 409 ``IDEMPOTENCY_IN_PROGRESS``.

An answer is stored only when the request did something: a success, or a 502 that left a
failed job behind (its body names the ``job_id``). Any other error happened before a job
existed, so the key is released and a retry runs afresh. The store's atomic
``begin_idempotent`` is what makes one of N concurrent identical requests the only one that
runs. Edges decide what an "answer" is (HTTP: a status and the body bytes); this module never
looks inside it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from ._clock import Clock
from ._errors import (
    IdempotencyConflict,
    IdempotencyInProgress,
    MessagingError,
    ProviderUnavailable,
    RequestInvalid,
)
from .store.base import IdempotencyRecord, Store

if TYPE_CHECKING:
    from ._messenger import Principal

__all__ = [
    "IDEMPOTENCY_KEY_PATTERN",
    "IDEMPOTENCY_TTL",
    "IdempotencyKeys",
    "StoredAnswer",
    "check_idempotency_key",
    "keeps_answer",
    "request_fingerprint",
]

#: How long a stored answer is replayed (D22).
IDEMPOTENCY_TTL: Final = timedelta(hours=24)
#: 1-255 printable ASCII characters, no space at either end (HTTP trims those anyway, so a
#: key that had them would not survive the trip unchanged).
IDEMPOTENCY_KEY_PATTERN: Final = r"^[\x21-\x7e]([\x20-\x7e]{0,253}[\x21-\x7e])?$"
# ``fullmatch``: unlike ``$`` alone, it refuses a trailing newline.
_KEY_SHAPE = re.compile(IDEMPOTENCY_KEY_PATTERN)
#: Purging expired records is housekeeping, done at most this often by one process.
_PURGE_EVERY: Final = timedelta(hours=1)


def check_idempotency_key(value: str) -> str:
    """The key itself, or :class:`RequestInvalid` naming the ``Idempotency-Key`` header."""
    if _KEY_SHAPE.fullmatch(value) is None:
        raise RequestInvalid.for_field(
            "Idempotency-Key", "must be 1-255 printable ASCII characters, no space at the ends"
        )
    return value


def request_fingerprint(method: str, path: str, payload: object) -> str:
    """SHA-256 of the method, the path and the payload re-serialized canonically.

    Sorted keys and no insignificant whitespace: a client that re-encodes the same body with
    other spacing or key order is sending the same request. ``payload`` is what was parsed
    from JSON (finite numbers only).
    """
    canonical = json.dumps(
        payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    digest = hashlib.sha256(f"{method.upper()} {path}\n".encode())
    digest.update(canonical.encode("utf-8"))
    return digest.hexdigest()


def keeps_answer(error: MessagingError | None) -> bool:
    """Whether an answer is stored for replay: a success, or a 502 that created a job."""
    return error is None or (isinstance(error, ProviderUnavailable) and error.job_id is not None)


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """The first answer to a key, as the edge stored it."""

    status_code: int
    body: bytes


class IdempotencyKeys:
    """The D22 rules over a :class:`~unified_messaging.store.base.Store`.

    ``in_flight_timeout`` frees a key whose first request never finished (its process
    died): after that long a retry takes the key over instead of getting 409 for a day.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        ttl: timedelta = IDEMPOTENCY_TTL,
        in_flight_timeout: timedelta = timedelta(minutes=5),
    ) -> None:
        self._store = store
        self._clock = clock
        self._ttl = ttl
        self._in_flight_timeout = in_flight_timeout
        self._last_purge: datetime | None = None

    async def begin(self, auth: Principal, idem_key: str, fingerprint: str) -> StoredAnswer | None:
        """Claim ``idem_key`` for this request, or settle it from the first one.

        ``None``: the caller owns the key and must :meth:`finish` or :meth:`release` it.
        A :class:`StoredAnswer`: replay it. Raises :class:`IdempotencyConflict` or
        :class:`IdempotencyInProgress`.
        """
        now = self._clock.now()
        await self._purge(now)
        record = IdempotencyRecord(
            workspace_id=auth.workspace_id,
            key_id=_key_id(auth),
            idem_key=idem_key,
            request_hash=fingerprint,
            created_at=now,
        )
        existing = await self._store.begin_idempotent(record)
        if existing is not None and self._stale(existing, now):
            # Expired, or abandoned by a dead process: forget it and claim the key afresh.
            # Should another request win that second claim, it is the one in flight.
            await self._store.drop_idempotent(record.workspace_id, record.key_id, idem_key)
            existing = await self._store.begin_idempotent(record)
        if existing is None:
            return None
        if existing.request_hash != fingerprint:
            raise IdempotencyConflict
        if existing.status_code is None:
            raise IdempotencyInProgress
        return StoredAnswer(existing.status_code, existing.response_body or b"")

    async def finish(self, auth: Principal, idem_key: str, status_code: int, body: bytes) -> None:
        """Store the answer to replay for the key this request owns."""
        await self._store.finish_idempotent(
            auth.workspace_id, _key_id(auth), idem_key, status_code, body
        )

    async def release(self, auth: Principal, idem_key: str) -> None:
        """Give the key up: the request failed before it did anything."""
        await self._store.drop_idempotent(auth.workspace_id, _key_id(auth), idem_key)

    def _stale(self, record: IdempotencyRecord, now: datetime) -> bool:
        if record.created_at + self._ttl <= now:
            return True
        in_flight = record.status_code is None
        return in_flight and record.created_at + self._in_flight_timeout <= now

    async def _purge(self, now: datetime) -> None:
        if self._last_purge is not None and now - self._last_purge < _PURGE_EVERY:
            return
        self._last_purge = now
        await self._store.purge_idempotent(now - self._ttl)


def _key_id(auth: Principal) -> str:
    # A trusted in-process principal has no API key; its keys form one space per workspace.
    return auth.key.id if auth.key is not None else "-"
