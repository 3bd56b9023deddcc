"""What a log line is about: the request, job, workspace and provider in hand.

``serve``'s JSON log lines carry these fields (``--log-format json``), so a line can be
found by the ``X-Request-ID`` a client saw or by a job id. They live in context variables:
the REST edge binds ``request_id`` and, once the key is known, ``workspace_id``; the worker
binds the ``job_id`` and ``workspace_id`` of the item it runs. Each request and each work
item runs in a task of its own, so what one binds is never seen by another.

A record may also carry a field itself (``logger.info(..., extra={"provider": "sms_a"})``),
which wins over the context.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Final

__all__ = ["CONTEXT_FIELDS", "LogContextFilter", "bind_log_context", "log_context"]

#: The fields, in the order a JSON line gives them.
CONTEXT_FIELDS: Final = ("request_id", "job_id", "workspace_id", "provider")
_KNOWN: Final = frozenset(CONTEXT_FIELDS)

_NOTHING: Final[Mapping[str, str]] = MappingProxyType({})
_CONTEXT: ContextVar[Mapping[str, str]] = ContextVar(
    "unified_messaging.log_context", default=_NOTHING
)


def bind_log_context(**fields: str | None) -> None:
    """Add ``fields`` (of :data:`CONTEXT_FIELDS`; ``None`` values are skipped) to what the
    current task's log lines are about, for the rest of the task."""
    if not _KNOWN.issuperset(fields):  # twice per request: no sets built when all is well
        unknown = set(fields) - _KNOWN
        raise ValueError(f"not log context fields: {sorted(unknown)}")
    given = {name: value for name, value in fields.items() if value is not None}
    if given:
        _CONTEXT.set({**_CONTEXT.get(), **given})


def log_context() -> Mapping[str, str]:
    """The fields bound in the current task."""
    return _CONTEXT.get()


class LogContextFilter(logging.Filter):
    """Copies the bound fields onto each record (as attributes), unless it has its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _CONTEXT.get().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True
