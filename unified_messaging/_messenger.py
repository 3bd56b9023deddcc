"""``Messenger``: the async façade every edge calls (REST, MCP, CLI, pytest plugin).

It owns the order of the rules (D15: 400 → 404 → 422 → quota), write-ahead acceptance
(a record is stored before any provider is called), routing with fallback, one quota unit
per logical message, and the choice between a live adapter and the simulator (D2).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from . import _quota as quota
from ._access.authorize import Access
from ._access.flood_guard import items_over_limit
from ._access.keys import hash_api_key, parse_api_key
from ._access.principal import Principal
from ._access.ratelimit import DEFAULT_POLICY, MemoryRateLimiter, RateLimiter, RateLimitPolicy
from ._clock import Clock, SystemClock
from ._domain import (
    Connection,
    ErrorInfo,
    MessageRecord,
    Template,
)
from ._errors import (
    BodyTooLong,
    ChatUnreachable,
    MessageNotFound,
    MessagingError,
    ProviderNotConnected,
    ProviderUnavailable,
    QuotaExceeded,
    RecipientRateLimited,
    RequestInvalid,
    SenderNotApproved,
    StorageUnavailable,
    Unauthorized,
)
from ._escalation import chain_recipient, channel_chain, escalate_seconds
from ._ids import new_id
from ._lifecycle.holding import WriteAheadHold
from ._lifecycle.rules import after_routing, begin
from ._lifecycle.runtime import DEFAULT_SUBMIT_TIMEOUT, Lifecycle
from ._lifecycle.worker import Worker
from ._message_class import iys_mode_for
from ._message_ops import Messages, read_message
from ._models import (
    BulkRequest,
    BulkResponse,
    SendRequest,
    SendResponse,
    StatusRecord,
    parse_model,
)
from ._observability.metrics import NO_METRICS, Metrics, counting_refusals, record_sends
from ._observability.tracing import send_span
from ._outcome_retry import retry_while_unavailable
from ._recipients import normalize_recipient
from ._reports import Reports
from ._responses import bulk_response, send_response, status_record
from ._routing.adapters import AdapterPool
from ._routing.breaker import BreakerStore, SharedBreakers
from ._routing.dispatch import Hop, Job, dispatch, hop_for, job_for
from ._routing.gate import Gates
from ._routing.pacing import DEFAULT_PACE_WAIT, Pacer, StorePacer
from ._routing.send_pacing import SendPacing, Sleep
from ._schedule import check_send_at, hand_over_at
from ._search import MessagePage, SearchInput, search_messages
from ._text import storable
from ._types import Category, Channel, IysMode, ProviderCode, RecipientType
from .accounts._credit import CreditWatch
from .accounts._service import DEFAULT_REFRESH_INTERVAL, WORK_REFRESH, Accounts
from .allowlist._service import Allowlist
from .audit._service import AuditLog
from .connections._service import Connections
from .consents.service import Consents
from .content.check import content_refusal
from .content.models import SendPreview
from .content.preview import send_preview
from .content.service import Content
from .iys.service import Iys, IysSettings
from .keys._service import ApiKeys
from .providers.base import (
    AdapterFactory,
    ProviderTemplate,
)
from .providers.simulator import SimulatedSubmission, SimulatorSettings
from .stats._service import Stats
from .store.base import IdempotencyClaim, ProviderRef, Store, WorkItem
from .store.memory import MemoryStore
from .suppressions._rules import StopWords, suppressed_refusal
from .suppressions._service import OptOuts, SimulationHelpers, Suppressions
from .templates._render import placeholders, render, render_value
from .templates._service import Templates
from .users._service import Users
from .vault._core import Vault, default_vault
from .vault._service import VaultAdmin
from .verifications._events import WORK_EXPIRY
from .verifications._service import Verifications
from .webhooks._outbox import WORK_KIND as WORK_WEBHOOK
from .webhooks._outbox import WebhookOutbox
from .webhooks._schedule import DEFAULT_SCHEDULE, DISABLE_AFTER
from .webhooks._sender import TargetPolicy, WebhookSender
from .webhooks._service import Webhooks
from .workspaces._service import Workspaces

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger("unified_messaging.messenger")

__all__ = ["Messenger", "Principal"]

SendInput = SendRequest | Mapping[str, object]
BulkInput = BulkRequest | Mapping[str, object]


@dataclass(frozen=True, slots=True)
class _SendPlan:
    """What a send request resolved to, before any recipient is looked at."""

    hops: tuple[Hop, ...]
    template: Template | None
    fallback_requested: bool
    #: The request's ``sender`` (``None``: each hop's default), kept for re-dispatch (D3).
    requested_sender: str | None = None
    #: The messages' İYS class (D33): the request's, else the primary connection's.
    iys_mode: IysMode = "informational"
    #: D36: seconds a hop waits for delivered before the next channel (``None``: none).
    escalate_after: float | None = None

    @property
    def channels(self) -> list[Channel]:
        """The chain's channels, each once, in order."""
        return list(dict.fromkeys(hop.connection.channel for hop in self.hops))

    @property
    def primary(self) -> Connection:
        return self.hops[0].connection

    @property
    def connections(self) -> dict[ProviderCode, Connection]:
        return {hop.connection.provider: hop.connection for hop in self.hops}


class Messenger:
    """The async façade. Use it as ``async with Messenger(...) as messenger:``.

    ``store`` defaults to an in-memory store, ``clock`` to the system clock, and ``vault``
    to ``UM_MASTER_KEYS``. Without it an in-memory store gets a key that lives as long as
    the process; any other store is refused with :class:`MasterKeyError` (what it seals
    would be unreadable after a restart), so pass ``vault=`` or set ``UM_MASTER_KEYS``
    (:meth:`Vault.load_or_create_key_file` for development). ``live_adapters`` maps a
    provider code to the factory of its live adapter (default: the seven shipped adapters,
    ``providers.registry``); test keys always use the simulator.
    ``on_simulated`` is called with every simulated submission (the pytest ``outbox``).
    ``webhook_client``: the ``httpx.AsyncClient`` webhooks are posted with (default: the
    sender's own guarded client); give it a ``GuardedTransport``, or in tests an
    ``httpx.MockTransport`` (Django's ``settle()`` takes its events so); it stays the caller's
    to close.
    ``rate_limiter`` holds the per-key token buckets (default: in this process, on ``clock``;
    a limiter passed in stays the caller's to close) and ``default_rate_policy`` is the rate
    of a key without its own (D16: 50 requests/s, burst 100).
    ``submit_timeout``: how long after a send's write-ahead its rows are settled ``unknown``
    (``SUBMIT_INTERRUPTED``) by the worker if the send's outcome was never stored (its
    process died mid-call); keep it above the longest fallback chain of provider calls.
    ``poll_interval``: a floor under the poll round interval each polled provider declares
    (NetGSM and Mutlucell: 1 minute; a Mutlucell pack is asked at most every 15 minutes
    whatever it is): polling can be slowed down, never sped past a provider's rule.
    ``breaker_store``: where the connections' circuit breakers (D26) are shared (default: the
    store; :class:`~unified_messaging._routing.redis_breaker.RedisBreakerStore` for Redis). A
    half-open probe whose process died is given up after ``submit_timeout``.
    ``metrics``: where counters and timings go (D30), e.g. :class:`PrometheusMetrics`;
    default: none are kept.
    ``pacer``: where the connections' send slots (D27) are shared (default: the store;
    :class:`~unified_messaging.RedisPacer` for Redis). A live send waits up to ``pace_wait``
    for its slot, then is stored ``queued`` for the worker; ``pace_sleep`` is how it waits
    (default ``asyncio.sleep``; tests pass one that moves their ManualClock).
    ``stop_words``: words that opt a recipient out when an inbound reply is exactly one of
    them, besides STOP, DUR, İPTAL and RET (case and diacritics ignored).
    ``outcome_retry``: how long a send keeps trying to store what its providers said while
    the store is unavailable (default: half the ``submit_timeout``); past it the send's
    submit check settles the rows ``unknown``.
    ``iys``: how the İYS work runs (D33: its HTTP client, pull interval, status-lookup cache;
    :class:`~unified_messaging.iys.IysSettings`).
    ``account_refresh``: how often the worker reads each provider account's balance and
    senders (``messenger.accounts``; default 15 minutes).
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        clock: Clock | None = None,
        vault: Vault | None = None,
        live_adapters: Mapping[ProviderCode, AdapterFactory] | None = None,
        simulator_settings: SimulatorSettings | None = None,
        on_simulated: Callable[[SimulatedSubmission], None] | None = None,
        max_concurrency: int = 32,
        rate_limiter: RateLimiter | None = None,
        default_rate_policy: RateLimitPolicy = DEFAULT_POLICY,
        webhook_policy: TargetPolicy | None = None,
        webhook_schedule: Sequence[timedelta] = DEFAULT_SCHEDULE,
        webhook_disable_after: timedelta = DISABLE_AFTER,
        webhook_client: httpx.AsyncClient | None = None,
        poll_interval: timedelta | None = None,
        submit_timeout: timedelta = DEFAULT_SUBMIT_TIMEOUT,
        breaker_store: BreakerStore | None = None,
        metrics: Metrics | None = None,
        pacer: Pacer | None = None,
        pace_wait: timedelta = DEFAULT_PACE_WAIT,
        pace_sleep: Sleep | None = None,
        stop_words: Iterable[str] = (),
        outcome_retry: timedelta | None = None,
        iys: IysSettings | None = None,
        account_refresh: timedelta = DEFAULT_REFRESH_INTERVAL,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._store: Store = store if store is not None else MemoryStore()
        self._outcome_retry = outcome_retry if outcome_retry is not None else submit_timeout / 2
        self._clock: Clock = clock or SystemClock()
        self._metrics: Metrics = metrics if metrics is not None else NO_METRICS
        self._vault: Vault = (
            vault
            if vault is not None
            else default_vault(
                durable=not isinstance(self._store, MemoryStore),
                store_name=type(self._store).__name__,
            )
        )
        self._adapters = AdapterPool(
            vault=self._vault,
            clock=self._clock,
            live_adapters=live_adapters,
            simulator_settings=simulator_settings or SimulatorSettings(),
            on_simulated=on_simulated,
            metrics=self._metrics,
        )
        self._credential_schemas = self._adapters.credential_schemas
        self._concurrency = max_concurrency
        # ``is None``, not ``or``: an empty MemoryRateLimiter has a length of 0, so it is falsy.
        self._rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else MemoryRateLimiter(self._clock)
        )
        self._default_rate_policy = default_rate_policy
        self._webhook_policy = webhook_policy or TargetPolicy()
        self._webhook_sender = WebhookSender(
            webhook_client, policy=self._webhook_policy, clock=self._clock
        )
        self._webhooks = WebhookOutbox(
            self._store,
            self._vault,
            self._clock,
            sender=self._webhook_sender,
            schedule=webhook_schedule,
            disable_after=webhook_disable_after,
            metrics=self._metrics,
        )
        self._breakers = SharedBreakers(
            breaker_store if breaker_store is not None else self._store,
            self._clock,
            probe_lease=submit_timeout,
        )
        #: Routing's view of the breakers: theirs, and a re-read of an account whose
        #: provider refused a send for credit (``messenger.accounts``).
        self._routing_breakers = CreditWatch(self._breakers, self._store, self._clock)
        self._pacing = SendPacing(
            pacer if pacer is not None else StorePacer(self._store),
            self._clock,
            max_wait=pace_wait,
            sleep=pace_sleep,
        )
        #: İYS (D33): ``messenger.iys.connect/get/disconnect/sync``, and its worker items.
        self.iys = Iys(self._store, self._clock, self._vault, iys, due_work=self._due_work)
        #: D35: the one gate every hand-over passes, at submit and in the worker alike.
        self._gates = Gates(self._store, self._clock, consent=self.iys.check)
        self._opt_outs = OptOuts(self._store, self._clock, StopWords(stop_words))
        self._lifecycle = Lifecycle(
            self._store,
            self._clock,
            self._adapters,
            gates=self._gates,
            events=self._webhooks,
            poll_interval=poll_interval,
            submit_timeout=submit_timeout,
            breakers=self._routing_breakers,
            metrics=self._metrics,
            pacing=self._pacing,
        )
        store_, clock_ = self._store, self._clock
        # The resource namespaces: every operation beside SPEC's own, grouped by what it is
        # about (STYLE, "The shape we grow into"). Each is one small class in its own module.
        #: Workspaces and their settings: ``messenger.workspaces.create("Acme")``.
        self.workspaces = Workspaces(store_, clock_)
        #: A workspace's API keys (D1).
        self.keys = ApiKeys(store_, clock_, self.workspaces)
        #: Provider connections (D3, D21, D26, D27): add, configure, test, scorecard, breakers.
        self.connections = Connections(
            store_, clock_, self._vault, self.workspaces, self._adapters, self._breakers
        )
        #: Each connection's provider account: balance, approved senders, low-balance alert.
        self.accounts = Accounts(store_, clock_, self._adapters, interval=account_refresh)
        #: Message templates (D9) and the editor's preview.
        self.templates = Templates(store_, clock_, self.workspaces)
        #: The IP allowlist (D18).
        self.allowlist = Allowlist(store_, clock_, self.workspaces)
        #: Webhook endpoints and their deliveries (D19).
        self.webhooks = Webhooks(store_, clock_, self._vault, self._webhook_policy, self._webhooks)
        #: The suppression list (opt-outs).
        self.suppressions = Suppressions(store_, clock_)
        #: Dashboard users (D31).
        self.users = Users(store_, clock_)
        #: The audit log (D32), read-only.
        self.audit = AuditLog(store_)
        #: Re-sealing under the vault's active key (D21).
        self.vault = VaultAdmin(store_, clock_, self._vault)
        #: İYS consents (D33).
        self.consents = Consents(store_, clock_)
        #: Commercial content hints (D33): ``messenger.content.lint/rules/update_rules``.
        self.content = Content(store_, clock_)
        #: One-time codes (D34, ``/v1/verifications``).
        self.verifications = Verifications(
            store_, clock_, self._vault, self._send_code, self.templates,
            limiter=self._rate_limiter, metrics=self._metrics,
        )  # fmt: skip
        #: A request's access checks (D15): key, allowlist, rate limit.
        self.access = Access(
            store_, self._rate_limiter, default_rate_policy, self._metrics, self.authenticate
        )
        #: What providers push to the report URL (D20).
        self.reports = Reports(store_, self._adapters, self._lifecycle, self._opt_outs)
        #: The edges' reads about messages beside SPEC's (counts, the status JSON bytes).
        self.messages = Messages(store_, self.workspaces)
        #: Delivery figures over 24 hours, 7 or 30 days (``GET /v1/stats``).
        self.stats = Stats(store_, clock_, self.workspaces)
        #: Test mode only: simulated inbound replies (``/v1/test_helpers``).
        self.test_helpers = SimulationHelpers(self._opt_outs)

    def __repr__(self) -> str:
        return f"Messenger(store={self._store!r}, clock={self._clock!r})"

    @property
    def store(self) -> Store:
        return self._store

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def metrics(self) -> Metrics:
        return self._metrics

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> None:
        await self._store.open()

    async def aclose(self) -> None:
        await self.iys.aclose()
        await self._webhook_sender.aclose()
        await self._adapters.aclose()
        await self._store.close()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ who is calling

    async def authenticate(self, api_key: str | None) -> Principal:
        """Resolve a Bearer key to its workspace and mode, or raise :class:`Unauthorized`."""
        livemode = parse_api_key(api_key) if api_key else None
        if livemode is None or api_key is None:
            raise Unauthorized
        record = await self._store.find_api_key(hash_api_key(api_key))
        if record is None or record.livemode != livemode or not record.is_usable(self._clock.now()):
            raise Unauthorized
        workspace = await self._store.get_workspace(record.workspace_id)
        if workspace is None:
            raise Unauthorized
        return Principal(workspace, record.livemode, record)

    async def principal(self, workspace_id: str, *, livemode: bool) -> Principal:
        """A principal for trusted in-process callers that hold no API key."""
        return Principal(await self.workspaces.get(workspace_id), livemode)

    # ------------------------------------------------------------------ sending

    async def _current(self, auth: Principal) -> Principal:
        """``auth`` with its workspace's settings as they are now: a library caller may hold
        a Principal across a settings change (``consents.set_policy``, quiet hours…), and a
        send obeys the settings of its moment. The store's cache makes this a dict lookup
        (REST has just read the same record), and a write in this process clears it."""
        workspace = await self._store.get_workspace(auth.workspace_id)
        if workspace is None:
            raise Unauthorized  # the workspace is gone
        if workspace is auth.workspace or workspace == auth.workspace:
            return auth
        return replace(auth, workspace=workspace)

    @send_span
    async def send(
        self,
        auth: Principal,
        request: SendInput,
        *,
        idempotency: IdempotencyClaim | None = None,
    ) -> SendResponse:
        """Send one message (``POST /v1/messages``). Raises a :class:`MessagingError`.

        ``idempotency``: the ``Idempotency-Key`` this request holds (from
        :class:`IdempotencyKeys`); it is bound to the new job in the write-ahead transaction.
        """
        return await self._send(auth, request, idempotency)

    @send_span
    async def _send_code(
        self,
        auth: Principal,
        request: SendInput,
        *,
        masked_text: str,
        code_template: ProviderTemplate | None = None,
    ) -> SendResponse:
        """Send a one-time code's message (D34, ``verifications``' sender): :meth:`send`, with
        ``masked_text`` (the text with its code masked) kept for live mode to show, and
        ``code_template`` (D36: the WhatsApp authentication template the ``bizchat`` hop
        sends; the other channels send the text)."""
        return await self._send(auth, request, None, masked_text, code_template)

    async def preview_send(self, auth: Principal, request: SendInput) -> SendPreview:
        """What :meth:`send` would do with ``request``, without doing it
        (``POST /v1/messages?dry_run=true``, D33): the same checks in the same order (a 400,
        404 or 422 the send would raise, the workspace's content refusal included), then the
        message as it would be accepted: recipient, connection, class, the text as rendered,
        its SMS parts with the operator's code, and the content hints of a commercial SMS.
        Nothing is stored or sent; no quota unit is taken and the per-recipient limit, which
        count stored messages, are not asked."""
        auth = await self._current(auth)
        req = parse_model(SendRequest, request)
        plan = await self._plan(
            auth, req.provider, req.fallback, req.sender, req.template,
            _class(req.category, req.recipient_type), req.channel_fallback, req.escalate_after,
        )  # fmt: skip
        connection = plan.primary
        to = chain_recipient(plan.channels, req.to)
        await self._opt_outs.refuse(auth, connection.channel, to)
        text, _ = self._text(plan.template, req.body, req.variables)
        _refuse_content(auth, plan, text)
        self._when(auth, plan, req.send_at, ignore_quiet_hours=req.ignore_quiet_hours)
        return send_preview(
            rules=auth.workspace.content_rules, connection=connection,
            fallback=[hop.connection.provider for hop in plan.hops[1:]],
            iys_mode=plan.iys_mode, to=to, text=text, template=req.template,
        )  # fmt: skip

    async def _send(
        self,
        auth: Principal,
        request: SendInput,
        idempotency: IdempotencyClaim | None,
        masked_text: str | None = None,
        code_template: ProviderTemplate | None = None,
    ) -> SendResponse:
        auth = await self._current(auth)
        req = parse_model(SendRequest, request)
        plan = await self._plan(
            auth, req.provider, req.fallback, req.sender, req.template,
            _class(req.category, req.recipient_type), req.channel_fallback, req.escalate_after,
        )  # fmt: skip
        channel = plan.primary.channel
        to = chain_recipient(plan.channels, req.to)
        await self._opt_outs.refuse(auth, channel, to)
        text, provider_template = self._text(plan.template, req.body, req.variables)
        if code_template is not None:
            provider_template = code_template
        _refuse_content(auth, plan, text)
        when = self._when(auth, plan, req.send_at, ignore_quiet_hours=req.ignore_quiet_hours)
        record, job = self._new_record(
            auth, plan, new_id("msg"), to, text, provider_template, req.ignore_quiet_hours
        )
        if masked_text is not None:
            record = replace(record, masked_text=masked_text)
            job.record = record  # a code (D34): an adapter's code route reads it at hand-over
        if when is not None:
            record = _scheduled(record, plan, when)
        else:
            job.suppression_checked = channel  # the gate's first look would read it again
        with counting_refusals(self._metrics):
            check = await self._accept(auth, [record], idempotency)
        if when is not None:
            return send_response(record)  # the worker hands it over at ``when``
        queue = auth.workspace.retry_unavailable
        hold = WriteAheadHold(self._store, [record])
        await dispatch(
            [job], plan.hops, clock=self._clock, gate=self._gates.at(auth.workspace),
            concurrency=self._concurrency,
            breakers=self._breakers_for(auth), pacing=self._pacing_for(auth), hold=hold,
        )  # fmt: skip
        record = self._outcome_record(hold.latest(record), plan, job, queue=queue)
        await self._opted_out(auth, channel, [job])
        unused = quota.units_to_release([record])
        await self._store_outcome(auth, [record], plan, check, unused, _paced([job]))
        record_sends(self._metrics, [record], [job])
        self._raise_for_single(record, job)
        return send_response(record)

    @send_span
    async def send_bulk(
        self,
        auth: Principal,
        request: BulkInput,
        *,
        idempotency: IdempotencyClaim | None = None,
    ) -> BulkResponse:
        """Send to 1–200 recipients (``POST /v1/messages/bulk``, D8).

        Request-level problems raise; an item's own problem (its recipient, its variables)
        fails that item only, which still gets a ``job_id``. ``idempotency`` as for
        :meth:`send`.
        """
        auth = await self._current(auth)
        req = parse_model(BulkRequest, request)
        plan = await self._plan(
            auth, req.provider, req.fallback, req.sender, req.template,
            _class(req.category, req.recipient_type),
        )  # fmt: skip
        if req.send_at is not None:
            check_send_at(req.send_at, self._clock.now())  # the whole request's time: a 422
        channel = plan.primary.channel
        ignore_quiet = req.ignore_quiet_hours
        records: list[MessageRecord] = []
        jobs: list[tuple[int, Job]] = []
        for index, item in enumerate(req.items):
            job_id = new_id("msg")
            to = item.to  # shown as typed only when it is not a valid recipient
            try:
                to = normalize_recipient(channel, item.to)
                text, provider_template = self._text(plan.template, item.body, item.variables)
                _refuse_content(auth, plan, text)
                send_at = item.send_at or req.send_at
                when = self._when(auth, plan, send_at, ignore_quiet_hours=ignore_quiet)
            except MessagingError as exc:
                records.append(self._rejected_item(auth, plan, job_id, to, exc))
                continue
            record, job = self._new_record(
                auth, plan, job_id, to, text, provider_template, ignore_quiet
            )
            if when is not None:
                record = _scheduled(record, plan, when)
            jobs.append((index, job))
            records.append(record)
        jobs = await self._refuse_suppressed_items(auth, plan, records, jobs)
        with counting_refusals(self._metrics):
            check, jobs = await self._accept_bulk(auth, plan, records, jobs, idempotency)
        # The items that wait are stored with their hand-over; the rest go now.
        jobs = [(index, job) for index, job in jobs if records[index].phase != "scheduled"]
        if not jobs:
            return bulk_response(records, plan.primary.provider)
        queue = auth.workspace.retry_unavailable
        hold = WriteAheadHold(self._store, [records[i] for i, _ in jobs])
        await dispatch(
            [job for _, job in jobs], plan.hops, clock=self._clock,
            gate=self._gates.at(auth.workspace), concurrency=self._concurrency,
            breakers=self._breakers_for(auth), pacing=self._pacing_for(auth), hold=hold,
        )  # fmt: skip
        finished = [
            (i, self._outcome_record(hold.latest(records[i]), plan, job, queue=queue))
            for i, job in jobs
        ]
        for index, record in finished:
            records[index] = record
        await self._opted_out(auth, channel, [job for _, job in jobs])
        unused = quota.units_to_release([r for _, r in finished])
        paced = _paced([job for _, job in jobs])
        await self._store_outcome(auth, [r for _, r in finished], plan, check, unused, paced)
        record_sends(self._metrics, records, [job for _, job in jobs])
        return bulk_response(records, plan.primary.provider)

    async def get_message(self, auth: Principal, job_id: str) -> StatusRecord:
        """The status record of one message (``GET /v1/messages/{job_id}``, D11)."""
        return status_record(
            await read_message(self._store, auth, job_id), mask_live_text=_masks(auth)
        )

    async def cancel_message(self, auth: Principal, job_id: str) -> StatusRecord:
        """Cancel a message no provider has yet (``POST /v1/messages/{job_id}/cancel``):
        one waiting for its ``send_at``, quiet hours, a send slot or a retry. It
        ends ``failed`` with ``CANCELED`` (a ``message.failed`` webhook); canceling it again
        answers the same. :class:`MessageNotCancelable` (409) once a provider has it or is
        being handed it; :class:`MessageNotFound` (404) as for :meth:`get_message`."""
        if not storable(job_id):
            raise MessageNotFound
        canceled = await self._lifecycle.cancel(auth.workspace_id, auth.livemode, job_id)
        return status_record(canceled, mask_live_text=_masks(auth))

    # -- listing messages and the provider scorecard (D29)

    async def list_messages(
        self, auth: Principal, search: SearchInput | None = None
    ) -> MessagePage:
        """A page of the caller's messages, newest first (``GET /v1/messages``, D29).

        ``search`` filters and pages (``to``, ``status``, ``provider``, ``created_after``,
        ``created_before``, ``limit``, ``starting_after``); a bad value is
        :class:`RequestInvalid`, a ``starting_after`` this key cannot read
        :class:`MessageNotFound`. Only the caller's workspace and mode are listed (D2).
        """
        return await search_messages(
            self._store, auth.workspace_id, auth.livemode, search, mask_live_text=_masks(auth)
        )

    def _pacing_for(self, auth: Principal) -> SendPacing | None:
        # D27: test keys talk to the simulator, which has no rate to keep to.
        return self._pacing if auth.livemode else None

    def _breakers_for(self, auth: Principal) -> CreditWatch | None:
        # Test keys reach the simulator: its scripted failures must not open a live circuit.
        return self._routing_breakers if auth.livemode else None

    # ------------------------------------------------------------------ the rules

    async def _plan(
        self,
        auth: Principal,
        provider: ProviderCode | None,
        fallback: Sequence[ProviderCode] | None,
        sender: str | None,
        template_key: str | None,
        iys_mode: IysMode | None = None,
        channel_fallback: Sequence[str] | None = None,
        escalate_after: float | None = None,
    ) -> _SendPlan:
        # D15: every 400 before any 404, every 404 before any 422.
        connections = {c.provider: c for c in await self._store.list_connections(auth.workspace_id)}
        primary = self._primary(connections, provider)
        fallback = list(fallback or ())
        if primary.provider in fallback:
            raise RequestInvalid.for_field("fallback", "must not contain the primary provider")
        chain = channel_chain(connections, primary, channel_fallback, fallback)
        template = None
        if template_key is not None:
            template = await self.templates.get(auth.workspace_id, template_key)
        escalation = escalate_seconds(escalate_after, channel_fallback)
        if sender is not None:
            await self._check_listed_sender(auth.workspace_id, chain, sender)
        hops = tuple(hop_for(c, self._adapters, sender, livemode=auth.livemode) for c in chain)
        return _SendPlan(
            hops, template, fallback_requested=bool(fallback) or escalation is not None,
            requested_sender=sender, iys_mode=iys_mode or primary.iys_mode,
            escalate_after=escalation,
        )  # fmt: skip

    async def _check_listed_sender(
        self, workspace_id: str, chain: Sequence[Connection], sender: str
    ) -> None:
        """A sender the provider's own list leaves out is refused before any call (SPEC
        422, ``SENDER_NOT_APPROVED``), once that list is known; until a reading has listed
        the senders, the provider decides. Checked at accept time: a 422 answers the
        request, which the gate (D35), judging later hand-overs, could not."""
        listed = await self.accounts.senders_of(workspace_id)
        for connection in chain:
            known = listed.get(connection.id)
            if connection.channel == "sms" and known is not None and sender not in known:
                raise SenderNotApproved(
                    f"The {connection.provider} account does not list this sender as approved."
                )

    def _when(
        self,
        auth: Principal,
        plan: _SendPlan,
        send_at: datetime | None,
        *,
        ignore_quiet_hours: bool,
    ) -> datetime | None:
        """When a send waits until: its ``send_at`` (422 unless from now up to
        30 days ahead), pushed past the workspace's quiet hours unless it opts out; ``None``
        for a send that goes now (the common case costs one comparison)."""
        quiet = auth.workspace.quiet_hours
        if send_at is None and quiet is None:
            return None
        now = self._clock.now()
        due = now if send_at is None else check_send_at(send_at, now)
        at = hand_over_at(due, quiet, plan.iys_mode, ignore_quiet_hours=ignore_quiet_hours)
        return None if send_at is None and at <= now else at

    @staticmethod
    def _primary(
        connections: Mapping[ProviderCode, Connection], provider: ProviderCode | None
    ) -> Connection:
        if provider is not None:
            found = connections.get(provider)
            if found is None:
                raise ProviderNotConnected(f"The provider {provider} is not connected.")
            return found
        for connection in connections.values():
            if connection.is_default:
                return connection
        raise ProviderNotConnected("The workspace has no provider connection.")

    @staticmethod
    def _text(
        template: Template | None,
        body: str | None,
        variables: Mapping[str, str | int | float | bool] | None,
    ) -> tuple[str, ProviderTemplate | None]:
        if template is None:
            assert body is not None  # the request model guarantees it
            return body, None
        text = render(template.body, variables)
        if template.provider_template is None:
            return text, None
        values = variables or {}
        params = tuple(render_value(values[name]) for name in placeholders(template.body))
        language = template.provider_language or "tr"
        return text, ProviderTemplate(template.provider_template, language, params)

    async def _accept(
        self,
        auth: Principal,
        records: Sequence[MessageRecord],
        claim: IdempotencyClaim | None,
    ) -> WorkItem | None:
        """Write ahead, before any provider is called, in one transaction: the records, the
        check that settles them if their outcome never lands, the quota units (D17) and the
        binding of the ``Idempotency-Key`` to the new jobs (D22). A record that waits (phase
        ``scheduled``) is stored with its hand-over instead, and takes its unit then."""
        check = self._lifecycle.submit_check(records)
        going = [r for r in records if r.phase == "accepted"]  # handed over by this request
        charge = quota.charge(
            auth.workspace_id, auth.livemode, going, len(going), limit=auth.workspace.monthly_quota
        )
        work = [check] if check is not None else []
        if len(going) != len(records):
            work += [self._lifecycle.scheduled_item(r) for r in records if r.phase == "scheduled"]
        limit = auth.workspace.recipient_limit  # D28, checked in the same transaction
        if not await self._store.accept_messages(
            records, work=work, quota=charge, claim=claim, recipient_limit=limit
        ):
            raise QuotaExceeded
        return check

    async def _accept_bulk(
        self,
        auth: Principal,
        plan: _SendPlan,
        records: list[MessageRecord],
        jobs: list[tuple[int, Job]],
        claim: IdempotencyClaim | None,
    ) -> tuple[WorkItem | None, list[tuple[int, Job]]]:
        """:meth:`_accept` for a bulk, where an item past its recipient's flood-guard limit
        (D28) fails alone: it is stored ``failed`` with ``RECIPIENT_RATE_LIMITED`` (in
        ``records``) and left out of the jobs returned, and the rest are written ahead."""
        while True:
            try:
                return await self._accept(auth, records, claim), jobs
            except RecipientRateLimited as error:
                # Each round refuses at least one more item, so this ends.
                over = items_over_limit(error, [(index, job.to) for index, job in jobs])
                if not over:
                    raise
                jobs = [(index, job) for index, job in jobs if index not in over]
                for index, refusal in over.items():
                    job_id, to = records[index].job_id, records[index].to
                    records[index] = self._rejected_item(auth, plan, job_id, to, refusal.error())

    async def _refuse_suppressed_items(
        self,
        auth: Principal,
        plan: _SendPlan,
        records: list[MessageRecord],
        jobs: list[tuple[int, Job]],
    ) -> list[tuple[int, Job]]:
        """In a bulk, an item whose recipient is suppressed fails alone
        (``RECIPIENT_SUPPRESSED``, stored ``failed`` with its ``job_id``); one lookup for all."""
        suppressed = await self._opt_outs.suppressed(
            auth, plan.primary.channel, [j.to for _, j in jobs]
        )
        for _, job in jobs:
            job.suppression_checked = plan.primary.channel  # the gate's first look: the same
        if not suppressed:
            return jobs
        for index, job in jobs:
            if job.to in suppressed:
                refusal = suppressed_refusal(plan.primary.channel, job.to)
                records[index] = self._rejected_item(auth, plan, job.job_id, job.to, refusal)
        return [(index, job) for index, job in jobs if job.to not in suppressed]

    async def _opted_out(self, auth: Principal, channel: Channel, jobs: Sequence[Job]) -> None:
        """A recipient whose provider said they turned us away for good (a
        blocked Telegram bot) goes on the suppression list, source the channel."""
        for job in jobs:
            outcome = job.last_outcome
            if outcome is not None and outcome.opted_out:
                reason = outcome.error.message if outcome.error else "Opted out"
                try:
                    await self._opt_outs.opt_out(
                        auth.workspace_id, auth.livemode, channel, job.to, reason
                    )
                except StorageUnavailable:
                    # The send's answer matters more; the next send is refused by the provider.
                    logger.warning("could not store an opt-out; the next send will retry it")

    async def _store_outcome(
        self,
        auth: Principal,
        records: Sequence[MessageRecord],
        plan: _SendPlan,
        check: WorkItem | None,
        unused: int,
        paced: Mapping[str, datetime] | None = None,
    ) -> None:
        """Store what the providers said, what it starts, and the quota units no provider
        used, in one transaction that also retires the submit check. ``paced``: the jobs
        over their connection's send rate (D27), and when each should get its slot."""
        release = quota.charge(auth.workspace_id, auth.livemode, records, unused)
        done = [check.id] if check is not None else []

        async def write() -> tuple[list[WorkItem], list[ProviderRef], list[str]]:
            # Inside: working out the follow-ups reads the store too (webhook endpoints).
            work, refs = await self._lifecycle.follow_ups(
                records, plan.connections, queue_ttl=auth.workspace.queue_ttl,
                paced=paced, retry_unavailable=auth.workspace.retry_unavailable,
            )  # fmt: skip
            moved = await self._store.finish_messages(
                records, work=work, refs=refs, done=done, release=release
            )
            return work, refs, moved

        # A report that outran this write (a fast gateway's, by the id we minted) waits for it
        # instead of being kept as an early report (see _lifecycle/landing.py).
        with self._lifecycle.landings.hold(record.job_id for record in records):
            try:
                # A store down for a moment (a restart, a fail-over) must not turn what the
                # providers said into ``unknown``: the write waits for it, within a bound.
                work, refs, moved = await retry_while_unavailable(write, within=self._outcome_retry)
            except StorageUnavailable:
                # The providers have spoken; the caller hears what they said. The check
                # stored ahead settles the rows when the store is back (D22: a retry never
                # re-sends).
                logger.warning(
                    "could not store the outcome of %d message(s); their check will settle them",
                    len(records),
                )
                return
            for record in records:
                if record.job_id in moved:
                    await self._lifecycle.finish_late(record, work, refs)

    # ------------------------------------------------------------------ records

    def _new_record(
        self,
        auth: Principal,
        plan: _SendPlan,
        job_id: str,
        to: str,
        text: str,
        template: ProviderTemplate | None,
        ignore_quiet_hours: bool,
    ) -> tuple[MessageRecord, Job]:
        """The write-ahead record of one message, and its send built from it (``job_for``:
        the same function every re-send uses, so what the record keeps is what is sent)."""
        now = self._clock.now()
        primary = plan.hops[0]
        record = MessageRecord(
            job_id=job_id,
            workspace_id=auth.workspace_id,
            livemode=auth.livemode,
            status=begin("queued"),
            to=to,
            channel=primary.connection.channel,
            provider=primary.connection.provider,
            created_at=now,
            updated_at=now,
            text=text,
            sender=primary.sender,
            template_key=plan.template.key if plan.template else None,
            fallback_requested=plan.fallback_requested,
            template_params=template.parameters if template else (),
            requested_sender=plan.requested_sender,
            template_name=template.name if template else None,
            template_language=template.language if template else None,
            phase="accepted",
            ignore_quiet_hours=ignore_quiet_hours,
            iys_mode=plan.iys_mode,
            api_key_id=auth.key.id if auth.key else None,
            api_key_name=auth.key.name if auth.key else None,
            escalate_after=plan.escalate_after,
        )
        job = job_for(record)
        if primary.sender is None:
            return record, job
        encoding, segments = job.sms_encoding(primary.connection)
        return replace(record, encoding=encoding, segments=segments), job

    def _rejected_item(
        self, auth: Principal, plan: _SendPlan, job_id: str, raw_to: str, exc: MessagingError
    ) -> MessageRecord:
        now = self._clock.now()
        primary = plan.hops[0]
        return MessageRecord(
            job_id=job_id,
            workspace_id=auth.workspace_id,
            livemode=auth.livemode,
            status=begin("failed"),
            to=raw_to,
            channel=primary.connection.channel,
            provider=primary.connection.provider,
            created_at=now,
            updated_at=now,
            final_at=now,
            text="",
            sender=primary.sender,
            template_key=plan.template.key if plan.template else None,
            error=ErrorInfo(exc.code, exc.message),
            fallback_requested=plan.fallback_requested,
            requested_sender=plan.requested_sender,
            phase="refused",
            api_key_id=auth.key.id if auth.key else None,
            api_key_name=auth.key.name if auth.key else None,
        )

    def _outcome_record(
        self, record: MessageRecord, plan: _SendPlan, job: Job, *, queue: bool = False
    ) -> MessageRecord:
        """The write-ahead ``record`` as its chain left it (``queue``: D7's retries are on)."""
        return after_routing(
            record, job, plan.hops, attempts=tuple(job.attempts), now=self._clock.now(), retry=queue
        )

    @staticmethod
    def _raise_for_single(record: MessageRecord, job: Job) -> None:
        if job.accepted or record.error is None or record.status == "queued":
            return
        if job.stopped is not None:  # the gate's end (D35) is the answer, not a provider's
            return
        if record.error.code == ChatUnreachable.code:
            raise ChatUnreachable(record.error.message, job_id=record.job_id)
        if record.error.code == BodyTooLong.code:  # over the part limit of every hop tried
            raise BodyTooLong(record.error.message, job_id=record.job_id)
        if job.all_unavailable:
            # The record's message names each provider's cause.
            raise ProviderUnavailable(
                f"The message was not sent. {record.error.message}", job_id=record.job_id
            )

    # ------------------------------------------------------------------ delivery reports

    # ------------------------------------------------------------------ the worker

    def worker(self, **options: Any) -> Worker:
        """A :class:`Worker` running this messenger's background work (reports, time-outs,
        fallback, webhooks). ``options``: ``worker_id``, ``lease``, ``batch``,
        ``concurrency``, ``idle_interval``, ``gather_interval``, ``batch_handlers``."""
        handlers = {
            **self._lifecycle.handlers(),
            WORK_WEBHOOK: self._webhooks.handle,
            WORK_EXPIRY: self.verifications.handle_expiry,
            **self.iys.handlers(),
            WORK_REFRESH: self.accounts.handle,
        }
        options.setdefault(
            "batch_handlers",
            {**self._lifecycle.batch_handlers(), **self.iys.batch_handlers()},
        )
        return Worker(self._store, self._clock, handlers, **options)

    async def _due_work(self) -> int:
        """Run the background work due now, then return (``iys sync``)."""
        return await self.worker().run_until_idle()

    async def run_worker(self, stop: asyncio.Event | None = None, **options: Any) -> None:
        """Do background work until ``stop`` is set or the task is cancelled. Run it in as
        many processes or hosts as you like: they share the work through the store. Beside
        it, the delivery counts are folded every minute (``stats.keep_folded``)."""
        stop = stop if stop is not None else asyncio.Event()
        await self.accounts.schedule_all()
        folding = asyncio.create_task(self.stats.keep_folded(stop), name="um stats fold")
        try:
            await self.worker(**options).run(stop)
        finally:
            folding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await folding

    # ------------------------------------------------------------------ adapters


def _scheduled(record: MessageRecord, plan: _SendPlan, when: datetime) -> MessageRecord:
    """``record`` waiting for its hand-over at ``when``, its whole chain kept for it."""
    left = tuple(hop.connection.provider for hop in plan.hops[1:])
    return replace(record, phase="scheduled", send_at=when, fallback_left=left)


def _paced(jobs: Sequence[Job]) -> dict[str, datetime]:
    """D27: the jobs no send slot was free for in time, and when one should be."""
    return {job.job_id: job.paced_until for job in jobs if job.paced_until is not None}


def _refuse_content(auth: Principal, plan: _SendPlan, text: str) -> None:
    """D33: a commercial SMS whose text the workspace's content rules refuse is a 422."""
    refusal = content_refusal(
        auth.workspace.content_rules, plan.iys_mode, plan.primary.channel, text
    )
    if refusal is not None:
        raise refusal


def _masks(auth: Principal) -> bool:
    """Does the caller's workspace hide live message text (personal data, KVKK)?"""
    return auth.workspace.mask_live_text


def _class(category: Category | None, recipient_type: RecipientType | None) -> IysMode | None:
    """The İYS mode a request's ``category`` asks for (D33); ``None``: the connection's."""
    return None if category is None else iys_mode_for(category, recipient_type)
