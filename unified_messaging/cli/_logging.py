"""The log set-up of ``serve`` and ``worker``: text or JSON lines, always safe.

Every handler escapes client text and masks secrets and phone numbers
(:class:`~unified_messaging._observability.logsafe.SafeLogFilter`), and copies what the
line is about (request, job, workspace, provider) onto it; ``--log-format json`` writes one
JSON object per line
(:class:`~unified_messaging._observability.json_log.JsonLogFormatter`) for log shippers.
Everything goes to stderr: stdout is the command's output.
"""

from __future__ import annotations

import argparse
import copy
from typing import Any

__all__ = ["add_log_options", "log_config"]

LOG_FORMATS = ("text", "json")


def add_log_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="text lines (default), or one JSON object per line with request_id, job_id, "
        "workspace_id and provider where they apply",
    )
    parser.add_argument(
        "--log-full-numbers",
        action="store_true",
        help="log phone numbers in full (for debugging; by default only their last 4 digits)",
    )


def log_config(log_format: str = "text", *, full_numbers: bool = False) -> dict[str, Any]:
    """A :func:`logging.config.dictConfig` dictionary (uvicorn's own, made safe), for
    uvicorn's ``log_config`` or for a process that runs no uvicorn (``worker``)."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    # Access lines go to stderr with the rest of the logs: stdout is the command's output.
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    # Every line, ours and uvicorn's, has client text escaped, secrets and numbers masked,
    # and the fields of what it is about.
    config["filters"] = {
        "safe": {
            "()": "unified_messaging._observability.logsafe.SafeLogFilter",
            "full_numbers": full_numbers,
        },
        "context": {"()": "unified_messaging._observability.log_context.LogContextFilter"},
    }
    for handler in config["handlers"].values():
        handler["filters"] = ["context", "safe"]
    if log_format == "json":
        json_formatter = {"()": "unified_messaging._observability.json_log.JsonLogFormatter"}
        config["formatters"] = {"default": json_formatter, "access": dict(json_formatter)}
    # Our own loggers (and asyncio's) through the same handler, instead of logging's
    # last-resort one, which no filter reaches.
    config["loggers"]["unified_messaging"] = {"handlers": ["default"], "level": "INFO"}
    config["loggers"]["unified_messaging"]["propagate"] = False
    config["root"] = {"handlers": ["default"], "level": "WARNING"}
    return config
