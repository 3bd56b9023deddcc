"""One JSON object per log line (``serve``/``worker --log-format json``).

Fields: ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``, ``message``,
``pid`` (which process: ``serve --workers N`` runs several), then
whichever of ``request_id``, ``job_id``, ``workspace_id`` and ``provider`` the record is about
(:mod:`._log_context`), and ``exception`` with the traceback when there is one. uvicorn's
access lines also give ``client``, ``method``, ``path`` and ``status`` as fields of their own.

The formatter only arranges: what the text may contain (escaped controls, masked secrets and
numbers) is :class:`~._logsafe.SafeLogFilter`'s job, which runs first on every handler.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

from .log_context import CONTEXT_FIELDS

__all__ = ["JsonLogFormatter"]


class JsonLogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        access = _access_fields(record)
        if access:
            line.update(access)
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = str(value)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = record.stack_info
        # ensure_ascii: a line is plain ASCII whatever a client sent.
        return json.dumps(line, ensure_ascii=True, default=str)


def _access_fields(record: logging.LogRecord) -> dict[str, Any] | None:
    # uvicorn.access: (client_addr, method, full_path, http_version, status_code).
    if record.name != "uvicorn.access":
        return None
    args = record.args
    if not isinstance(args, tuple) or len(args) != 5:
        return None
    client, method, path, version, status = args
    return {"client": client, "method": method, "path": path, "http_version": version,
            "status": status}  # fmt: skip
