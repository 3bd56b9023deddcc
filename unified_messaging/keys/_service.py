"""``messenger.keys``: a workspace's API keys (D1): create (the secret shown once), list,
revoke."""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass, field, replace
from datetime import datetime

from .._access.keys import generate_api_key, hash_api_key, key_display_prefix
from .._clock import Clock
from .._domain import ApiKey
from .._errors import RequestInvalid, ResourceNotFound
from .._ids import new_id
from ..audit._actions import audited, of_record
from ..store.base import Store
from ..workspaces._service import Workspaces

__all__ = ["MAX_KEY_RATE", "ApiKeys", "CreatedApiKey"]

#: A key's rate and burst beyond this are a typo (and a burst past it would not fit the
#: store's integer column on every backend).
MAX_KEY_RATE = 1_000_000_000


@dataclass(frozen=True, slots=True)
class CreatedApiKey:
    """A new key: the stored record, and the secret itself, which is shown this once."""

    record: ApiKey
    secret: str = field(repr=False)


class ApiKeys:
    """A workspace's API keys: ``messenger.keys.create(workspace_id, livemode=True)``."""

    def __init__(self, store: Store, clock: Clock, workspaces: Workspaces) -> None:
        self._store = store
        self._clock = clock
        self._workspaces = workspaces

    def __repr__(self) -> str:
        return "<messenger.keys>"

    @audited("api_key.create", lambda created, _: of_record(created.record, _))
    async def create(
        self,
        workspace_id: str,
        *,
        livemode: bool = False,
        name: str | None = None,
        expires_at: datetime | None = None,
        rate_limit: float | None = None,
        rate_burst: int | None = None,
    ) -> CreatedApiKey:
        """Create a key; its secret is in the result and nowhere else, ever again (D1)."""
        await self._workspaces.get(workspace_id)
        if expires_at is not None and expires_at.tzinfo is None:
            raise RequestInvalid.for_field("expires_at", "must carry a timezone")
        if expires_at is not None and expires_at <= self._clock.now():
            # It could never authenticate: almost always a typo in the year or the zone.
            raise RequestInvalid.for_field("expires_at", "must be in the future")
        if rate_limit is not None and not (math.isfinite(rate_limit) and rate_limit > 0):
            raise RequestInvalid.for_field("rate_limit", "must be positive")
        if rate_limit is not None and rate_limit > MAX_KEY_RATE:
            raise RequestInvalid.for_field("rate_limit", f"must be at most {MAX_KEY_RATE:,}")
        if rate_burst is not None and rate_burst < 1:
            raise RequestInvalid.for_field("rate_burst", "must be at least 1")
        if rate_burst is not None and rate_burst > MAX_KEY_RATE:
            raise RequestInvalid.for_field("rate_burst", f"must be at most {MAX_KEY_RATE:,}")
        secret = generate_api_key(livemode=livemode)
        record = ApiKey(
            id=new_id("key"),
            workspace_id=workspace_id,
            livemode=livemode,
            key_hash=hash_api_key(secret),
            display_prefix=key_display_prefix(secret),
            created_at=self._clock.now(),
            name=name,
            expires_at=expires_at,
            rate_limit=rate_limit,
            rate_burst=rate_burst,
        )
        await self._store.add_api_key(record)
        return CreatedApiKey(record, secret)

    async def list(self, workspace_id: str) -> builtins.list[ApiKey]:
        return await self._store.list_api_keys(workspace_id)

    @audited("api_key.revoke", of_record)
    async def revoke(self, key_id: str, *, workspace_id: str | None = None) -> ApiKey:
        """Revoke a key (idempotent). With ``workspace_id``, a key of another workspace is
        not found: the dashboard revokes only within the workspace its user may see (D31)."""
        key = await self._store.get_api_key(key_id)
        if key is None or workspace_id not in (None, key.workspace_id):
            raise ResourceNotFound(f"API key {key_id} not found.")
        if key.revoked_at is None:
            key = replace(key, revoked_at=self._clock.now())
            await self._store.update_api_key(key)
        return key
