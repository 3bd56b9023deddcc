"""The dashboard's compose form sends through ``Messenger.send``, audited (D32).

A send is not an admin change, and REST sends are not audit rows: there are millions. A
message a person typed into the dashboard is one, so :class:`Composer` wraps the façade's
``send`` in the audit log's one writer: the row names the signed-in user (``acting_as``
sets the actor), the action ``message.send`` and the message's id as its target.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .._access.principal import Principal
from .._clock import Clock
from .._models import SendResponse
from ..audit._actions import audited
from ..store.base import Store

__all__ = ["Composer"]

Send = Callable[[Principal, Mapping[str, object]], Awaitable[SendResponse]]


def _of_send(result: Any, arguments: Mapping[str, Any]) -> tuple[str | None, str]:
    return arguments["auth"].workspace_id, result.job_id


class Composer:
    """``send(auth, request)``: ``Messenger.send`` and one ``message.send`` audit row."""

    def __init__(self, store: Store, clock: Clock, send: Send) -> None:
        self._store = store
        self._clock = clock
        self._send = send

    @audited("message.send", _of_send, atomic=False)
    async def send(self, auth: Principal, request: Mapping[str, object]) -> SendResponse:
        return await self._send(auth, request)
