"""``messenger.workspaces``: workspaces and their settings (quota, queue TTL, flood guard,
quiet hours). The edges (CLI, dashboard, the pytest plugin) call these methods; the rules
that guard a workspace's settings live here, once."""

from __future__ import annotations

import builtins
from dataclasses import dataclass, replace
from datetime import timedelta

from .._access.flood_guard import DEFAULT_RECIPIENT_LIMIT, RecipientLimit, parse_recipient_limit
from .._clock import Clock
from .._domain import DEFAULT_QUEUE_TTL, Workspace
from .._errors import RequestInvalid, ResourceNotFound
from .._ids import new_id
from .._quota import quota_period
from .._schedule import QuietHours
from ..audit._actions import audited, of_workspace
from ..store.base import Store

__all__ = ["MAX_QUEUE_TTL", "QuotaUsage", "Workspaces"]

#: A queue TTL beyond this is almost surely a unit mistake (milliseconds given as seconds).
MAX_QUEUE_TTL = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class QuotaUsage:
    period: str
    used: int
    limit: int | None


class Workspaces:
    """Create, read and configure workspaces: ``messenger.workspaces.create("Acme")``."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def __repr__(self) -> str:
        return "<messenger.workspaces>"

    @audited("workspace.create", of_workspace)
    async def create(
        self,
        name: str,
        *,
        monthly_quota: int | None = None,
        queue_ttl: timedelta = DEFAULT_QUEUE_TTL,
        recipient_limit: RecipientLimit | None = DEFAULT_RECIPIENT_LIMIT,
    ) -> Workspace:
        """A new workspace. ``recipient_limit``: D28's flood guard, 10 messages per
        recipient per hour unless given (``None`` turns it off)."""
        name = name.strip()
        if not 1 <= len(name) <= 200:
            raise RequestInvalid.for_field("name", "must be 1-200 characters")
        _check_quota(monthly_quota)
        _check_queue_ttl(queue_ttl)
        workspace = Workspace(
            id=new_id("ws"),
            name=name,
            created_at=self._clock.now(),
            monthly_quota=monthly_quota,
            queue_ttl=queue_ttl,
            recipient_limit=_check_recipient_limit(recipient_limit),
        )
        await self._store.create_workspace(workspace)
        return workspace

    async def get(self, workspace_id: str) -> Workspace:
        workspace = await self._store.get_workspace(workspace_id)
        if workspace is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        return workspace

    async def list(self) -> builtins.list[Workspace]:
        return await self._store.list_workspaces()

    @audited("workspace.quota", of_workspace)
    async def set_monthly_quota(self, workspace_id: str, monthly_quota: int | None) -> Workspace:
        _check_quota(monthly_quota)
        workspace = replace(await self.get(workspace_id), monthly_quota=monthly_quota)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.retry_unavailable", of_workspace)
    async def set_retry_unavailable(self, workspace_id: str, enabled: bool) -> Workspace:
        """D7's opt-in: when no provider can be reached, answer ``201 queued`` and let the
        worker hand the message over with backoff for up to the workspace's ``queue_ttl``
        (10 minutes unless :meth:`set_queue_ttl` changed it), instead of 502."""
        workspace = replace(await self.get(workspace_id), retry_unavailable=enabled)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.queue_ttl", of_workspace)
    async def set_queue_ttl(self, workspace_id: str, queue_ttl: timedelta) -> Workspace:
        """How long D7 keeps retrying this workspace's queued messages before they end
        ``failed`` (default 10 minutes); messages queued already keep the TTL they got."""
        _check_queue_ttl(queue_ttl)
        workspace = replace(await self.get(workspace_id), queue_ttl=queue_ttl)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.recipient_limit", of_workspace)
    async def set_recipient_limit(
        self, workspace_id: str, recipient_limit: RecipientLimit | str | None
    ) -> Workspace:
        """D28's flood guard: at most ``recipient_limit`` messages to one recipient per
        window (a :class:`RecipientLimit`, or its text form such as ``"10/1h"``); ``None``
        (or ``"off"``) turns it off. Past it a send is 429 ``RECIPIENT_RATE_LIMITED``. The
        new limit applies at once, to the messages already sent in the window too."""
        limit = _check_recipient_limit(recipient_limit)
        workspace = replace(await self.get(workspace_id), recipient_limit=limit)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.quiet_hours", of_workspace)
    async def set_quiet_hours(self, workspace_id: str, quiet_hours: QuietHours | None) -> Workspace:
        """Quiet hours: sends inside the daily window (commercial ones, or all,
        as its ``scope`` says) are stored ``queued`` and handed over when it ends, unless a
        send opts out (``ignore_quiet_hours``); ``None`` turns them off (the default).
        Messages waiting already are checked again against the new setting when due."""
        if quiet_hours is not None and not isinstance(quiet_hours, QuietHours):
            raise RequestInvalid.for_field("quiet_hours", "must be QuietHours or None")
        workspace = replace(await self.get(workspace_id), quiet_hours=quiet_hours)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.text_masking", of_workspace)
    async def set_text_masking(self, workspace_id: str, enabled: bool) -> Workspace:
        """Hide the text of the workspace's live messages wherever it is shown (status
        records, the list, webhooks, the dashboard): ``******`` instead, for the messages
        sent before as well (personal data under KVKK). Off by default; test mode always
        shows its text. The text is still handed to the providers, and kept for fallback."""
        if not isinstance(enabled, bool):
            raise RequestInvalid.for_field("mask_live_text", "must be true or false")
        workspace = replace(await self.get(workspace_id), mask_live_text=enabled)
        await self._store.update_workspace(workspace)
        return workspace

    async def quota_usage(self, workspace_id: str) -> QuotaUsage:
        workspace = await self.get(workspace_id)
        period = quota_period(self._clock.now())
        used = await self._store.quota_used(workspace_id, period)
        return QuotaUsage(period, used, workspace.monthly_quota)


def _check_recipient_limit(limit: RecipientLimit | str | None) -> RecipientLimit | None:
    if isinstance(limit, str):
        return parse_recipient_limit(limit)
    if limit is not None and not isinstance(limit, RecipientLimit):
        raise RequestInvalid.for_field(
            "recipient_limit", "must be a RecipientLimit, N/WINDOW text (e.g. 10/1h) or None"
        )
    return limit


def _check_queue_ttl(queue_ttl: timedelta) -> None:
    if not timedelta(0) < queue_ttl <= MAX_QUEUE_TTL:
        raise RequestInvalid.for_field("queue_ttl", "must be more than 0 and at most 7 days")


def _check_quota(monthly_quota: int | None) -> None:
    if monthly_quota is not None and monthly_quota < 0:
        raise RequestInvalid.for_field("monthly_quota", "must be zero or more")
