"""``Verifications``: the Verify service (D34), reached as ``messenger.verifications``.

It owns the order of a start (400 → 422 → 404 → 429, then the send) and the loops that
retry a compare-and-set; every rule it applies is a function of ``_rules``. A code message
is a normal message, sent through the messenger's own ``send`` (so it passes the hand-over
gate, has a ``job_id``, is listed and goes through the lifecycle and webhooks), as
informational traffic that quiet hours do not hold.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final, Protocol

from .._errors import (
    ChannelNotSupported,
    MessagingError,
    ProviderNotConnected,
    StorageUnavailable,
    VerificationAlreadyApproved,
    VerificationNotFound,
    VerificationRateLimited,
)
from .._ids import new_id
from .._models import SendResponse, parse_model
from .._text import storable
from .._types import Channel, ProviderCode
from ..audit._actions import audited, of_argument
from ..providers.base import ProviderTemplate
from ._channels import channel_sends, code_channels, code_recipient
from ._events import EVENT_OF, event_item, expiry_item
from ._guard import PumpingGuard
from ._metrics import record_change, record_started
from ._models import CheckRequest, CheckResponse, StartRequest, VerificationOut
from ._records import CodeSend, Verification, VerificationSettings
from ._rules import (
    after_check,
    canceled,
    code_digest,
    code_matches,
    hourly_refusal,
    new_code,
    resend_refusal,
    resent,
    settled,
    with_send,
)
from ._stats import StatsQuery, VerificationStats, conversion_stats
from ._texts import CODE_MASK, check_template, code_text

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._access.ratelimit import RateLimiter
    from .._clock import Clock
    from .._domain import Template
    from .._observability.metrics import Metrics
    from ..store.base import Store, WorkItem
    from ..vault._core import Vault

__all__ = ["SendCode", "TemplateSource", "Verifications"]

logger = logging.getLogger("unified_messaging.verifications")

#: A compare-and-set that lost is retried with a fresh read; each loss means another
#: change went through, so this bounds nothing but a store that never answers the same.
_CAS_ROUNDS: Final = 200
_HOUR: Final = timedelta(hours=1)

StartInput = StartRequest | Mapping[str, object]
CheckInput = CheckRequest | Mapping[str, object]


class SendCode(Protocol):
    """Protocol: the messenger's send path for a code's message, with its masked text."""

    async def __call__(
        self,
        auth: Principal,
        request: Mapping[str, object],
        *,
        masked_text: str,
        code_template: ProviderTemplate | None = None,
    ) -> SendResponse: ...


class TemplateSource(Protocol):
    """Protocol: where a verification's ``template`` is read (``messenger.templates``)."""

    async def get(self, workspace_id: str, key: str) -> Template: ...


class Verifications:
    """Start, check, read and cancel one-time codes (``/v1/verifications``, D34)."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        vault: Vault,
        send_code: SendCode,
        templates: TemplateSource,
        *,
        limiter: RateLimiter | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        from .._access.ratelimit import MemoryRateLimiter
        from .._observability.metrics import NO_METRICS

        self._store = store
        self._clock = clock
        self._vault = vault
        self._send_code = send_code
        self._templates = templates
        self._metrics = metrics if metrics is not None else NO_METRICS
        #: The SMS-pumping guard: its settings (``guard.settings``, ``guard.update_settings``).
        self.guard = PumpingGuard(
            store, clock, limiter if limiter is not None else MemoryRateLimiter(clock),
            self._metrics,
        )  # fmt: skip

    def __repr__(self) -> str:
        return "Verifications()"

    # ------------------------------------------------------------------ settings

    async def settings(self, workspace_id: str) -> VerificationSettings:
        """The workspace's Verify limits (the defaults until changed)."""
        found = await self._store.get_verification_settings(workspace_id)
        return found if found is not None else VerificationSettings()

    async def update_settings(
        self,
        workspace_id: str,
        *,
        max_checks: int | None = None,
        max_sends: int | None = None,
        resend_cooldown: timedelta | None = None,
        hourly_limit: int | None = None,
        whatsapp_template: str | None = None,
        escalate_after: timedelta | None = None,
    ) -> VerificationSettings:
        """Change some of the workspace's Verify settings (those given): the limits, the
        WhatsApp authentication template codes go by (``whatsapp_template``) and how long
        a code waits for ``delivered`` before its next channel (``escalate_after``, D36);
        ``RequestInvalid`` naming a value out of range, ``ResourceNotFound`` for an unknown
        workspace."""
        current = await self.settings(workspace_id)
        changes = {
            "max_checks": max_checks,
            "max_sends": max_sends,
            "resend_cooldown": resend_cooldown,
            "hourly_limit": hourly_limit,
            "whatsapp_template": whatsapp_template,
            "escalate_after": escalate_after,
        }
        updated = replace(current, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]
        return await self.set_settings(workspace_id, updated)

    @audited("workspace.verify_limits", of_argument("workspace_id"))
    async def set_settings(
        self, workspace_id: str, settings: VerificationSettings
    ) -> VerificationSettings:
        """Replace the workspace's Verify limits (audited ``workspace.verify_limits``);
        ``ResourceNotFound`` for an unknown workspace."""
        await self._store.put_verification_settings(workspace_id, settings)
        return settings

    # ------------------------------------------------------------------ the operations

    async def start(self, auth: Principal, request: StartInput) -> VerificationOut:
        """Send a code to ``to`` (``POST /v1/verifications``): a new verification, or the
        recipient's pending one again with a new code. Raises a :class:`MessagingError`:
        400 for a malformed request, 422 ``CHANNEL_NOT_SUPPORTED`` / ``INVALID_RECIPIENT`` /
        ``TEMPLATE_VARIABLE_MISSING``, 404 for an unknown template or no SMS connection,
        429 ``VERIFICATION_RATE_LIMITED``, and what the send itself may raise."""
        req = parse_model(StartRequest, request)
        order = code_channels(req.channel, req.channels)
        to = code_recipient(order, req.to)
        template = await self._template(auth, req.template)
        settings = await self.settings(auth.workspace_id)
        if "bizchat" in order and settings.whatsapp_template is None:
            raise ChannelNotSupported(
                "Codes go by WhatsApp through an approved authentication template: set the "
                "workspace's whatsapp_template first."
            )
        provider = await self._provider(auth, order[0])
        await self._connected(auth, order[1:])
        route = _Route(order, provider, template, settings)
        now = self._clock.now()
        pending = await self._pending(auth, to, now)
        if pending is not None:
            return await self._resend(auth, pending, settings, req, route)
        started = await self._store.verifications_started(
            auth.workspace_id, auth.livemode, to, now - _HOUR
        )
        refusal = hourly_refusal(started, settings, now)
        if refusal is not None:
            raise refusal
        await self.guard.admit(auth, to, req.client_ip)
        code = new_code(req.code_length)
        verification_id = new_id("ver")
        verification = Verification(
            id=verification_id,
            workspace_id=auth.workspace_id,
            livemode=auth.livemode,
            to=to,
            channel=order[0],
            status="pending",
            code_digest=code_digest(self._vault, verification_id, code),
            code_length=req.code_length,
            locale=req.locale,
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=req.ttl),
            max_checks=settings.max_checks,
            # The send's slot is taken with the row: a concurrent re-send sees the cooldown.
            sends=(CodeSend("", order[0], provider, now),),
        )
        if not await self._store.add_verification(verification):
            # A concurrent start for this recipient stored its verification first and is
            # sending its code: to this request, that is a re-send inside the cooldown.
            raise VerificationRateLimited(
                "A code was sent to this recipient moments ago; try again later.",
                retry_after=max(1.0, settings.resend_cooldown.total_seconds()),
            )
        record_started(self._metrics, verification)
        if await self._has_endpoints(auth.workspace_id):
            # verification.expired needs a clock: the worker looks at its expires_at.
            await self._store.enqueue_work_many([expiry_item(verification, now)])
        return await self._send(auth, verification, code, req, route, first=True)

    async def check(
        self, auth: Principal, verification_id: str, request: CheckInput
    ) -> CheckResponse:
        """Check a code (``POST /v1/verifications/{id}/check``): ``approved`` once; a wrong
        code counts, and the ``max_checks``-th makes it ``failed``; an expired, failed or
        canceled verification answers its status and approves nothing. A second check of
        an approved verification is :class:`VerificationAlreadyApproved` (409)."""
        req = parse_model(CheckRequest, request)
        for _ in range(_CAS_ROUNDS):
            stored = await self._get(auth, verification_id)
            if stored.status == "approved":
                raise VerificationAlreadyApproved
            now = self._clock.now()
            current = settled(stored, now)
            if current.status != "pending":
                if current is stored or await self._change(stored, current):
                    return _check_answer(current)
                continue
            checked = after_check(current, code_matches(self._vault, current, req.code), now)
            if await self._change(current, checked):
                return _check_answer(checked)
        raise StorageUnavailable("The verification kept changing; try again.")

    async def get(self, auth: Principal, verification_id: str) -> VerificationOut:
        """One verification (``GET /v1/verifications/{id}``); 404 for another's."""
        stored = await self._get(auth, verification_id)
        current = settled(stored, self._clock.now())
        if current is not stored and not await self._change(stored, current):
            current = await self._get(auth, verification_id)
        return await self._out(current)

    async def cancel(self, auth: Principal, verification_id: str) -> VerificationOut:
        """Cancel a pending verification (``POST /v1/verifications/{id}/cancel``): its code
        no longer works. Any other answers as it is."""
        for _ in range(_CAS_ROUNDS):
            stored = await self._get(auth, verification_id)
            now = self._clock.now()
            current = canceled(settled(stored, now), now)
            if current is stored or await self._change(stored, current):
                return await self._out(current)
        raise StorageUnavailable("The verification kept changing; try again.")

    async def stats(
        self, auth: Principal, query: StatsQuery | Mapping[str, object] | None = None
    ) -> VerificationStats:
        """Conversion per hour and channel (``GET /v1/verifications/stats``): of the
        verifications started in each of the last ``hours`` (default 24), how many are
        approved. 400 for ``hours`` outside 1-168."""
        return await conversion_stats(self._store, self._clock, auth, query or {})

    async def recent(self, auth: Principal, limit: int = 20) -> list[VerificationOut]:
        """The caller's newest verifications, newest first (the dashboard's list)."""
        found = await self._store.recent_verifications(
            auth.workspace_id, auth.livemode, max(1, min(limit, 100))
        )
        return [await self._out(settled(v, self._clock.now())) for v in found]

    # ------------------------------------------------------------------ steps

    async def _get(self, auth: Principal, verification_id: str) -> Verification:
        if not storable(verification_id) or not verification_id.startswith("ver_"):
            raise VerificationNotFound
        found = await self._store.get_verification(
            auth.workspace_id, auth.livemode, verification_id
        )
        if found is None:
            raise VerificationNotFound
        return found

    async def _pending(self, auth: Principal, to: str, now: datetime) -> Verification | None:
        """The recipient's pending verification, after expiring it if its time is up."""
        for _ in range(_CAS_ROUNDS):
            found = await self._store.pending_verification(auth.workspace_id, auth.livemode, to)
            if found is None:
                return None
            current = settled(found, now)
            if current is found:
                return found
            if await self._change(found, current):
                return None
        raise StorageUnavailable("The verification kept changing; try again.")

    async def _template(self, auth: Principal, key: str | None) -> str | None:
        if key is None:
            return None
        template = await self._templates.get(auth.workspace_id, key)
        check_template(template.body)
        return template.body

    async def _provider(self, auth: Principal, channel: Channel) -> ProviderCode:
        """The connection a code's first channel goes through: the workspace's default
        connection if it is of that channel, else its first one of it."""
        connections = await self._store.list_connections(auth.workspace_id)
        found = [c for c in connections if c.channel == channel]
        if not found:
            raise ProviderNotConnected(f"No {channel} provider is connected to send the code.")
        return next((c for c in found if c.is_default), found[0]).provider

    async def _connected(self, auth: Principal, channels: Sequence[Channel]) -> None:
        """404 before any code is made when a later channel has no connection."""
        for channel in channels:
            await self._provider(auth, channel)

    async def _resend(
        self,
        auth: Principal,
        pending: Verification,
        settings: VerificationSettings,
        req: StartRequest,
        route: _Route,
    ) -> VerificationOut:
        """The pending verification again, with a new code (the previous one stops
        working: only a digest is kept, so the same code cannot be sent twice)."""
        now = self._clock.now()
        refusal = resend_refusal(pending, settings, now)
        if refusal is not None:
            raise refusal
        await self.guard.admit(auth, pending.to, req.client_ip)
        code = new_code(pending.code_length)
        digest = code_digest(self._vault, pending.id, code)
        again = resent(pending, digest, CodeSend("", route.order[0], route.provider, now), now)
        if not await self._store.replace_verification(again):
            raise VerificationRateLimited(
                "A code was sent to this recipient moments ago; try again later.",
                retry_after=max(1.0, settings.resend_cooldown.total_seconds()),
            )
        await self._stop_escalations(pending)  # the previous code's later channels
        return await self._send(auth, again, code, req, route, first=False)

    async def _send(
        self,
        auth: Principal,
        verification: Verification,
        code: str,
        req: StartRequest,
        route: _Route,
        *,
        first: bool,
    ) -> VerificationOut:
        """Send the code message and put its ``job_id`` in the send slot taken for it: one
        message through the channels of ``route`` (D36), the text on SMS and Telegram, the
        workspace's authentication template on WhatsApp."""
        texts = [
            code_text(value, locale=req.locale, template=route.template, app_hash=req.app_hash)
            for value in (code, CODE_MASK)
        ]
        message: dict[str, object] = {
            "to": verification.to,
            "body": texts[0],
            "provider": route.provider,
            "category": "informational",
            "ignore_quiet_hours": True,
        }
        if len(route.order) > 1:
            message["channel_fallback"] = list(route.order[1:])
            message["escalate_after"] = route.settings.escalate_after.total_seconds()
        code_template = None
        if "bizchat" in route.order and route.settings.whatsapp_template is not None:
            code_template = ProviderTemplate(
                route.settings.whatsapp_template, verification.locale, (code,)
            )
        try:
            sent = await self._send_code(
                auth, message, masked_text=texts[1], code_template=code_template
            )
        except MessagingError:
            if first:  # nothing went out for it: it must not block the recipient's next start
                await self._give_up(auth, verification)
            raise
        send = CodeSend(sent.job_id, route.order[0], route.provider, sent.created_at)
        for _ in range(_CAS_ROUNDS):
            filled = with_send(verification, send)
            if await self._store.replace_verification(filled):
                return await self._out(filled)
            verification = await self._get(auth, verification.id)  # a check came between
        raise StorageUnavailable("The verification kept changing; try again.")

    async def _change(self, stored: Verification, changed: Verification) -> bool:
        """Store ``changed`` over ``stored`` (compare-and-set); when it ended the
        verification (approved, failed, expired), queue its webhook event."""
        if not await self._store.replace_verification(changed):
            return False
        record_change(self._metrics, stored, changed)
        if changed.status != stored.status and changed.status != "pending":
            await self._stop_escalations(changed)
        if changed.status != stored.status and changed.status in EVENT_OF:
            await self._announce(changed)
        return True

    async def _stop_escalations(self, verification: Verification) -> None:
        """D36: a verification that ended (approved, failed, expired, canceled) or sent a new
        code sends this code by no later channel: its messages' chains are dropped (a
        message a provider has keeps its own report; only what is left of the chain goes)."""
        for send in verification.sends:
            if not send.job_id:
                continue
            for _ in range(_CAS_ROUNDS):
                record = await self._store.get_message(
                    verification.workspace_id, verification.livemode, send.job_id
                )
                if record is None or not record.fallback_left:
                    break
                stopped = replace(record, fallback_left=(), version=record.version + 1)
                if await self._store.replace_message(stopped):
                    break

    async def _announce(self, verification: Verification) -> None:
        # After the change's own write: a process that dies between the two loses the event
        # (a message's events are written with their change; a verification's are not yet).
        if not await self._has_endpoints(verification.workspace_id):
            return
        data = (await self._out(verification)).to_dict()
        item = event_item(verification, data, self._clock.now())
        if item is not None:
            await self._store.enqueue_work_many([item])

    async def _has_endpoints(self, workspace_id: str) -> bool:
        return bool(await self._store.list_webhook_endpoints(workspace_id))

    async def handle_expiry(self, item: WorkItem) -> datetime | None:
        """The worker's handler of a verification's expiry item (``verification.expired``):
        a verification still pending at its ``expires_at`` ends ``expired``."""
        workspace_id = str(item.payload["workspace_id"])
        livemode = bool(item.payload["livemode"])
        for _ in range(_CAS_ROUNDS):
            found = await self._store.get_verification(workspace_id, livemode, item.ref)
            if found is None:
                return None
            current = settled(found, self._clock.now())
            if current is found:
                # Not pending, or not yet due (a clock behind the item's): look again then.
                return found.expires_at if found.status == "pending" else None
            if await self._change(found, current):
                return None
        raise StorageUnavailable("The verification kept changing; try again.")

    async def _give_up(self, auth: Principal, verification: Verification) -> None:
        now = self._clock.now()
        for _ in range(_CAS_ROUNDS):
            if await self._store.replace_verification(canceled(verification, now)):
                return
            verification = await self._get(auth, verification.id)
            if verification.status != "pending":
                return
        logger.warning("could not cancel a verification whose code was not sent")

    async def _out(self, verification: Verification) -> VerificationOut:
        jobs = [s.job_id for s in verification.sends if s.job_id]
        keys = [(verification.workspace_id, verification.livemode, job) for job in jobs]
        records = await self._store.get_messages(keys) if keys else {}
        sends = [
            out
            for s in verification.sends
            if s.job_id in records
            for out in channel_sends(s, records[s.job_id])
        ]
        return VerificationOut(
            id=verification.id,
            to=verification.to,
            status=verification.status,
            channel=sends[-1].channel if sends else verification.channel,
            expires_at=verification.expires_at,
            checks_remaining=verification.checks_remaining,
            sends=sends,
            created_at=verification.created_at,
            livemode=verification.livemode,
        )


@dataclass(frozen=True, slots=True)
class _Route:
    """How a start's code goes: its channels in order, the first one's connection, the
    text template (``None``: the default text) and the workspace's settings."""

    order: tuple[Channel, ...]
    provider: ProviderCode
    template: str | None
    settings: VerificationSettings


def _check_answer(verification: Verification) -> CheckResponse:
    return CheckResponse(
        id=verification.id,
        status=verification.status,
        checks_remaining=verification.checks_remaining,
    )
