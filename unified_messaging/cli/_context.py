"""Where a command's Messenger comes from: the store, the vault and the rate limiter.

- The store: ``--database-url``, else ``UM_DATABASE_URL``, else the embedded SQLite file
  (DESIGN.md §5). Every command reads the same setting, so they all see one database.
- The vault: ``UM_MASTER_KEYS``, else a development key file ``./.um_master_key`` (0600,
  created on first use, with a warning). Either way the key outlives the command, so the
  credentials one command stores, the next one can still decrypt.
- The rate limiter (``serve`` only): Redis at ``--redis-url`` / ``UM_REDIS_URL``, else
  buckets in the server process (with ``--workers N``, in the parent, for all its servers).
- The circuit breakers' shared state (``serve`` and ``worker``, D26): the same Redis when
  one is configured, else the store.
- The connections' send slots (D27): the same Redis when one is configured, else the store,
  so every process that sends (``serve``, ``worker``, ``send``, ``campaign``) shares them.
- Who is acting (D32): every command's Messenger comes from :func:`messenger_session`,
  which makes ``cli`` the actor its changes are recorded under in the audit log.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from ._args import Run, UsageError
from ._output import Report, emit

if TYPE_CHECKING:
    # Imported where they are used: building the parser (``--help``) needs none of them,
    # and the Messenger alone brings pydantic, httpx and the providers.
    from .._access.ratelimit import RateLimiter
    from .._messenger import Messenger
    from .._observability.metrics import Metrics
    from .._routing.redis_breaker import RedisBreakerStore
    from .._routing.redis_pacing import RedisPacer
    from ..iys.service import IysSettings
    from ..store.base import Store
    from ..vault._core import Vault
    from ..webhooks._sender import TargetPolicy

__all__ = [
    "DATABASE_URL_ENV",
    "DEV_KEY_FILE",
    "IYS_PULL_INTERVAL_ENV",
    "REDIS_URL_ENV",
    "admin_command",
    "breaker_store",
    "database_url",
    "iys_settings",
    "load_vault",
    "messenger_session",
    "open_store",
    "plain_command",
    "rate_limiter",
    "redis_url",
    "send_pacer",
    "shown_url",
    "stop_words_setting",
    "webhook_policy",
]

DATABASE_URL_ENV: Final = "UM_DATABASE_URL"
REDIS_URL_ENV: Final = "UM_REDIS_URL"
#: The development master key file, relative to the working directory (D21).
DEV_KEY_FILE: Final = Path(".um_master_key")

AdminCall: TypeAlias = "Callable[[Messenger, argparse.Namespace], Awaitable[Report]]"
PlainCall: TypeAlias = Callable[[argparse.Namespace], Coroutine[Any, Any, Report]]


def database_url(args: argparse.Namespace) -> str:
    from ..store.sql import DEFAULT_DATABASE_URL

    flag: str | None = getattr(args, "database_url", None)
    return flag or os.environ.get(DATABASE_URL_ENV, "").strip() or DEFAULT_DATABASE_URL


#: How long ``serve`` and ``worker`` keep keys, workspaces, connections, allowlists,
#: templates and webhook endpoints: a change made by another process (the admin commands)
#: takes effect within this long.
SERVER_CACHE_TTL = 1.0


def open_store(args: argparse.Namespace, *, cache_ttl: float = 0.0) -> Store:
    """The store the settings name; it connects (and migrates) when opened. Long-running
    commands pass ``cache_ttl=SERVER_CACHE_TTL``; one-shot admin commands cache nothing."""
    from ..store.sql import store_from_url

    url = database_url(args)
    try:
        return store_from_url(url, cache_ttl=cache_ttl)
    except ValueError as exc:
        # The store's message never quotes the URL: it may carry a password.
        source = "--database-url" if getattr(args, "database_url", None) else DATABASE_URL_ENV
        raise UsageError(source, str(exc)) from None


def shown_url(store: Store) -> str:
    """The store's URL with any password masked, for output."""
    from ..store.memory import MemoryStore

    if isinstance(store, MemoryStore):
        return "memory"
    masked: str = getattr(store, "url", "?")
    return masked


def webhook_policy(*, demo: bool = False) -> TargetPolicy:
    """Which webhook targets are allowed: global addresses only, unless
    ``UM_WEBHOOK_ALLOW_PRIVATE=1`` admits loopback and private networks (one host, tests).
    ``serve --demo`` (``demo``) admits them too: its receiver is on the same machine."""
    from ..webhooks._admin import webhook_policy_from_env
    from ..webhooks._rules import PERMISSIVE

    return PERMISSIVE if demo else webhook_policy_from_env()


def load_vault() -> Vault:
    from ..vault._core import Vault

    vault = Vault.from_env()
    if vault is not None:
        return vault
    # Logs the warning itself (stderr, through the CLI's logging set-up).
    return Vault.load_or_create_key_file(DEV_KEY_FILE)


def redis_url(args: argparse.Namespace) -> str | None:
    """Where the shared Redis is: ``--redis-url``, else ``UM_REDIS_URL``, else none."""
    flag: str | None = getattr(args, "redis_url", None)
    return flag or os.environ.get(REDIS_URL_ENV, "").strip() or None


def rate_limiter(args: argparse.Namespace) -> RateLimiter | None:
    """The shared Redis limiter when one is configured; else, in a server process of
    ``serve --workers``, the parent's buckets (``args.limiter_socket``, set by the parent);
    else ``None``, which keeps the in-process one.

    The caller closes it: a limiter passed to a Messenger stays the caller's.
    """
    url = redis_url(args)
    if url is None:
        socket_path: str | None = getattr(args, "limiter_socket", None)
        if socket_path is None:
            return None
        from .._access.socket_ratelimit import SocketRateLimiter

        return SocketRateLimiter(socket_path)
    from .._access.redis_ratelimit import RedisRateLimiter

    return RedisRateLimiter(url)


def breaker_store(args: argparse.Namespace) -> RedisBreakerStore | None:
    """The circuit breakers' state in Redis when one is configured (``--redis-url`` /
    ``UM_REDIS_URL``); ``None`` keeps it in the store. The caller closes it."""
    url = redis_url(args)
    if url is None:
        return None
    from .._routing.redis_breaker import RedisBreakerStore

    return RedisBreakerStore(url)


def send_pacer(args: argparse.Namespace) -> RedisPacer | None:
    """The send slots (D27) in Redis when one is configured (``--redis-url`` /
    ``UM_REDIS_URL``); ``None`` keeps them in the store. The caller closes it."""
    url = redis_url(args)
    if url is None:
        return None
    from .._routing.redis_pacing import RedisPacer

    return RedisPacer(url)


@asynccontextmanager
async def messenger_session(
    args: argparse.Namespace, *, vault: Vault | None = None, sends: bool = False
) -> AsyncIterator[Messenger]:
    """An open Messenger on the configured store and vault, closed on the way out.
    ``sends``: the command sends messages (``send``, ``campaign send``), so in Prometheus'
    multi-process mode it counts them where ``serve``'s scrape sums every process."""
    from .._messenger import Messenger
    from ..audit._context import CLI, acting_as

    # The vault first: a bad key spec should fail before the database is touched.
    vault = vault or load_vault()
    policy = webhook_policy()
    # What `connections list` shows of the breakers is where serve keeps them (D26).
    breakers = breaker_store(args)
    pacer = send_pacer(args)  # D27: a send here shares the rate with serve and the worker
    try:
        async with Messenger(
            open_store(args), vault=vault, webhook_policy=policy, breaker_store=breakers,
            pacer=pacer, metrics=shared_metrics() if sends else None,
            stop_words=stop_words_setting(),  # `simulate inbound` reads replies as serve does
            iys=iys_settings(),
        ) as messenger:  # fmt: skip
            with acting_as(CLI):  # the one place: every command's changes are the CLI's
                yield messenger
    finally:
        if breakers is not None:
            await breakers.aclose()
        if pacer is not None:
            await pacer.aclose()


IYS_PULL_INTERVAL_ENV: Final = "UM_IYS_PULL_INTERVAL"


def iys_settings(pull_interval: timedelta | None = None) -> IysSettings:
    """How this process does the İYS work (D33): the pull interval from ``pull_interval``
    (``worker --iys-pull-interval``), else ``UM_IYS_PULL_INTERVAL`` (seconds), else 5 min."""
    from .._errors import ConfigurationError
    from ..iys.service import IysSettings

    if pull_interval is None:
        raw = os.environ.get(IYS_PULL_INTERVAL_ENV, "").strip()
        if raw:
            try:
                seconds = float(raw)
            except ValueError:
                seconds = 0.0
            if not 0 < seconds <= 86_400:
                raise ConfigurationError(
                    f"{IYS_PULL_INTERVAL_ENV} must be a number of seconds, above 0 and at "
                    "most 86400",
                    setting=IYS_PULL_INTERVAL_ENV,
                )
            pull_interval = timedelta(seconds=seconds)
    if pull_interval is None:
        return IysSettings()
    return IysSettings(pull_interval=pull_interval)


STOP_WORDS_ENV: Final = "UM_STOP_WORDS"
PUBLIC_URL_ENV: Final = "UM_PUBLIC_URL"


def public_url_setting(given: str | None) -> str | None:
    """``serve --public-url`` or else ``UM_PUBLIC_URL``: where users reach the server, an
    ``http://`` or ``https://`` URL (D31: an https one makes the dashboard's cookies
    ``Secure`` and sends HSTS, whatever the proxy says); ``None`` if neither is set."""
    from urllib.parse import urlsplit

    from .._errors import ConfigurationError

    raw = given if given is not None else os.environ.get(PUBLIC_URL_ENV, "").strip() or None
    if raw is None:
        return None
    try:
        parts = urlsplit(raw)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"--public-url / {PUBLIC_URL_ENV} must be an http:// or https:// URL with a host, "
            "e.g. https://messaging.example.com",
            setting=PUBLIC_URL_ENV,
        )
    return raw


def stop_words_setting() -> list[str]:
    """``UM_STOP_WORDS``: replies that opt out besides STOP, DUR, İPTAL and RET,
    comma-separated; empty or unset adds none."""
    from .._errors import ConfigurationError
    from ..suppressions._rules import StopWords

    raw = os.environ.get(STOP_WORDS_ENV, "")
    words = [word.strip() for word in raw.split(",") if word.strip()]
    try:
        StopWords(words)
    except ValueError:
        raise ConfigurationError(
            f"{STOP_WORDS_ENV}: a word is empty without its punctuation, or over 64 letters",
            setting=STOP_WORDS_ENV,
        ) from None
    return words


def shared_metrics() -> Metrics | None:
    """Prometheus metrics that ``serve``'s scrape reads, when there is a way to share them:
    multi-process mode (``PROMETHEUS_MULTIPROC_DIR``) with ``prometheus_client`` installed.
    Else ``None``: this process's counters would die with it unread."""
    from .._observability.prometheus import PrometheusMetrics, multiprocess_dir

    if multiprocess_dir() is None:
        return None
    try:
        return PrometheusMetrics()
    except ImportError:
        return None


def admin_command(call: AdminCall) -> Run:
    """A command that runs ``call`` on a Messenger and prints its report."""

    async def session(args: argparse.Namespace) -> Report:
        async with messenger_session(args) as messenger:
            return await call(messenger, args)

    return plain_command(session)


def plain_command(call: PlainCall) -> Run:
    """A command that needs no Messenger (``migrate``, ``vault generate-key``)."""

    def run(args: argparse.Namespace) -> int:
        import asyncio

        report = asyncio.run(call(args))
        emit(report, as_json=args.json)
        return 0

    return run
