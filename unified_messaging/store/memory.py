"""The in-memory store: the library's default and the tests' reference backend.

Every method runs without awaiting, so on one event loop each call is atomic; a lock still
guards the multi-step writes because a ``SyncMessenger`` may share the store across threads.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from .._domain import ApiKey, Connection, MessageRecord, Template, Workspace
from .._errors import AlreadyExists, ResourceNotFound

__all__ = ["MemoryStore"]

V = TypeVar("V")


class MemoryStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workspaces: dict[str, Workspace] = {}
        self._keys: dict[str, ApiKey] = {}
        self._key_ids_by_hash: dict[str, str] = {}
        self._connections: dict[str, Connection] = {}
        self._templates: dict[tuple[str, str], Template] = {}
        self._messages: dict[str, MessageRecord] = {}
        self._quota: dict[tuple[str, str], int] = {}

    def __repr__(self) -> str:
        return f"MemoryStore(workspaces={len(self._workspaces)}, messages={len(self._messages)})"

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    # -- workspaces
    async def create_workspace(self, workspace: Workspace) -> None:
        with self._lock:
            if workspace.id in self._workspaces:
                raise AlreadyExists(f"Workspace {workspace.id} already exists.")
            self._workspaces[workspace.id] = workspace

    async def get_workspace(self, workspace_id: str) -> Workspace | None:
        return self._workspaces.get(workspace_id)

    async def list_workspaces(self) -> list[Workspace]:
        return sorted(self._workspaces.values(), key=lambda w: (w.created_at, w.id))

    async def update_workspace(self, workspace: Workspace) -> None:
        with self._lock:
            self._require(self._workspaces, workspace.id, "Workspace")
            self._workspaces[workspace.id] = workspace

    # -- API keys
    async def add_api_key(self, key: ApiKey) -> None:
        with self._lock:
            if key.id in self._keys or key.key_hash in self._key_ids_by_hash:
                raise AlreadyExists("API key already exists.")
            self._keys[key.id] = key
            self._key_ids_by_hash[key.key_hash] = key.id

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        return self._keys.get(key_id)

    async def find_api_key(self, key_hash: str) -> ApiKey | None:
        key_id = self._key_ids_by_hash.get(key_hash)
        return None if key_id is None else self._keys.get(key_id)

    async def list_api_keys(self, workspace_id: str) -> list[ApiKey]:
        keys = [k for k in self._keys.values() if k.workspace_id == workspace_id]
        return sorted(keys, key=lambda k: (k.created_at, k.id))

    async def update_api_key(self, key: ApiKey) -> None:
        with self._lock:
            self._require(self._keys, key.id, "API key")
            self._keys[key.id] = key

    # -- connections
    async def add_connection(self, connection: Connection) -> None:
        with self._lock:
            siblings = self._connections_of(connection.workspace_id)
            if any(c.provider == connection.provider for c in siblings):
                raise AlreadyExists(
                    f"The workspace already has a {connection.provider} connection."
                )
            if connection.id in self._connections:
                raise AlreadyExists(f"Connection {connection.id} already exists.")
            if not siblings:
                connection = replace(connection, is_default=True)
            elif connection.is_default:
                self._clear_default(connection.workspace_id)
            self._connections[connection.id] = connection

    async def get_connection(self, connection_id: str) -> Connection | None:
        return self._connections.get(connection_id)

    async def list_connections(self, workspace_id: str) -> list[Connection]:
        return self._connections_of(workspace_id)

    async def update_connection(self, connection: Connection) -> None:
        with self._lock:
            current = self._require(self._connections, connection.id, "Connection")
            # The default flag moves only through set_default_connection, atomically.
            self._connections[connection.id] = replace(connection, is_default=current.is_default)

    async def set_default_connection(self, workspace_id: str, connection_id: str) -> None:
        with self._lock:
            target = self._connections.get(connection_id)
            if target is None or target.workspace_id != workspace_id:
                raise ResourceNotFound(f"Connection {connection_id} not found.")
            self._clear_default(workspace_id)
            self._connections[connection_id] = replace(target, is_default=True)

    async def remove_connection(self, connection_id: str) -> bool:
        with self._lock:
            removed = self._connections.pop(connection_id, None)
            if removed is None:
                return False
            remaining = self._connections_of(removed.workspace_id)
            if removed.is_default and remaining:
                first = remaining[0]
                self._connections[first.id] = replace(first, is_default=True)
            return True

    # -- templates
    async def put_template(self, template: Template) -> None:
        with self._lock:
            self._templates[(template.workspace_id, template.key)] = template

    async def get_template(self, workspace_id: str, key: str) -> Template | None:
        return self._templates.get((workspace_id, key))

    async def list_templates(self, workspace_id: str) -> list[Template]:
        found = [t for (ws, _), t in self._templates.items() if ws == workspace_id]
        return sorted(found, key=lambda t: t.key)

    async def delete_template(self, workspace_id: str, key: str) -> bool:
        with self._lock:
            return self._templates.pop((workspace_id, key), None) is not None

    # -- messages
    async def insert_messages(self, messages: Sequence[MessageRecord]) -> None:
        with self._lock:
            ids = [m.job_id for m in messages]
            if len(set(ids)) != len(ids) or any(i in self._messages for i in ids):
                raise AlreadyExists("A message with this job id already exists.")
            for message in messages:
                self._messages[message.job_id] = message

    async def update_messages(self, messages: Sequence[MessageRecord]) -> None:
        with self._lock:
            for message in messages:
                self._require(self._messages, message.job_id, "Message")
            for message in messages:
                self._messages[message.job_id] = message

    async def get_message(
        self, workspace_id: str, livemode: bool, job_id: str
    ) -> MessageRecord | None:
        message = self._messages.get(job_id)
        if message is None or message.workspace_id != workspace_id:
            return None
        return message if message.livemode == livemode else None

    # -- quota
    async def consume_quota(
        self, workspace_id: str, period: str, units: int, limit: int | None
    ) -> bool:
        with self._lock:
            used = self._quota.get((workspace_id, period), 0)
            if limit is not None and used + units > limit:
                return False
            self._quota[(workspace_id, period)] = used + units
            return True

    async def release_quota(self, workspace_id: str, period: str, units: int) -> None:
        with self._lock:
            used = self._quota.get((workspace_id, period), 0)
            self._quota[(workspace_id, period)] = max(0, used - units)

    async def quota_used(self, workspace_id: str, period: str) -> int:
        return self._quota.get((workspace_id, period), 0)

    # -- helpers (called with the lock held where they feed a write)
    def _connections_of(self, workspace_id: str) -> list[Connection]:
        found = [c for c in self._connections.values() if c.workspace_id == workspace_id]
        return sorted(found, key=lambda c: (c.created_at, c.id))

    def _clear_default(self, workspace_id: str) -> None:
        for connection in self._connections_of(workspace_id):
            if connection.is_default:
                self._connections[connection.id] = replace(connection, is_default=False)

    @staticmethod
    def _require(table: dict[str, V], key: str, kind: str) -> V:
        try:
            return table[key]
        except KeyError:
            raise ResourceNotFound(f"{kind} {key} not found.") from None
