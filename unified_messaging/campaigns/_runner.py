"""Campaigns: every row of a CSV sent as one message, in bulk chunks, each chunk only once.

A campaign is a name (by default the file's) in a workspace and mode. Its rows go out in
chunks through :meth:`Messenger.send_bulk`, each chunk under an idempotency key of its own
(D22) derived from the campaign and the chunk's place in the file, and fingerprinted by the
chunk's rows and the settings. So re-running the same command resumes: a chunk already
handed over is replayed from its stored answer (never sent again), a chunk whose run died
after its write-ahead is answered with the jobs it made, and the rest go out. A chunk whose
rows changed since it was sent is refused (``IDEMPOTENCY_CONFLICT``), not sent twice.

The campaign's own record (its settings and how far it got) is one more key, rewritten after
each chunk; ``campaign status`` reads it and the messages of the chunks. Both live as long as
idempotency keys do: 24 hours (D22). A campaign resumes within that window.

A row fails alone (no number, a number that is not one, a variable missing, text too long):
it is reported with its error and the others go out. A problem of the request as a whole
(quota used up, provider not connected, template gone) stops the campaign where it is; a
``RATE_LIMITED`` refusal waits its ``Retry-After`` and tries again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from .._access.idempotency import (
    BoundJobs,
    IdempotencyKeys,
    StoredAnswer,
    _key_id,
    request_fingerprint,
)
from .._access.ratelimit import RateLimiter, RateLimitPolicy
from .._errors import (
    IdempotencyConflict,
    IdempotencyInProgress,
    InvalidRecipient,
    MessagingError,
    RateLimited,
    RequestInvalid,
    ResourceNotFound,
)
from .._ids import new_id
from .._models import MAX_BULK_ITEMS, BulkItem, has_control_chars, parse_model
from ..store.base import IdempotencyClaim, IdempotencyRecord, MessageQuery
from ..templates._render import brace_problem, placeholders, render
from ._csv import DEFAULT_ENCODING, CsvRow, CsvSource

if TYPE_CHECKING:
    from .._messenger import Messenger, Principal

__all__ = [
    "Campaign",
    "CampaignSettings",
    "CampaignStatus",
    "CampaignSummary",
    "RowResult",
    "campaign_status",
]

DEFAULT_CHUNK: Final = 100
#: How long a chunk key claimed by a run that died before its write-ahead blocks a re-run.
#: Safe to keep short: taking a key over is a compare-and-set that fails once jobs are
#: bound to it, so a takeover never makes a second send (D22).
IN_FLIGHT_TIMEOUT: Final = timedelta(seconds=10)
#: How often a run looks again at a key another run holds.
_POLL: Final = 1.0
_PENDING_MESSAGE = (
    "an earlier run handed this row over and stopped before its outcome was stored; "
    "the worker settles it (messages show JOB_ID)"
)

Sleep = Callable[[float], Awaitable[None]]
OnChunk = Callable[[Sequence["RowResult"]], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class CampaignSettings:
    """What to send: the same on every run of one campaign (a change is a conflict).

    Exactly one of ``template`` (a template key; each row's cells are its variables) and
    ``body`` (text with ``{{ column }}`` placeholders). ``rate``: at most this many
    messages a second, shared by every campaign of the workspace when the limiter is.
    """

    name: str
    workspace_id: str
    livemode: bool
    template: str | None = None
    body: str | None = None
    to_column: str = "phone"
    chunk: int = DEFAULT_CHUNK
    provider: str | None = None
    fallback: tuple[str, ...] = ()
    sender: str | None = None
    rate: float | None = None
    #: Hand every row over at this time (ISO 8601 with an offset): the bulk
    #: requests carry it as their ``send_at``, which the request model and the façade check.
    send_at: str | None = None

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > 200 or has_control_chars(self.name):
            raise RequestInvalid.for_field("campaign", "must be 1-200 characters, no controls")
        if (self.template is None) == (self.body is None):
            raise RequestInvalid.for_field("body", "exactly one of body or template is required")
        if self.body is not None and (problem := brace_problem(self.body)):
            raise RequestInvalid.for_field("body", problem)
        if not 1 <= self.chunk <= MAX_BULK_ITEMS:
            raise RequestInvalid.for_field("chunk", f"must be 1-{MAX_BULK_ITEMS}")
        if not self.to_column.strip():
            raise RequestInvalid.for_field("to_column", "must name a column")
        if self.rate is not None and not (math.isfinite(self.rate) and self.rate > 0):
            raise RequestInvalid.for_field("rate", "must be a positive number of messages/s")

    @property
    def mode(self) -> str:
        return "live" if self.livemode else "test"

    def fingerprint(self) -> str:
        """What makes two runs the same campaign: everything but the pace."""
        settings = asdict(self)
        del settings["rate"]
        if settings["send_at"] is None:
            del settings["send_at"]  # a campaign started before it existed resumes as it was
        return request_fingerprint("POST", "campaign", settings)


@dataclass(frozen=True, slots=True)
class RowResult:
    """What became of one row. ``status``: ``sent``, ``queued`` or ``failed`` as a bulk
    answers (D8); ``unknown`` (``SUBMIT_INTERRUPTED``) for a row an interrupted run was
    handing over when it died (a provider may have it: never sent again); or ``pending`` for
    a row an interrupted run wrote whose outcome is not settled yet. ``replayed``: handed
    over by an earlier run, not sent by this one."""

    row: int
    to: str
    job_id: str | None
    status: str
    error_code: str | None = None
    error_message: str | None = None
    replayed: bool = False


@dataclass(slots=True)
class CampaignSummary:
    """The run's totals; ``stopped`` is the error that ended it early, if one did."""

    name: str
    mode: str
    rows: int = 0
    done: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    replayed: int = 0
    stopped: MessagingError | None = None
    stopped_at_row: int | None = None

    def add(self, results: Iterable[RowResult]) -> None:
        for result in results:
            self.done += 1
            self.by_status[result.status] = self.by_status.get(result.status, 0) + 1
            if result.error_code:
                self.errors[result.error_code] = self.errors.get(result.error_code, 0) + 1
            self.replayed += result.replayed


class Campaign:
    """One run of a campaign: :meth:`prepare` checks the file and the settings and counts
    the rows (nothing is sent yet), :meth:`run` sends.

    ``limiter`` paces ``settings.rate`` (default: a bucket in this process); ``sleep`` is
    how the run waits (for ``Retry-After``, for a key another run holds): tests pass one
    that moves a :class:`ManualClock`.
    """

    def __init__(
        self,
        messenger: Messenger,
        settings: CampaignSettings,
        path: Path | str,
        *,
        delimiter: str = ",",
        encoding: str = DEFAULT_ENCODING,
        limiter: RateLimiter | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self._m = messenger
        self.settings = settings
        self._path = Path(path)
        self._delimiter = delimiter
        self._encoding = encoding
        self._limiter = limiter
        self._sleep: Sleep = sleep or asyncio.sleep
        self._keys = IdempotencyKeys(
            messenger.store, messenger.clock, in_flight_timeout=IN_FLIGHT_TIMEOUT
        )
        self._source: CsvSource | None = None
        self._principal: Principal | None = None
        self.total = 0

    @property
    def _prefix(self) -> str:
        return campaign_key(self.settings.name, self.settings.livemode)

    async def prepare(self) -> int:
        """Check the workspace, the template and the whole file; the number of rows.

        Raises the façade's errors (``NOT_FOUND``, ``TEMPLATE_NOT_FOUND``) and
        :class:`RequestInvalid` naming ``csv`` for a file that cannot be used.
        """
        s = self.settings
        self._principal = await self._m.principal(s.workspace_id, livemode=s.livemode)
        text = s.body
        if s.template is not None:
            text = (await self._m.templates.get(s.workspace_id, s.template)).body
        assert text is not None
        source = CsvSource(
            self._path,
            to_column=s.to_column,
            delimiter=self._delimiter,
            required=placeholders(text),
            encoding=self._encoding,
        )
        # A thread: reading a large file must not stall the event loop (the store's pool).
        self.total = await asyncio.to_thread(source.scan)
        self._source = source
        return self.total

    async def run(self, on_chunk: OnChunk) -> CampaignSummary:
        """Send every row not sent yet; ``on_chunk`` gets each chunk's results in row order."""
        if self._source is None or self._principal is None:
            await self.prepare()
        assert self._source is not None and self._principal is not None
        summary = CampaignSummary(self.settings.name, self.settings.mode, rows=self.total)
        manifest = await self._open_manifest(self._principal)
        rows = iter(self._source.rows())
        index = 0
        while chunk := list(islice(rows, self.settings.chunk)):
            try:
                results = await self._chunk(self._principal, index, chunk)
            except MessagingError as exc:
                summary.stopped, summary.stopped_at_row = exc, chunk[0].number
                break
            summary.add(results)
            await on_chunk(results)
            index += 1
            manifest.update(chunks=max(manifest["chunks"], index), updated_at=self._now())
            manifest["rows_done"] = max(manifest["rows_done"], summary.done)
            if summary.done == self.total:
                manifest["finished_at"] = manifest.get("finished_at") or self._now()
            await self._write_manifest(self._principal, manifest)
        return summary

    # -- one chunk

    async def _chunk(self, principal: Principal, index: int, rows: list[CsvRow]) -> list[RowResult]:
        items: list[dict[str, Any]] = []
        numbers: list[int] = []
        results: list[RowResult] = []
        for row in rows:
            to = row.cells.get(self.settings.to_column, "")
            try:
                items.append(self._item(row, to))
                numbers.append(row.number)
            except MessagingError as exc:
                results.append(RowResult(row.number, to, None, "failed", exc.code, exc.message))
        if items:
            payload = self._payload(items)
            fingerprint = request_fingerprint("POST", "campaign", {"rows": numbers, **payload})
            answers, replayed = await self._send_once(principal, index, fingerprint, payload)
            for number, item, answer in zip(numbers, items, answers, strict=True):
                error = answer.get("error") or {}
                results.append(
                    RowResult(
                        number,
                        str(answer.get("to", item["to"])),
                        answer.get("job_id"),
                        str(answer["status"]),
                        error.get("code"),
                        error.get("message"),
                        replayed,
                    )
                )
        return sorted(results, key=lambda result: result.row)

    def _item(self, row: CsvRow, to: str) -> dict[str, Any]:
        """The bulk item of a row, checked as the bulk request will check it, so that one bad
        row fails alone instead of failing its whole chunk (a 400)."""
        if row.extra:
            raise RequestInvalid(f"the row has {row.extra} more cell(s) than the header")
        if not to:
            raise InvalidRecipient(f"The {self.settings.to_column!r} cell is empty.")
        item: dict[str, Any] = {"to": to}
        if self.settings.template is not None:
            item["variables"] = row.cells
        else:
            assert self.settings.body is not None
            item["body"] = render(self.settings.body, row.cells)
        parse_model(BulkItem, item)
        return item

    def _payload(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        s = self.settings
        payload: dict[str, Any] = {"items": items}
        optional = {
            "template": s.template,
            "provider": s.provider,
            "fallback": list(s.fallback) or None,
            "sender": s.sender,
            "send_at": s.send_at,
        }
        payload.update({k: v for k, v in optional.items() if v is not None})
        return payload

    async def _send_once(
        self, principal: Principal, index: int, fingerprint: str, payload: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], bool]:
        """The chunk's per-item answers and whether they are an earlier run's (replayed)."""
        key = f"{self._prefix}:{index}"
        claim = await self._claim(
            principal,
            key,
            fingerprint,
            what=f"chunk {index + 1}",
            conflict=(
                f"chunk {index + 1} was sent by an earlier run with other rows; it is not "
                "sent again. Send changed rows as a new campaign (--campaign NAME)."
            ),
        )
        if isinstance(claim, StoredAnswer):
            return json.loads(claim.body)["results"], True
        if isinstance(claim, BoundJobs):
            try:
                current = await self._m.messages.current_answer(principal, claim.job_ids, bulk=True)
            except IdempotencyInProgress:
                return [_pending(job_id, item) for job_id, item in _pairs(claim, payload)], True
            return current.to_dict()["results"], True
        while True:
            try:
                await self._take_tokens(len(payload["items"]))
                answer = await self._m.send_bulk(principal, payload, idempotency=claim)
            except RateLimited as exc:
                await self._sleep(max(exc.retry_after, _POLL))
                continue
            except BaseException:
                # Nothing was stored (a bulk's errors come before its write-ahead, D22):
                # the key goes, so a re-run sends this chunk afresh.
                await self._keys.release(principal, key)
                raise
            body = answer.to_dict()
            await self._keys.finish(principal, key, 201, _json_bytes(body))
            return body["results"], False

    async def _claim(
        self, principal: Principal, key: str, fingerprint: str, *, what: str, conflict: str
    ) -> IdempotencyClaim | StoredAnswer | BoundJobs:
        deadline = self._m.clock.now() + 2 * IN_FLIGHT_TIMEOUT
        while True:
            try:
                return await self._keys.begin(principal, key, fingerprint)
            except IdempotencyConflict:
                raise IdempotencyConflict(f"Campaign {self.settings.name!r}: {conflict}") from None
            except IdempotencyInProgress:
                # Another run holds it, or a run that died before its write-ahead did: that
                # key is free again after IN_FLIGHT_TIMEOUT.
                if self._m.clock.now() >= deadline:
                    raise IdempotencyInProgress(
                        f"Campaign {self.settings.name!r}: another run is sending {what}."
                    ) from None
                await self._sleep(_POLL)

    async def _take_tokens(self, cost: int) -> None:
        rate = self.settings.rate
        if rate is None or self._limiter is None:
            return
        policy = RateLimitPolicy(rate=rate, burst=max(self.settings.chunk, math.ceil(rate)))
        bucket = f"campaign:{self.settings.workspace_id}"
        while not (decision := await self._limiter.hit(bucket, policy, cost)).allowed:
            await self._sleep(decision.retry_after)

    # -- the campaign's own record

    async def _open_manifest(self, principal: Principal) -> dict[str, Any]:
        s = self.settings
        claim = await self._claim(
            principal,
            self._prefix,
            s.fingerprint(),
            what="it",
            conflict=(
                "it was started with other settings (text, template, columns, chunk size, "
                "routing); run it with the same ones, or give this one another --campaign name."
            ),
        )
        if isinstance(claim, StoredAnswer):
            manifest: dict[str, Any] = json.loads(claim.body)
            manifest.update(file=self._path.name, rows=self.total, finished_at=None)
            return manifest
        manifest = {
            "campaign": s.name,
            "mode": s.mode,
            "file": self._path.name,
            "settings": {k: v for k, v in asdict(s).items() if k not in ("name", "rate")},
            "rows": self.total,
            "rows_done": 0,
            "chunks": 0,
            "started_at": self._now(),
            "updated_at": self._now(),
            "finished_at": None,
        }
        await self._write_manifest(principal, manifest)
        return manifest

    async def _write_manifest(self, principal: Principal, manifest: dict[str, Any]) -> None:
        await self._keys.finish(principal, self._prefix, 200, _json_bytes(manifest))

    def _now(self) -> str:
        return self._m.clock.now().isoformat().replace("+00:00", "Z")


def campaign_key(name: str, livemode: bool) -> str:
    """The campaign's idempotency key (its chunks: this, ``:`` and the chunk's index).
    A digest of the name, so that any name makes a valid key (D22: printable ASCII)."""
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]
    return f"campaign:{'live' if livemode else 'test'}:{digest}"


def _pairs(claim: BoundJobs, payload: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    # Jobs are bound in the order of the bulk's items (one record per item, failed or not).
    return zip(claim.job_ids, payload["items"], strict=True)


def _pending(job_id: str, item: dict[str, Any]) -> dict[str, Any]:
    error = {"code": IdempotencyInProgress.code, "message": _PENDING_MESSAGE}
    return {"to": item["to"], "job_id": job_id, "status": "pending", "error": error}


def _json_bytes(data: object) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# ------------------------------------------------------------------------------ status


@dataclass(frozen=True, slots=True)
class CampaignStatus:
    """A campaign's progress as the store has it: its record, and its messages by status
    now (``delivered`` once the worker has applied the reports)."""

    manifest: dict[str, Any]
    messages: dict[str, int]
    errors: dict[str, int]


async def campaign_status(
    messenger: Messenger, workspace_id: str, name: str, *, livemode: bool
) -> CampaignStatus:
    """Raises :class:`ResourceNotFound` for a campaign the store has no record of (never
    run in this workspace and mode, or more than 24 hours ago)."""
    principal = await messenger.principal(workspace_id, livemode=livemode)
    prefix = campaign_key(name, livemode)
    record = await _peek(messenger, principal, prefix)
    if record is None or record.response_body is None:
        mode = "live" if livemode else "test"
        raise ResourceNotFound(
            f"No campaign {name!r} in workspace {workspace_id} ({mode} mode) in the last 24 hours."
        )
    manifest: dict[str, Any] = json.loads(record.response_body)
    jobs: set[str] = set()
    for index in range(int(manifest["chunks"])):
        chunk = await _peek(messenger, principal, f"{prefix}:{index}")
        if chunk is not None:
            jobs.update(chunk.job_ids)
    since = datetime.fromisoformat(manifest["started_at"])
    until = datetime.fromisoformat(manifest["updated_at"]) + timedelta(seconds=1)
    messages, errors = await _count(messenger, workspace_id, livemode, jobs, since, until)
    return CampaignStatus(manifest, messages, errors)


async def _peek(
    messenger: Messenger, principal: Principal, idem_key: str
) -> IdempotencyRecord | None:
    """The stored record of a key, without keeping one. The store offers no plain read of a
    key: a probe is inserted unless the key exists, and dropped again if it was."""
    store, workspace_id, key_id = messenger.store, principal.workspace_id, _key_id(principal)
    probe = IdempotencyRecord(
        workspace_id=workspace_id,
        key_id=key_id,
        idem_key=idem_key,
        request_hash="campaign status",
        created_at=messenger.clock.now(),
        owner=new_id("idk"),
    )
    existing = await store.begin_idempotent(probe)
    if existing is None:
        await store.drop_idempotent(workspace_id, key_id, idem_key)
    return existing


async def _count(
    messenger: Messenger,
    workspace_id: str,
    livemode: bool,
    jobs: set[str],
    since: datetime,
    until: datetime,
) -> tuple[dict[str, int], dict[str, int]]:
    """The campaign's messages by status and by error code, read a page at a time from the
    newest, until every job has been seen."""
    by_status: dict[str, int] = {}
    errors: dict[str, int] = {}
    seen = 0
    cursor = None
    while seen < len(jobs):
        query = MessageQuery(
            workspace_id,
            livemode,
            created_after=since,
            created_before=until,
            older_than=cursor,
            limit=1000,
        )
        page = await messenger.store.list_messages(query)
        for record in page:
            if record.job_id not in jobs:
                continue
            seen += 1
            by_status[record.status] = by_status.get(record.status, 0) + 1
            if record.error is not None:
                errors[record.error.code] = errors.get(record.error.code, 0) + 1
        if len(page) < query.limit:
            break
        cursor = (page[-1].created_at, page[-1].job_id)
    return by_status, errors
