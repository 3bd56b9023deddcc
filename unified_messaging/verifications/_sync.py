"""``SyncVerifications``: the blocking twin of :class:`Verifications`, as
``SyncMessenger.verifications`` (a Django view, a script).

Its methods are made from the async service's own (:func:`_blocking`), so the two cannot
drift apart; each runs on the ``SyncMessenger``'s loop thread through its ``run``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from ._guard import PumpingGuard
from ._guard_rules import GuardSettings
from ._service import Verifications

__all__ = ["SyncVerifications"]

P = ParamSpec("P")
T = TypeVar("T")


class _Runner(Protocol):
    def __call__(self, coroutine: Coroutine[Any, Any, T], /) -> T: ...


def _blocking(
    method: Callable[Concatenate[Verifications, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[SyncVerifications, P], T]:
    name = method.__name__

    @functools.wraps(method)
    def twin(self: SyncVerifications, /, *args: P.args, **kwargs: P.kwargs) -> T:
        bound: Callable[P, Coroutine[Any, Any, T]] = getattr(self.service, name)
        return self._run(bound(*args, **kwargs))

    twin.__qualname__ = f"SyncVerifications.{name}"
    twin.__module__ = __name__
    return twin


class SyncVerifications:
    """Blocking twin of :class:`Verifications`: the same methods, without ``await``."""

    def __init__(self, service: Verifications, run: _Runner) -> None:
        self.service = service
        self._run = run
        #: The SMS-pumping guard's settings, blocking.
        self.guard = SyncPumpingGuard(service.guard, run)

    def __repr__(self) -> str:
        return "SyncVerifications()"

    start = _blocking(Verifications.start)
    check = _blocking(Verifications.check)
    get = _blocking(Verifications.get)
    cancel = _blocking(Verifications.cancel)
    settings = _blocking(Verifications.settings)
    update_settings = _blocking(Verifications.update_settings)
    set_settings = _blocking(Verifications.set_settings)
    stats = _blocking(Verifications.stats)
    recent = _blocking(Verifications.recent)


class SyncPumpingGuard:
    """Blocking twin of :class:`PumpingGuard`'s settings."""

    def __init__(self, guard: PumpingGuard, run: _Runner) -> None:
        self._guard = guard
        self._run = run

    def __repr__(self) -> str:
        return "SyncPumpingGuard()"

    @functools.wraps(PumpingGuard.settings)
    def settings(self, workspace_id: str) -> GuardSettings:
        return self._run(self._guard.settings(workspace_id))

    @functools.wraps(PumpingGuard.update_settings)
    def update_settings(self, workspace_id: str, **changes: Any) -> GuardSettings:
        return self._run(self._guard.update_settings(workspace_id, **changes))

    @functools.wraps(PumpingGuard.set_settings)
    def set_settings(self, workspace_id: str, settings: GuardSettings) -> GuardSettings:
        return self._run(self._guard.set_settings(workspace_id, settings))
