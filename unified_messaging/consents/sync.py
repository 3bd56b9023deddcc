"""``sync_messenger.consents``: the blocking twin of :class:`~.service.Consents`, for
synchronous hosts. Each method runs its coroutine twin on the ``SyncMessenger``'s loop
thread, with the same parameters and answers."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .models import ConsentCreate, ConsentDetail, ConsentOut, ConsentPage, ConsentSearch
from .rules import ConsentPolicy

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._domain import Workspace
    from .service import Consents

__all__ = ["SyncConsents"]

T = TypeVar("T")


class Runner(Protocol):
    """Protocol: runs a coroutine to its end on the loop thread (``SyncMessenger._run``)."""

    def __call__(self, coroutine: Coroutine[Any, Any, T], /) -> T: ...


class SyncConsents:
    """Blocking :class:`~.service.Consents`: the same methods, without ``await``."""

    def __init__(self, consents: Consents, run: Runner) -> None:
        self._consents = consents
        self._run = run

    def create(self, auth: Principal, consent: ConsentCreate | Mapping[str, object]) -> ConsentOut:
        return self._run(self._consents.create(auth, consent))

    def list(
        self, auth: Principal, search: ConsentSearch | Mapping[str, object] | None = None
    ) -> ConsentPage:
        return self._run(self._consents.list(auth, search))

    def get(self, auth: Principal, consent_id: str) -> ConsentDetail:
        return self._run(self._consents.get(auth, consent_id))

    def set_policy(self, workspace_id: str, policy: ConsentPolicy) -> Workspace:
        return self._run(self._consents.set_policy(workspace_id, policy))
