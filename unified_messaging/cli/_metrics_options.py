"""``--metrics-token``, ``--metrics-bind`` and ``--metrics-workspace-labels`` for ``serve`` and
``worker`` (D30): Prometheus metrics, off unless one of the first two is given.

- ``--metrics-token TOKEN`` (or ``UM_METRICS_TOKEN``): ``serve`` answers ``GET /metrics`` on
  its own address to scrapers bearing this token.
- ``--metrics-bind HOST:PORT``: a listener of its own, in the same process, that serves only
  ``GET /metrics`` (with the token too when one is set); the API address then has none.
  ``worker`` serves its metrics this way only.

The token is a secret: it is never printed, and an error about it never quotes it. Passing
it in ``UM_METRICS_TOKEN`` keeps it out of the process list.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._args import UsageError

if TYPE_CHECKING:
    import asyncio

    import uvicorn

    from .._messenger import Messenger
    from .._observability.metrics import Metrics

__all__ = ["METRICS_TOKEN_ENV", "MetricsListener", "MetricsSettings", "add_metrics_options"]

METRICS_TOKEN_ENV: Final = "UM_METRICS_TOKEN"  # noqa: S105 - a variable's name, no secret
#: How long a scrape in flight may finish when the command stops.
_STOP_SECONDS: Final = 5

logger = logging.getLogger("unified_messaging.metrics")


def add_metrics_options(parser: argparse.ArgumentParser, *, on_app: bool = True) -> None:
    """The metrics options; ``on_app``: the command also serves an API (``serve``)."""
    group = parser.add_argument_group("metrics (Prometheus; off unless a token or bind is set)")
    group.add_argument(
        "--metrics-token",
        type=_token,
        metavar="TOKEN",
        help=(
            "serve GET /metrics to scrapers sending 'Authorization: Bearer TOKEN' "
            f"(16+ characters; default ${METRICS_TOKEN_ENV})"
            + ("" if on_app else "; needs --metrics-bind")
        ),
    )
    group.add_argument(
        "--metrics-bind",
        type=_bind,
        metavar="HOST:PORT",
        help="serve GET /metrics on a listener of its own, e.g. 127.0.0.1:9464"
        + (" (then not on the API address)" if on_app else ""),
    )
    group.add_argument(
        "--metrics-workspace-labels",
        action="store_true",
        help="label um_messages_total with the workspace id (off: a scrape names no customer)",
    )


def _token(text: str) -> str:
    from ..asgi._metrics import check_metrics_token

    try:
        return check_metrics_token(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None  # never echoes the token


def _bind(text: str) -> tuple[str, int]:
    host, sep, port = text.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464)"
        )
    return host, int(port)


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    """What the options asked for: ``token`` guards the scrape wherever it is served,
    ``bind`` is the listener of its own (``None``: on the API address, if a token is set)."""

    token: str | None
    bind: tuple[str, int] | None
    workspace_labels: bool

    @classmethod
    def from_args(cls, args: argparse.Namespace, *, on_app: bool = True) -> MetricsSettings:
        token: str | None = args.metrics_token
        if token is None:
            token = os.environ.get(METRICS_TOKEN_ENV, "").strip() or None
            if token is not None:
                try:
                    _token(token)
                except argparse.ArgumentTypeError as exc:
                    raise UsageError(METRICS_TOKEN_ENV, str(exc)) from None
        settings = cls(token, args.metrics_bind, args.metrics_workspace_labels)
        if not on_app and settings.token is not None and settings.bind is None:
            raise UsageError("--metrics-token", "the worker serves metrics only on --metrics-bind")
        if settings.workspace_labels and not settings.enabled:
            raise UsageError(
                "--metrics-workspace-labels", "needs --metrics-token or --metrics-bind"
            )
        return settings

    @property
    def enabled(self) -> bool:
        return self.token is not None or self.bind is not None

    @property
    def app_token(self) -> str | None:
        """The token for ``create_app``: ``/metrics`` is on the API address only without a
        listener of its own."""
        return self.token if self.bind is None else None

    def build(self) -> Metrics | None:
        """The messenger's metrics, or ``None`` when they are off."""
        if not self.enabled:
            return None
        from .._observability.prometheus import PrometheusMetrics

        return PrometheusMetrics(workspace_labels=self.workspace_labels)  # or MissingExtra


class MetricsListener:
    """The listener of ``--metrics-bind`` (nothing without it): :meth:`start` once the
    command's logging is set up, :meth:`stop` when it ends (also if it never started).

    A second uvicorn server on the command's event loop. It leaves SIGINT/SIGTERM to the
    command (the API's server, or the worker's handlers), which stops it with the rest."""

    def __init__(
        self, settings: MetricsSettings, messenger: Messenger, *, sock: socket.socket | None = None
    ) -> None:
        """``sock``: the listener's socket, bound already (by ``serve --workers``' parent,
        which shares it among its servers); else it is bound here, on ``start``."""
        self._settings = settings
        self._messenger = messenger
        self._bound = sock
        self._socket = ExitStack()
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._settings.bind is None:
            return
        import asyncio  # here: `--help` and usage errors import nothing heavy

        try:
            import uvicorn
        except ImportError:
            from .._errors import MissingExtra

            raise MissingExtra("--metrics-bind", extra="server", setting="--metrics-bind") from None
        from ..asgi._metrics import create_metrics_app
        from ._serve_socket import base_url, listening

        class _Listener(uvicorn.Server):
            @contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield  # the command owns the signals and stops this server itself

        config = uvicorn.Config(
            create_metrics_app(self._messenger, token=self._settings.token),
            lifespan="off",  # the messenger is the command's to open and close
            log_config=None,  # the command's logging, already set up
            access_log=False,  # a scrape every few seconds would drown the log
            proxy_headers=False,
            ws="none",
            timeout_graceful_shutdown=_STOP_SECONDS,
        )
        sock = self._bound
        if sock is None:
            host, port = self._settings.bind
            sock = self._socket.enter_context(listening(host, port, config.backlog))
            address, bound = sock.getsockname()[:2]
            logger.info("metrics on %s/metrics", base_url(address, bound, local=False))
        server = self._server = _Listener(config)
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="metrics listener")

    async def stop(self) -> None:
        try:
            if self._server is not None and self._task is not None:
                self._server.should_exit = True
                await self._task
        finally:
            self._socket.close()
