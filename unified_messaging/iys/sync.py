"""``sync_messenger.iys``: the blocking twin of :class:`~.service.Iys`, for synchronous
hosts. Each method runs its coroutine twin on the ``SyncMessenger``'s loop thread."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..consents.sync import Runner
from .models import IysConnect, IysConnectionOut, IysSyncReport

if TYPE_CHECKING:
    from .service import Iys

__all__ = ["SyncIys"]


class SyncIys:
    """Blocking :class:`~.service.Iys`: the same methods, without ``await``."""

    def __init__(self, iys: Iys, run: Runner) -> None:
        self._iys = iys
        self._run = run

    def connect(
        self,
        workspace_id: str,
        connection: IysConnect | Mapping[str, object],
        *,
        verify: bool = True,
    ) -> IysConnectionOut:
        return self._run(self._iys.connect(workspace_id, connection, verify=verify))

    def get(self, workspace_id: str) -> IysConnectionOut:
        return self._run(self._iys.get(workspace_id))

    def disconnect(self, workspace_id: str) -> IysConnectionOut:
        return self._run(self._iys.disconnect(workspace_id))

    def sync(self, workspace_id: str) -> IysSyncReport:
        return self._run(self._iys.sync(workspace_id))
