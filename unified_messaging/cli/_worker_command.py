"""``worker``: run the background work (delivery reports, DLR time-outs, fallback, webhooks)
in a process of its own.

``serve`` runs a worker inside the server too (unless ``--no-worker``); start as many
``worker`` processes as the load needs, on any hosts that share the database: the store's
claim gives each item to one of them at a time. SIGINT/SIGTERM stop it after the items in
hand are finished; an item cut off by a hard kill is picked up again when its lease runs out.
"""

from __future__ import annotations

import argparse
import logging
from datetime import timedelta
from typing import TYPE_CHECKING

from ..webhooks._schedule import DEFAULT_SCHEDULE
from ._args import Subparsers, add_command, positive_seconds
from ._context import (
    SERVER_CACHE_TTL,
    breaker_store,
    iys_settings,
    load_vault,
    open_store,
    send_pacer,
    webhook_policy,
)
from ._heap import settle_heap
from ._logging import add_log_options, log_config
from ._metrics_options import MetricsListener, MetricsSettings, add_metrics_options
from ._output import Report, emit

if TYPE_CHECKING:
    from .._lifecycle.worker import Worker
    from .._messenger import Messenger

__all__ = ["add_worker", "work_beside_serve"]

logger = logging.getLogger("unified_messaging.worker")


def add_worker(commands: Subparsers) -> None:
    parser = add_command(
        commands,
        "worker",
        help="run the background worker (reports, time-outs, fallback, webhooks)",
        description=(
            "Run the background work: simulated and polled delivery reports, DLR time-outs, "
            "fallback to the next provider, webhook deliveries and their retries. Any number "
            "of workers may share one database. Stops on SIGINT/SIGTERM."
        ),
        run=_run,
    )
    parser.add_argument(
        "--once",
        action="store_true",
        help="do the work that is due now, then exit (for cron and tests)",
    )
    parser.add_argument(
        "--webhook-schedule",
        type=_schedule,
        default=DEFAULT_SCHEDULE,
        metavar="S1,S2,...",
        help="seconds to wait after each failed webhook attempt (default 5,300,1800,7200,"
        "18000,36000,36000)",
    )
    parser.add_argument(
        "--lease",
        type=positive_seconds,
        default=timedelta(minutes=2),
        metavar="SECONDS",
        help="how long an item is held before another worker may take it (default 120)",
    )
    parser.add_argument(
        "--iys-pull-interval",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help="how often İYS's consent changes are pulled (default: $UM_IYS_PULL_INTERVAL, "
        "else 300)",
    )
    add_log_options(parser)
    add_metrics_options(parser, on_app=False)


def _schedule(text: str) -> tuple[timedelta, ...]:
    steps = tuple(positive_seconds(part.strip()) for part in text.split(","))
    if not steps:
        raise argparse.ArgumentTypeError("give at least one number of seconds")
    return steps


def _run(args: argparse.Namespace) -> int:
    import asyncio
    import logging.config

    logging.config.dictConfig(log_config(args.log_format, full_numbers=args.log_full_numbers))
    asyncio.run(_work(args))
    return 0


async def _work(args: argparse.Namespace) -> None:
    from .._messenger import Messenger

    # D26: the breakers serve shares through Redis (UM_REDIS_URL), or else the store.
    breakers = breaker_store(args)
    pacer = send_pacer(args)  # D27: the send slots too
    metrics = MetricsSettings.from_args(args, on_app=False)  # D30
    messenger = Messenger(
        open_store(args, cache_ttl=SERVER_CACHE_TTL),
        vault=load_vault(),
        webhook_policy=webhook_policy(),
        webhook_schedule=args.webhook_schedule,
        breaker_store=breakers,
        metrics=metrics.build(),
        pacer=pacer,
        iys=iys_settings(args.iys_pull_interval),
    )
    listener = MetricsListener(metrics, messenger)
    try:
        await listener.start()
        await _do_work(messenger, args)
    finally:
        await listener.stop()
        if breakers is not None:
            await breakers.aclose()
        if pacer is not None:
            await pacer.aclose()


async def _do_work(messenger: Messenger, args: argparse.Namespace) -> None:
    async with messenger:
        worker = messenger.worker(lease=args.lease)
        if args.once:
            done = await worker.run_until_idle()
            emit(Report({"processed": done}, f"Processed {done} items."), as_json=args.json)
            return
        await _run_until_signalled(worker)


async def _run_until_signalled(worker: Worker) -> None:
    import asyncio
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    logger.info("worker %s started", worker.worker_id)
    settle_heap()
    await worker.run(stop)
    logger.info("worker %s stopped", worker.worker_id)


def work_beside_serve(args: argparse.Namespace) -> None:
    """The worker process of ``serve --workers N``: the loop one ``serve`` runs inside
    itself, with serve's settings (its store, Redis, metrics; the default lease and
    webhook schedule), until SIGINT/SIGTERM. Its metrics reach the scrape through the
    servers (Prometheus' multi-process mode, which the parent set up)."""
    import asyncio
    import logging.config

    logging.config.dictConfig(log_config(args.log_format, full_numbers=args.log_full_numbers))
    asyncio.run(_work_beside_serve(args))


async def _work_beside_serve(args: argparse.Namespace) -> None:
    from .._messenger import Messenger

    breakers = breaker_store(args)
    pacer = send_pacer(args)
    messenger = Messenger(
        open_store(args, cache_ttl=SERVER_CACHE_TTL),
        vault=load_vault(),
        webhook_policy=webhook_policy(),
        submit_timeout=args.submit_timeout,
        breaker_store=breakers,
        metrics=MetricsSettings.from_args(args).build(),
        pacer=pacer,
        iys=iys_settings(),
    )
    try:
        async with messenger:
            await _run_until_signalled(messenger.worker())
    finally:
        if breakers is not None:
            await breakers.aclose()
        if pacer is not None:
            await pacer.aclose()
