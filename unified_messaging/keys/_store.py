"""The store's part of API keys: the protocol the memory and SQL stores implement.

:class:`~unified_messaging.store.base.Store` is the sum of every room's part."""

from __future__ import annotations

from typing import Protocol

from .._domain import ApiKey

__all__ = ["KeyStore"]


class KeyStore(Protocol):
    """Protocol: API keys (kept by their hash only)."""

    async def add_api_key(self, key: ApiKey) -> None: ...

    async def get_api_key(self, key_id: str) -> ApiKey | None: ...

    async def find_api_key(self, key_hash: str) -> ApiKey | None: ...

    async def list_api_keys(self, workspace_id: str) -> list[ApiKey]: ...

    async def update_api_key(self, key: ApiKey) -> None: ...
