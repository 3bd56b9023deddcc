"""``serve``'s protocols skip uvicorn's access-log work when ``uvicorn.access`` would drop
every line (``--log-level warning``), and keep it whenever a line would be written.
(That the lines themselves are written at INFO: ``test_serve_logs.py``.)"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, cast

import pytest
import uvicorn
from uvicorn.server import ServerState

from unified_messaging.cli._serve_http import Http
from unified_messaging.cli._serve_limits import ServeLimits
from unified_messaging.cli._serve_protocols import guarded_protocol

ACCESS = logging.getLogger("uvicorn.access")


async def _app(scope: Any, receive: Any, send: Any) -> None:  # never called
    raise AssertionError


@pytest.fixture
def access_logger() -> Iterator[logging.Logger]:
    """``uvicorn.access`` with a handler (as ``serve``'s log config gives it), restored after."""
    level, handlers = ACCESS.level, list(ACCESS.handlers)
    ACCESS.addHandler(logging.NullHandler())
    try:
        yield ACCESS
    finally:
        ACCESS.setLevel(level)
        ACCESS.handlers[:] = handlers


def _protocol_logs_access(http: Http) -> bool:
    config = uvicorn.Config(_app, lifespan="off", log_config=None, ws="none")
    protocol_class = cast(Any, guarded_protocol(ServeLimits(max_connections=10), http))
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={})
    return bool(protocol.access_log)


@pytest.mark.parametrize("http", ["h11", "httptools"])
async def test_access_log_work_is_skipped_above_info(
    http: Http, access_logger: logging.Logger
) -> None:
    access_logger.setLevel(logging.WARNING)
    assert not _protocol_logs_access(http)


@pytest.mark.parametrize("http", ["h11", "httptools"])
@pytest.mark.parametrize("level", [logging.INFO, logging.DEBUG])
async def test_access_log_is_kept_at_info_and_below(
    http: Http, level: int, access_logger: logging.Logger
) -> None:
    access_logger.setLevel(level)
    assert _protocol_logs_access(http)
