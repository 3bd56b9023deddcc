"""``SyncMessenger``: the façade for synchronous hosts (Django views, Flask, scripts).

It owns one event loop in one background thread and runs every call of the async
:class:`Messenger` there, so adapters' connection pools and the store's connections keep
living on the loop that made them, whichever thread calls.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable, Mapping
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Self, TypeVar

from ._admin import CreatedApiKey, QuotaUsage
from ._domain import DEFAULT_DLR_TIMEOUT, ApiKey, Connection, Template, Workspace
from ._messenger import BulkInput, Messenger, Principal, SendInput
from ._models import BulkResponse, SendResponse, StatusRecord
from ._types import IysMode, ProviderCode

__all__ = ["SyncMessenger"]

T = TypeVar("T")


class SyncMessenger:
    """Blocking twin of :class:`Messenger`: the same methods, without ``await``.

    ``SyncMessenger(messenger)`` wraps one you built; ``SyncMessenger()`` builds a default
    one. Call :meth:`close` (or use ``with``) to stop the background loop.
    """

    def __init__(self, messenger: Messenger | None = None) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="unified-messaging-loop", daemon=True
        )
        self._thread.start()
        self._closed = False
        self.messenger = messenger if messenger is not None else self._run(_build())
        self._run(self.messenger.open())

    def __repr__(self) -> str:
        return f"SyncMessenger({self.messenger!r})"

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coroutine.close()
            raise RuntimeError("SyncMessenger is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        if self._closed:
            return
        try:
            self._run(self.messenger.aclose())
        finally:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- sending
    def authenticate(self, api_key: str | None) -> Principal:
        return self._run(self.messenger.authenticate(api_key))

    def principal(self, workspace_id: str, *, livemode: bool) -> Principal:
        return self._run(self.messenger.principal(workspace_id, livemode=livemode))

    def send(self, auth: Principal, request: SendInput) -> SendResponse:
        return self._run(self.messenger.send(auth, request))

    def send_bulk(self, auth: Principal, request: BulkInput) -> BulkResponse:
        return self._run(self.messenger.send_bulk(auth, request))

    def get_message(self, auth: Principal, job_id: str) -> StatusRecord:
        return self._run(self.messenger.get_message(auth, job_id))

    def list_providers(self, auth: Principal) -> list[Connection]:
        return self._run(self.messenger.list_providers(auth))

    # -- admin
    def create_workspace(self, name: str, *, monthly_quota: int | None = None) -> Workspace:
        return self._run(self.messenger.create_workspace(name, monthly_quota=monthly_quota))

    def get_workspace(self, workspace_id: str) -> Workspace:
        return self._run(self.messenger.get_workspace(workspace_id))

    def list_workspaces(self) -> list[Workspace]:
        return self._run(self.messenger.list_workspaces())

    def set_monthly_quota(self, workspace_id: str, monthly_quota: int | None) -> Workspace:
        return self._run(self.messenger.set_monthly_quota(workspace_id, monthly_quota))

    def quota_usage(self, workspace_id: str) -> QuotaUsage:
        return self._run(self.messenger.quota_usage(workspace_id))

    def create_api_key(
        self,
        workspace_id: str,
        *,
        livemode: bool = False,
        name: str | None = None,
        expires_at: datetime | None = None,
        rate_limit: float | None = None,
        rate_burst: int | None = None,
    ) -> CreatedApiKey:
        return self._run(
            self.messenger.create_api_key(
                workspace_id,
                livemode=livemode,
                name=name,
                expires_at=expires_at,
                rate_limit=rate_limit,
                rate_burst=rate_burst,
            )
        )

    def list_api_keys(self, workspace_id: str) -> list[ApiKey]:
        return self._run(self.messenger.list_api_keys(workspace_id))

    def revoke_api_key(self, key_id: str) -> ApiKey:
        return self._run(self.messenger.revoke_api_key(key_id))

    def add_connection(
        self,
        workspace_id: str,
        provider: ProviderCode,
        *,
        credentials: Mapping[str, str] | None = None,
        default_sender: str | None = None,
        approved_senders: Iterable[str] = (),
        iys_mode: IysMode = "informational",
        make_default: bool = False,
        dlr_timeout: timedelta = DEFAULT_DLR_TIMEOUT,
        turkish_shift: bool = True,
        base_url: str | None = None,
    ) -> Connection:
        return self._run(
            self.messenger.add_connection(
                workspace_id,
                provider,
                credentials=credentials,
                default_sender=default_sender,
                approved_senders=approved_senders,
                iys_mode=iys_mode,
                make_default=make_default,
                turkish_shift=turkish_shift,
                dlr_timeout=dlr_timeout,
                base_url=base_url,
            )
        )

    def list_connections(self, workspace_id: str) -> list[Connection]:
        return self._run(self.messenger.list_connections(workspace_id))

    def get_connection(self, connection_id: str) -> Connection:
        return self._run(self.messenger.get_connection(connection_id))

    def rotate_credentials(self) -> int:
        return self._run(self.messenger.rotate_credentials())

    def set_default_connection(self, connection_id: str) -> Connection:
        return self._run(self.messenger.set_default_connection(connection_id))

    def remove_connection(self, connection_id: str) -> None:
        self._run(self.messenger.remove_connection(connection_id))

    def set_template(
        self,
        workspace_id: str,
        key: str,
        body: str,
        *,
        description: str | None = None,
        provider_template: str | None = None,
        provider_language: str | None = None,
    ) -> Template:
        return self._run(
            self.messenger.set_template(
                workspace_id,
                key,
                body,
                description=description,
                provider_template=provider_template,
                provider_language=provider_language,
            )
        )

    def get_template(self, workspace_id: str, key: str) -> Template:
        return self._run(self.messenger.get_template(workspace_id, key))

    def list_templates(self, workspace_id: str) -> list[Template]:
        return self._run(self.messenger.list_templates(workspace_id))

    def delete_template(self, workspace_id: str, key: str) -> None:
        self._run(self.messenger.delete_template(workspace_id, key))


async def _build() -> Messenger:
    # Built on the loop thread so anything it creates binds to that loop.
    return Messenger()
