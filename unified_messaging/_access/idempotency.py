"""``Idempotency-Key`` (D22): the key's shape, the request fingerprint, and the replay rules.

A POST may carry a key chosen by the client. The first request with a key owns it; its answer
is stored and every later request with the same key (for the same workspace and API key,
within 24 hours) gets one of three answers:

- the same request (same method, path and canonical body): the first answer, replayed;
- another request: 409 ``IDEMPOTENCY_CONFLICT``;
- the first one is still running: 409 ``IDEMPOTENCY_IN_PROGRESS``;
- the first one created its jobs but never stored its answer (its process died, or the store
  failed at the end): the jobs as they are now (:class:`BoundJobs`), never a second send.

The key is bound to the request's job ids in the send's write-ahead transaction (the one that
stores the jobs before any provider is called), as a compare-and-set on the key's ``owner``
token; so is every takeover of an abandoned or expired key. Of two requests racing for one
key, exactly one sends. A key whose first request died before its write-ahead transaction
(nothing was stored, so nothing was sent) is taken over after ``in_flight_timeout``.

An answer is stored only when the request did something: a success, or a 502 that left a
failed job behind (its body names the ``job_id``). Any other error happened before a job
existed, so the key is released and a retry runs afresh. A release the store refuses (it is down:
the very failure that ended the request) is remembered and done at this object's next
:meth:`begin`, once the store answers again, so a key is not held for ``in_flight_timeout``
after an outage (a 5xx keeps nothing). It is conditional on the claim's ``owner``: a key
taken over meanwhile is not touched. Edges decide what an "answer" is
(HTTP: a status and the body bytes); this module never looks inside it.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from .._clock import Clock
from .._errors import (
    IdempotencyConflict,
    IdempotencyInProgress,
    MessagingError,
    RequestInvalid,
)
from .._ids import new_id
from ..store.base import IdempotencyClaim, IdempotencyRecord, Store
from .principal import Principal

__all__ = [
    "IDEMPOTENCY_KEY_PATTERN",
    "IDEMPOTENCY_TTL",
    "BoundJobs",
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
    """Whether an answer is stored for replay: a success, or an error that created a job
    (502 ``PROVIDER_UNAVAILABLE``, 422 ``CHAT_UNREACHABLE``: their bodies name the job)."""
    return error is None or getattr(error, "job_id", None) is not None


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """The first answer to a key, as the edge stored it."""

    status_code: int
    body: bytes


@dataclass(frozen=True, slots=True)
class BoundJobs:
    """The jobs the first request created, whose answer it never stored: answer with them."""

    job_ids: tuple[str, ...]


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
        #: Releases the store refused: (workspace, API key, Idempotency-Key) -> claim owner.
        self._unreleased: dict[tuple[str, str, str], str] = {}

    async def begin(
        self, auth: Principal, idem_key: str, fingerprint: str
    ) -> IdempotencyClaim | StoredAnswer | BoundJobs:
        """Claim ``idem_key`` for this request, or settle it from the first one.

        An :class:`IdempotencyClaim`: the caller holds the key; it passes the claim to the
        send (which binds it to the jobs) and must :meth:`finish` or :meth:`release` it.
        A :class:`StoredAnswer`: replay it. :class:`BoundJobs`: answer with those jobs as
        they are now. Raises :class:`IdempotencyConflict` or :class:`IdempotencyInProgress`.
        """
        now = self._clock.now()
        await self._release_pending()
        await self._purge(now)
        record = IdempotencyRecord(
            workspace_id=auth.workspace_id,
            key_id=_key_id(auth),
            idem_key=idem_key,
            request_hash=fingerprint,
            created_at=now,
            owner=new_id("idk"),
        )
        existing = await self._store.begin_idempotent(record)
        if existing is None:
            return self._claim(record)
        expired = existing.created_at + self._ttl <= now
        if expired:
            # Past its 24 hours the key is free again, jobs or not; one retry takes it over.
            if await self._store.take_over_idempotent(record, existing.owner, bound_ok=True):
                return self._claim(record)
            raise IdempotencyInProgress
        if existing.request_hash != fingerprint:
            raise IdempotencyConflict
        if existing.status_code is not None:
            return StoredAnswer(existing.status_code, existing.response_body or b"")
        if existing.job_ids:
            return BoundJobs(existing.job_ids)
        abandoned = existing.created_at + self._in_flight_timeout <= now
        # No jobs bound: the first request stored nothing, so it sent nothing. Taking over is
        # a compare-and-set that also fails if it binds jobs meanwhile: never two sends.
        if abandoned and await self._store.take_over_idempotent(record, existing.owner):
            return self._claim(record)
        raise IdempotencyInProgress

    async def finish(self, auth: Principal, idem_key: str, status_code: int, body: bytes) -> None:
        """Store the answer to replay for the key this request owns."""
        await self._store.finish_idempotent(
            auth.workspace_id, _key_id(auth), idem_key, status_code, body
        )

    async def release(self, auth: Principal, idem_key: str, *, owner: str | None = None) -> None:
        """Give the key up: the request failed before it did anything. ``owner``: the
        claim's; with it, a release the store refuses is remembered and done at the next
        :meth:`begin` (the error is still raised, for the caller to log)."""
        where = (auth.workspace_id, _key_id(auth), idem_key)
        try:
            await self._store.drop_idempotent(*where, owner=owner)
        except Exception:
            if owner is not None:
                self._unreleased[where] = owner
            raise
        self._unreleased.pop(where, None)

    async def _release_pending(self) -> None:
        """The releases the store refused before, now (each only if its claim still holds
        the key). The store still down: they wait for the next call, and this one's own
        store call reports the outage."""
        for where, owner in list(self._unreleased.items()):
            try:
                await self._store.drop_idempotent(*where, owner=owner)
            except Exception:  # the outage goes on: kept for the next call
                return
            # Dropped, or no longer ours to drop (bound, taken over, purged): done either way.
            if self._unreleased.get(where) == owner:
                del self._unreleased[where]

    @staticmethod
    def _claim(record: IdempotencyRecord) -> IdempotencyClaim:
        assert record.owner is not None
        return IdempotencyClaim(record.workspace_id, record.key_id, record.idem_key, record.owner)

    async def _purge(self, now: datetime) -> None:
        if self._last_purge is not None and now - self._last_purge < _PURGE_EVERY:
            return
        self._last_purge = now
        await self._store.purge_idempotent(now - self._ttl)


def _key_id(auth: Principal) -> str:
    # A trusted in-process principal has no API key; its keys form one space per workspace.
    return auth.key.id if auth.key is not None else "-"
