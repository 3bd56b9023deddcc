"""The audit log's vocabulary and its one writer (D32): action names, the query, :func:`audited`.

Every admin method that changes something carries :func:`audited` with its action name; the
decorator is the only code that builds and stores an audit event, so no method can record a
different shape, forget the actor, or write two rows:

- the actor and client address come from :func:`~unified_messaging.audit._context.current_actor`
  (an edge sets them with ``acting_as``; unset reads as ``library``);
- the row is appended inside ``Store.atomic()`` together with the change itself, so both
  commit or neither does; a refused change (it raises) writes no row;
- an admin method called by another one records nothing of its own: one call, one row;
- a row holds ids only (workspace, target), never a secret, a credential or a body.

There is no way to change or delete a row: the store offers append and list, nothing else.
Free of pydantic, so the command line's ``--help`` (which reads ``webhooks._admin``) stays
light; the names are in ``_audit_names``, the records and the query in ``_audit``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Concatenate, Final, ParamSpec, Protocol, TypeVar

from ._context import current_actor
from ._names import AUDIT_ACTIONS, MAX_FIELD_LENGTH, AuditAction

if TYPE_CHECKING:
    from .._clock import Clock
    from ..store.base import Store

__all__ = [
    "AUDIT_ACTIONS",
    "MAX_FIELD_LENGTH",
    "AuditAction",
    "audited",
    "audited_action",
    "of_argument",
    "of_record",
    "of_workspace",
]

# ----------------------------------------------------------------------------- recording


class _Admin(Protocol):
    """What a class whose methods are :func:`audited` has: a store and a clock."""

    _store: Store
    _clock: Clock


#: What a row is about: ``(workspace_id, target)``, from the method's result and arguments.
Subject = Callable[[Any, Mapping[str, Any]], tuple[str | None, str]]

A = TypeVar("A", bound=_Admin)
P = ParamSpec("P")
R = TypeVar("R")

#: Set while an audited method runs, so one it calls records nothing of its own.
_recording: ContextVar[bool] = ContextVar("um_audit_recording", default=False)
_ACTION_ATTRIBUTE: Final = "__um_audit_action__"


def audited(
    action: AuditAction, subject: Subject, *, atomic: bool = True
) -> Callable[
    [Callable[Concatenate[A, P], Awaitable[R]]],
    Callable[Concatenate[A, P], Coroutine[Any, Any, R]],
]:
    """Record one :class:`AuditEvent` of ``action`` each time the method succeeds (D32).

    ``subject(result, arguments)`` names the workspace and the target from what the method
    returned and the arguments it was called with (by parameter name).

    ``atomic``: the change and its row commit in one store transaction (``Store.atomic``).
    ``False`` (vault rotation: many rows across every workspace, which one transaction would
    hold the write lock for) appends the row right after the change succeeded.
    """

    def decorate(
        method: Callable[Concatenate[A, P], Awaitable[R]],
    ) -> Callable[Concatenate[A, P], Coroutine[Any, Any, R]]:
        signature = inspect.signature(method)

        @functools.wraps(method)
        async def recorded(self: A, /, *args: P.args, **kwargs: P.kwargs) -> R:
            if _recording.get():
                return await method(self, *args, **kwargs)
            token = _recording.set(True)
            try:
                if not atomic:
                    result = await method(self, *args, **kwargs)
                    await _append(self, action, subject, signature, result, args, kwargs)
                    return result
                async with self._store.atomic():
                    result = await method(self, *args, **kwargs)
                    await _append(self, action, subject, signature, result, args, kwargs)
                return result
            finally:
                _recording.reset(token)

        setattr(recorded, _ACTION_ATTRIBUTE, action)
        return recorded

    return decorate


def audited_action(method: object) -> AuditAction | None:
    """The action a method records (it carries :func:`audited`), else ``None``."""
    action: AuditAction | None = getattr(method, _ACTION_ATTRIBUTE, None)
    return action


async def _append(
    owner: _Admin,
    action: AuditAction,
    subject: Subject,
    signature: inspect.Signature,
    result: object,
    args: tuple[object, ...],
    kwargs: Mapping[str, object],
) -> None:
    from .._ids import new_id
    from ._events import AuditEvent

    arguments = signature.bind(owner, *args, **kwargs).arguments
    workspace_id, target = subject(result, arguments)
    actor = current_actor()
    event = AuditEvent(
        id=new_id("aud"),
        at=owner._clock.now(),
        actor=_bounded(actor.name),
        workspace_id=None if workspace_id is None else _bounded(workspace_id),
        action=action,
        target=_bounded(target),
        client_address=None if actor.client_address is None else _bounded(actor.client_address),
    )
    await owner._store.append_audit_event(event)


def _bounded(text: str) -> str:
    from .._text import scrubbed

    # A character the store cannot keep (NUL, a lone surrogate) in an actor's name must not
    # make the change it records fail: it is replaced, as anywhere else text is stored.
    return scrubbed(str(text)[:MAX_FIELD_LENGTH])


# Subjects shared by several methods: the record a method returns names its workspace.


def of_workspace(workspace: Any, _: Mapping[str, Any]) -> tuple[str | None, str]:
    """A method returning a ``Workspace``."""
    return workspace.id, workspace.id


def of_record(record: Any, _: Mapping[str, Any]) -> tuple[str | None, str]:
    """A method returning a record with ``workspace_id`` and ``id`` (a key, a connection, a
    webhook endpoint)."""
    return record.workspace_id, record.id


def of_argument(name: str) -> Subject:
    """A method whose argument ``name`` is the target, in its ``workspace_id`` argument."""

    def subject(_: Any, arguments: Mapping[str, Any]) -> tuple[str | None, str]:
        return arguments["workspace_id"], str(arguments[name])

    return subject
