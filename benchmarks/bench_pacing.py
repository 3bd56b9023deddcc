"""Per-connection send rate (D27) across two processes, measured where it matters: at the provider.

    .venv/bin/python benchmarks/bench_pacing.py [--messages 10000] [--rate 100]
        [--variant store|redis|both] [--redis-url URL] [--database-url URL]

``sms_a`` is a loopback NetGSM fake (``tests/fakes/netgsm.py``) run in this script's event
loop; it stamps every send call with the wall clock and counts its messages. The workspace
and its connection, limited to ``--rate`` messages/s (``max_rate``; burst: a tenth of a
second's worth), are made with the library on a fresh SQLite file (or ``--database-url``).

Two sender processes then start at once, each with its own Messenger on that database: each
sends half of ``--messages`` as live bulks of 200 through ``Messenger.send_bulk``, one after
another, as fast as the façade lets it, and runs the worker beside it (the messages that got
no slot within the 2 s bound are stored ``queued`` and the workers send them when their slot
is due). The slots are shared through the store (``um_pacing``) or through Redis
(``--redis-url``, default ``$UM_TEST_REDIS_URL``). When the fake has every message, the
senders are stopped.

Reported per variant: messages per wall-clock second at the fake (the maximum must stay at
or under the rate plus one burst), the most in any sliding second, the time from the first
message to the last and the rate that is, how many were queued and sent by a worker, and
whether every message arrived exactly once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes._server import serve  # noqa: E402
from fakes.netgsm import NetgsmFake  # noqa: E402

from unified_messaging import Messenger, Vault  # noqa: E402
from unified_messaging._routing.send_pacing import burst_of  # noqa: E402
from unified_messaging.store.sql import store_from_url  # noqa: E402
from unified_messaging.vault._core import generate_key_spec  # noqa: E402

BULK = 200


class Stamped:
    """The fake's ASGI app, noting when each send call arrived and how many messages it had."""

    def __init__(self, fake: NetgsmFake) -> None:
        self.fake = fake
        self.calls: list[tuple[float, int]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/send"):
            await self.fake.app(scope, receive, send)
            return
        arrived, body = time.time(), bytearray()

        async def reading() -> Any:
            message = await receive()
            body.extend(message.get("body", b""))
            if message["type"] == "http.request" and not message.get("more_body"):
                self.calls.append((arrived, len(json.loads(body)["messages"])))
            return message

        await self.fake.app(scope, reading, send)

    def arrivals(self) -> list[tuple[float, int]]:
        """(when, messages) per send call, in the order they came."""
        return sorted(self.calls)


# ------------------------------------------------------------------------------- a sender


async def child(config: dict[str, Any]) -> None:
    from unified_messaging._routing.redis_pacing import RedisPacer

    pacer = RedisPacer(config["redis_url"]) if config["redis_url"] else None
    messenger = Messenger(
        store_from_url(config["database_url"]), vault=Vault.from_spec(config["keys"]), pacer=pacer
    )
    queued = 0
    async with messenger:
        auth = await messenger.principal(config["workspace_id"], livemode=True)
        stop = asyncio.Event()
        worker = asyncio.create_task(messenger.run_worker(stop, worker_id=f"w{config['index']}"))
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # everyone starts together
        first, count = config["first"], config["count"]
        for start in range(first, first + count, BULK):
            items = [{"to": f"+90555{n:07d}", "body": f"Duyuru {n}"}
                     for n in range(start, min(start + BULK, first + count))]  # fmt: skip
            answer = await messenger.send_bulk(auth, {"items": items})
            queued += sum(1 for r in answer.results if r.status == "queued")
        print(json.dumps({"queued": queued}), flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # the parent has every message
        stop.set()
        await worker
    if pacer is not None:
        await pacer.aclose()


# ------------------------------------------------------------------------------- the run


async def set_up(database_url: str, keys: str, url: str, fake: NetgsmFake, rate: float) -> str:
    messenger = Messenger(store_from_url(database_url), vault=Vault.from_spec(keys))
    async with messenger:
        workspace = await messenger.workspaces.create("bench", recipient_limit=None)
        await messenger.connections.add(
            workspace.id, "sms_a", base_url=url, default_sender="ACME", max_rate=rate,
            credentials={"usercode": fake.usercode, "password": fake.password},
        )  # fmt: skip
        return workspace.id


async def variant(options: argparse.Namespace, redis_url: str | None) -> dict[str, Any]:
    keys = generate_key_spec("bench")
    fake = NetgsmFake()
    stamped = Stamped(fake)
    half = options.messages // 2
    with tempfile.TemporaryDirectory() as tmp:
        database_url = options.database_url or f"sqlite+aiosqlite:///{tmp}/bench.db"
        async with serve(stamped) as url:
            workspace_id = await set_up(database_url, keys, url, fake, options.rate)
            env = {k: v for k, v in os.environ.items() if not k.startswith("UM_")}
            children = []
            for index in range(2):
                config = {"database_url": database_url, "keys": keys, "index": index,
                          "workspace_id": workspace_id, "redis_url": redis_url,
                          "first": index * half, "count": half}  # fmt: skip
                children.append(
                    subprocess.Popen(  # noqa: S603, ASYNC220 - our interpreter, fixed arguments
                        [sys.executable, __file__, "--child", json.dumps(config)],
                        env=env,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        text=True,
                    )
                )
            for proc in children:
                assert proc.stdout is not None
                if (await asyncio.to_thread(proc.stdout.readline)).strip() != "ready":
                    raise SystemExit("a sender did not start")
            for proc in children:
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
            queued = 0
            for proc in children:
                assert proc.stdout is not None
                queued += json.loads(await asyncio.to_thread(proc.stdout.readline))["queued"]
            deadline = time.monotonic() + options.messages / options.rate * 3 + 60
            while sum(n for _, n in stamped.arrivals()) < 2 * half:
                if time.monotonic() > deadline:
                    raise SystemExit("not every message arrived in time")
                await asyncio.sleep(0.5)
            for proc in children:
                assert proc.stdin is not None
                proc.stdin.write("stop\n")
                proc.stdin.flush()
            for proc in children:
                await asyncio.to_thread(proc.wait, 60)
            numbers = Counter(row.number for row in fake.rows)
    return report(stamped.arrivals(), numbers, options, queued, redis_url is not None)


def report(
    arrivals: list[tuple[float, int]],
    numbers: Counter[str],
    options: argparse.Namespace,
    queued: int,
    redis: bool,
) -> dict[str, Any]:
    per_second: Counter[int] = Counter()
    for when, size in arrivals:
        per_second[int(when)] += size
    times = [when for when, _ in arrivals]
    sliding = window = j = 0
    for when, size in arrivals:  # in time order: the most in any second [t - 1, t]
        window += size
        while times[j] <= when - 1.0:
            window -= arrivals[j][1]
            j += 1
        sliding = max(sliding, window)
    total = sum(per_second.values())
    span = times[-1] - times[0]
    busiest = sorted(per_second.values())
    return {
        "variant": "redis" if redis else "store",
        "messages": total,
        "rate_limit": options.rate,
        "burst": burst_of(options.rate),
        "max_per_wall_second": max(per_second.values()),
        "max_per_sliding_second": sliding,
        "median_per_wall_second": busiest[len(busiest) // 2],
        "seconds_first_to_last": round(span, 2),
        "messages_per_second": round(total / span, 1) if span else None,
        "send_calls": len(arrivals),
        "queued_for_the_worker": queued,
        "every_message_once": len(numbers) == options.messages and set(numbers.values()) == {1},
    }


async def run(options: argparse.Namespace) -> list[dict[str, Any]]:
    redis_url = options.redis_url or os.environ.get("UM_TEST_REDIS_URL")
    variants = ["store", "redis"] if options.variant == "both" else [options.variant]
    results = []
    for name in variants:
        if name == "redis" and not redis_url:
            raise SystemExit("the redis variant needs --redis-url or UM_TEST_REDIS_URL")
        results.append(await variant(options, redis_url if name == "redis" else None))
        print(json.dumps(results[-1]), flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--variant", choices=["store", "redis", "both"], default="both")
    parser.add_argument("--redis-url", help="default: $UM_TEST_REDIS_URL")
    parser.add_argument("--database-url", help="default: a fresh SQLite file per variant")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        asyncio.run(child(json.loads(options.child)))
        return
    print(f"load average before: {os.getloadavg()}", flush=True)
    results = asyncio.run(run(options))
    print(json.dumps(results, indent=2))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
