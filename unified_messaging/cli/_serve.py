"""``serve``: the REST app under uvicorn, on the configured store, vault and rate limiter.

Start-up order: open the Messenger (which creates or migrates the database, so a broken
database fails before anything listens), bind the socket (so ``--port 0`` can report the
port it got), set up the ``--demo`` workspace, print what a client needs, then serve until
SIGINT or SIGTERM. Logs go to stderr; stdout carries only what the command prints, so
``--json`` output stays one parseable line.

What a client may hold (connections, keep-alive, head and body time-outs) is enforced by the
protocol in ``_serve_http``; what a log line may contain, by ``SafeLogFilter`` on every
handler of the log config made here.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from types import FrameType
from typing import TYPE_CHECKING

from .._domain import DEFAULT_SUBMIT_TIMEOUT
from .._types import ALL_PROVIDERS
from ._args import (
    Subparsers,
    add_command,
    finite_number,
    port_number,
    positive_seconds,
)
from ._context import (
    SERVER_CACHE_TTL,
    breaker_store,
    iys_settings,
    load_vault,
    open_store,
    public_url_setting,
    rate_limiter,
    send_pacer,
    stop_words_setting,
    webhook_policy,
)
from ._heap import settle_heap
from ._logging import add_log_options, log_config
from ._metrics_options import MetricsListener, MetricsSettings, add_metrics_options
from ._output import JsonObject, Report, emit
from ._serve_limits import (
    DEFAULT_BODY_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEP_ALIVE_TIMEOUT,
    ServeLimits,
    default_max_connections,
)
from ._serve_socket import base_url, listening

if TYPE_CHECKING:
    import uvicorn

    from .._messenger import Messenger
    from ._serve_workers import Ready

__all__ = ["add_serve"]

#: How long open requests may finish after SIGINT/SIGTERM before they are cut.
_GRACEFUL_SECONDS = 10
_DEMO_SENDER = "DEMO"
#: The demo workspace's name: a later ``--demo`` on the same database takes it up again.
_DEMO_WORKSPACE = "demo"
#: The name of every test key ``--demo`` makes (shown by ``keys list`` and the dashboard).
_DEMO_KEY = "demo"
#: The dashboard user of ``serve --demo``, signed in by the printed one-time link.
_DEMO_OPERATOR = "demo@example.com"


def add_serve(commands: Subparsers) -> None:
    parser = add_command(
        commands,
        "serve",
        help="run the REST API with uvicorn",
        description=(
            "Serve the /v1 REST API. The database is created or migrated on start. With "
            "--demo, also create a test-mode workspace with simulated connections for all "
            "seven providers and print its API key and a ready curl line."
        ),
        run=_run,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port_number, default=8000, help="port to bind (default 8000; 0: any free)"
    )
    parser.add_argument(
        "--demo", action="store_true", help="create a demo workspace with a test key first"
    )
    parser.add_argument(
        "--redis-url",
        metavar="URL",
        help="shared rate limits, circuit breakers and send rates in Redis (default $UM_REDIS_URL)",
    )
    parser.add_argument(
        "--trusted-proxy",
        metavar="CIDR",
        action="append",
        default=[],
        help="a reverse proxy whose X-Forwarded-For is believed (repeat for more)",
    )
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="where users reach this server (default $UM_PUBLIC_URL); an https:// URL makes "
        "the dashboard's cookies Secure and sends HSTS even if the proxy does not say HTTPS",
    )
    parser.add_argument(
        "--allowed-host",
        metavar="NAME",
        action="append",
        default=[],
        help="a Host name /mcp answers to, with any port (repeat for more; default: the "
        "names of the --host address); others get 421",
    )
    parser.add_argument(
        "--allowed-origin",
        metavar="ORIGIN",
        action="append",
        default=[],
        help="a browser Origin /mcp accepts besides the allowed hosts' own pages "
        "(repeat for more); others get 403",
    )
    parser.add_argument(
        "--no-worker",
        action="store_true",
        help="run no background worker in the server (run `unified-messaging worker` apart)",
    )
    parser.add_argument(
        "--workers",
        type=_positive_count,
        metavar="N",
        default=1,
        help="server processes on the one port (default 1); with more than one, the worker "
        "runs in a process of its own beside them",
    )
    parser.add_argument(
        "--http",
        choices=("auto", "h11", "httptools"),
        default="auto",
        help="the HTTP/1.1 parser (default auto: httptools when installed, else h11); "
        "both carry the limits below",
    )
    parser.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="info",
        help="uvicorn's log level (default info)",
    )
    add_log_options(parser)
    add_metrics_options(parser)
    parser.add_argument(
        "--submit-timeout",
        type=positive_seconds,
        metavar="SECONDS",
        default=DEFAULT_SUBMIT_TIMEOUT,
        help=(
            "settle a send whose outcome was never stored (the process died mid-call) as "
            "unknown after this long; never re-sent (default 120)"
        ),
    )
    _add_limit_options(parser)


def _add_limit_options(parser: argparse.ArgumentParser) -> None:
    limits = parser.add_argument_group("limits on clients")
    limits.add_argument(
        "--max-connections",
        type=_positive_count,
        metavar="N",
        help="open connections at most; more get a 503 and are closed "
        "(default 1000, or less if `ulimit -n` is lower)",
    )
    limits.add_argument(
        "--keep-alive-timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        default=DEFAULT_KEEP_ALIVE_TIMEOUT,
        help=f"close a connection idle this long between requests "
        f"(default {DEFAULT_KEEP_ALIVE_TIMEOUT:g})",
    )
    limits.add_argument(
        "--header-timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        default=DEFAULT_HEADER_TIMEOUT,
        help=f"a request head must arrive within this long (default {DEFAULT_HEADER_TIMEOUT:g})",
    )
    limits.add_argument(
        "--body-timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        default=DEFAULT_BODY_TIMEOUT,
        help=f"a whole request body must arrive within this long after its head "
        f"(default {DEFAULT_BODY_TIMEOUT:g})",
    )


def _positive_seconds(text: str) -> float:
    number = finite_number(text)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return number


def _positive_count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def _limits(args: argparse.Namespace) -> ServeLimits:
    return ServeLimits(
        max_connections=args.max_connections or default_max_connections(),
        keep_alive_timeout=args.keep_alive_timeout,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
    )


def _run(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: F401 - fail here, with the hint, not half-way through start-up

        from ..asgi import create_app  # noqa: F401
    except ImportError:
        from .._errors import MissingExtra

        raise MissingExtra("serve", extra="server", setting="serve") from None
    from ._serve_uvicorn import check_uvicorn

    check_uvicorn()  # before the store opens or a child starts
    if args.http == "httptools":
        from ._serve_protocols import httptools_installed

        if not httptools_installed():
            from .._errors import MissingExtra

            raise MissingExtra("serve --http httptools", extra="server", setting="serve")
    public_url_setting(args.public_url)  # a wrong one fails here, before any child starts
    import asyncio

    if args.workers > 1:
        from ._serve_workers import serve_many

        serve_many(args, start_up=_start_up, server=serve_child, stop_seconds=_GRACEFUL_SECONDS)
        return 0
    asyncio.run(_serve(args))
    return 0


def serve_child(
    args: argparse.Namespace,
    sock: socket.socket,
    metrics_sock: socket.socket | None,
    ready: Ready,
) -> None:
    """One server process of ``serve --workers N``: the app on the parent's socket, with no
    worker loop (it runs beside the servers) and nothing printed (the parent does that once
    every server has said ``ready``). Its loop takes one connection from the shared socket
    at a time, so the servers share a burst of new connections (``_serve_accept``)."""
    import asyncio

    from ._serve_accept import SharedSocketLoop

    with asyncio.Runner(loop_factory=SharedSocketLoop) as runner:
        runner.run(_serve(args, bound=(sock, metrics_sock), ready=ready))


async def _serve(
    args: argparse.Namespace,
    *,
    bound: tuple[socket.socket, socket.socket | None] | None = None,
    ready: Ready | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM. ``bound``: the sockets ``serve --workers`` bound (the
    API's, and ``--metrics-bind``'s): this process is one of its children, and writes to
    ``ready`` once it accepts connections."""
    import asyncio

    import uvicorn

    from .._messenger import Messenger
    from ..asgi import create_app
    from ._serve_hosts import allowed_hosts, allowed_origins
    from ._serve_http import accept_errors_reported
    from ._serve_protocols import guarded_protocol, resolve_http

    public_url = public_url_setting(args.public_url)
    vault = load_vault()
    limiter = rate_limiter(args)
    breakers = breaker_store(args)
    pacer = send_pacer(args)  # D27
    metrics = MetricsSettings.from_args(args)  # D30
    messenger = Messenger(
        open_store(args, cache_ttl=SERVER_CACHE_TTL),
        vault=vault,
        rate_limiter=limiter,
        webhook_policy=webhook_policy(demo=args.demo),
        submit_timeout=args.submit_timeout,
        breaker_store=breakers,
        metrics=metrics.build(),
        pacer=pacer,
        stop_words=stop_words_setting(),
        iys=iys_settings(),
    )
    listener = MetricsListener(metrics, messenger, sock=bound[1] if bound else None)
    limits = _limits(args)
    # D25: /mcp answers the names this server is reached by, not any Host.
    hosts = allowed_hosts(args.host, args.allowed_host, public_url)
    try:
        await messenger.open()
        config = uvicorn.Config(
            create_app(
                messenger,
                trusted_proxies=args.trusted_proxy,
                mcp_allowed_hosts=hosts,
                mcp_allowed_origins=allowed_origins(hosts, args.allowed_origin),
                worker=not args.no_worker and bound is None,
                metrics_token=metrics.app_token,
                dashboard=_dashboard_installed(),
                public_url=public_url,
            ),
            host=args.host,
            port=args.port,
            lifespan="on",
            log_level=args.log_level,
            log_config=log_config(args.log_format, full_numbers=args.log_full_numbers),
            # The app decides whom to believe about X-Forwarded-For (D18, --trusted-proxy);
            # uvicorn's own proxy handling would rewrite the client address before it looks.
            proxy_headers=False,
            timeout_graceful_shutdown=_GRACEFUL_SECONDS,
            http=guarded_protocol(limits, resolve_http(args.http)),
            # The app has no WebSocket route, and an upgraded connection would leave the
            # limits above (uvicorn hands it to another protocol).
            ws="none",
        )
        await listener.start()  # after uvicorn.Config: it set up the logging
        loop = asyncio.get_running_loop()
        with (
            _socket(args, config.backlog, bound) as sock,
            accept_errors_reported(loop, limits.report_every),
        ):
            if bound is None:
                report = await _start_up(messenger, args, sock)
                if report is not None:
                    emit(report, as_json=args.json)
            settle_heap()
            with _clean_exit_on_signals():
                await _announcing_server(config, ready).serve(sockets=[sock])
    finally:
        # The app's lifespan closes the messenger too; closing twice is harmless, and this
        # one also covers a start-up that failed before the lifespan ran.
        await listener.stop()
        await messenger.aclose()
        if limiter is not None:
            await limiter.aclose()
        if breakers is not None:
            await breakers.aclose()
        if pacer is not None:
            await pacer.aclose()


def _socket(
    args: argparse.Namespace,
    backlog: int,
    bound: tuple[socket.socket, socket.socket | None] | None,
) -> AbstractContextManager[socket.socket]:
    if bound is None:
        return listening(args.host, args.port, backlog)
    return nullcontext(bound[0])  # the parent's: it closes it


def _announcing_server(config: uvicorn.Config, ready: Ready | None) -> uvicorn.Server:
    """uvicorn's server, which says so on ``ready`` once it accepts connections."""
    import uvicorn

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if ready is not None and not self.should_exit:
                with suppress(OSError):  # a restarted server: the parent no longer listens
                    ready.send_bytes(b"ready")

    return _Server(config)


async def _start_up(
    messenger: Messenger, args: argparse.Namespace, sock: socket.socket
) -> Report | None:
    """What ``serve`` does once its socket listens and before it serves, in one process or
    in the parent of ``--workers``: log the address, set up ``--demo``; the report to print
    (``None``: nothing to print)."""
    address, port = sock.getsockname()[:2]
    url = base_url(args.host, port)
    logging.getLogger("uvicorn.error").info(
        "Uvicorn running on %s (Press CTRL+C to quit)",
        base_url(address, port, local=False),
    )
    if args.demo:
        from ..audit._context import CLI, acting_as

        with acting_as(CLI):  # the demo's set-up is this command's change (D32)
            return await _demo(messenger, url)
    if args.json:
        return Report({"url": url}, url)
    return None


def _dashboard_installed() -> bool:
    """``serve`` serves /dashboard when the ``dashboard`` extra is installed (D31)."""
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("jinja2", "argon2"))


async def _demo(messenger: Messenger, url: str) -> Report:
    from .._demo import DEMO_TEMPLATES, add_demo_templates
    from ..testing import create_testbed

    # One demo workspace per database: a later --demo run takes it up again with a new test
    # key (keys are shown once), instead of adding a workspace each time.
    workspaces = await messenger.workspaces.list()
    found = next((w for w in workspaces if w.name == _DEMO_WORKSPACE), None)
    if found is None:
        bed = await create_testbed(
            messenger=messenger, sender=_DEMO_SENDER, name=_DEMO_WORKSPACE, key_name=_DEMO_KEY
        )
        workspace, api_key = bed.workspace, bed.api_key
    else:
        workspace = found
        api_key = (await messenger.keys.create(found.id, livemode=False, name=_DEMO_KEY)).secret
    # The templates docs/rest.md's examples send with.
    await add_demo_templates(messenger, workspace.id)
    data: JsonObject = {"workspace_id": workspace.id, "api_key": api_key, "url": url}
    dashboard: tuple[str, ...] = ()
    if _dashboard_installed():
        link = url + "/dashboard" + await _demo_login_link(messenger)
        data["dashboard_login_url"] = link
        dashboard = ("Dashboard (a one-time sign-in link for the demo operator):", f"  {link}", "")
    lines = (
        f"Demo workspace {workspace.id}, in test mode: every send goes to the simulated",
        f"providers ({', '.join(ALL_PROVIDERS)}; {ALL_PROVIDERS[0]} is the default).",
        f"Templates: {', '.join(DEMO_TEMPLATES)}.",
        f"Test API key (shown once): {api_key}",
        "",
        "Try it:",
        f"  {_curl(url, api_key)}",
        "",
        *dashboard,
    )
    return Report(data, "\n".join(lines))


async def _demo_login_link(messenger: Messenger) -> str:
    """A one-time sign-in link (its path below /dashboard) for the demo operator, who is
    made on first use with no password: the link is the only way in (D31)."""
    from .._errors import ResourceNotFound
    from ..dashboard import issue_login_link

    try:
        await messenger.users.find(_DEMO_OPERATOR)
    except ResourceNotFound:
        await messenger.users.create(_DEMO_OPERATOR, None, operator=True)
    return await issue_login_link(messenger, _DEMO_OPERATOR)


def _curl(url: str, api_key: str) -> str:
    body = json.dumps({"to": "+905551234567", "body": "Merhaba from unified-messaging!"})
    return (
        f"curl -X POST {url}/v1/messages -H 'Authorization: Bearer {api_key}' "
        f"-H 'Content-Type: application/json' -d '{body}'"
    )


@contextmanager
def _clean_exit_on_signals() -> Iterator[None]:
    """Make SIGINT/SIGTERM end ``serve`` with exit status 0 after uvicorn's graceful stop.

    uvicorn catches both while it serves, shuts down, and then re-raises the signal to the
    handler that was installed before it: by default a KeyboardInterrupt traceback or death
    by SIGTERM. With this no-op installed first, a requested stop is a clean exit.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, _stop_requested) for sig in wanted}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop_requested(sig: int, frame: FrameType | None) -> None:
    return None
