"""The provider call alone: CPU per ``sms_e`` submit, on each network stack an adapter has had.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_provider_call.py [--calls 2000] [--rounds 3]
        [--only anyio|httpcore|httpx|own]

A loopback stand-in for Kannel's smsbox runs in a child process (it answers every request
``202 0: Accepted for delivery`` at once, keep-alive), so only the caller's work is in this
process. ``KannelAdapter`` s of one connection make ``--calls`` submits each round, 16 at a
time (as 16 served requests would), in alternating rounds:

- ``anyio``: ``httpx.AsyncClient`` with httpx's own transport (httpcore's pool on anyio);
- ``httpcore``: the same httpcore pool on the project's :class:`.AsyncioBackend` (the
  adapter's own client until the h11 transport);
- ``httpx``: ``httpx.AsyncClient`` on :class:`.ProviderTransport` (the h11 pool), injected, as
  a host's client would be: the adapter goes through httpx;
- ``own``: the adapter's own client today: ``exchange`` writes to the same h11 pool
  directly.

Printed per round: this process's CPU (``time.process_time``) per call. ``--only`` runs one
kind, for ``perf stat -e instructions`` or callgrind around the whole script (subtract a
run with ``--calls 0`` for start-up).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

import httpcore
import httpx

from unified_messaging._domain import Connection
from unified_messaging.providers._http import DEFAULT_TIMEOUT, POOL_LIMITS, USER_AGENT
from unified_messaging.providers._transport import ProviderTransport
from unified_messaging.providers.base import SubmitRequest
from unified_messaging.providers.kannel import KannelAdapter
from unified_messaging.webhooks._asyncio_net import AsyncioBackend

KINDS = ("anyio", "httpcore", "httpx", "own")
ANSWER = (
    b"HTTP/1.1 202 Accepted\r\nContent-Type: text/html\r\nContent-Length: 24\r\n\r\n"
    b"0: Accepted for delivery"
)


async def child() -> None:
    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while True:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(ANSWER)
        writer.close()

    server = await asyncio.start_server(client, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.sleep(3600)


def adapter(base: str, kind: str) -> KannelAdapter:
    connection = Connection(
        id="conn_bench", workspace_id="ws_1", provider="sms_e",
        created_at=datetime(2026, 1, 1, tzinfo=UTC), credentials="v1.k.n.c",
        base_url=base, dlr_token="tok",  # noqa: S106
    )  # fmt: skip
    credentials = {"username": "u", "password": "p", "dlr_url": "http://127.0.0.1:9"}
    if kind == "own":
        return KannelAdapter(connection, credentials)
    transport: httpx.AsyncBaseTransport
    if kind == "anyio":
        transport = httpx.AsyncHTTPTransport(limits=POOL_LIMITS)
    elif kind == "httpcore":
        transport = httpx.AsyncHTTPTransport(limits=POOL_LIMITS)
        transport._pool = httpcore.AsyncConnectionPool(  # the same pool, on asyncio streams
            ssl_context=httpx.create_ssl_context(),
            max_connections=POOL_LIMITS.max_connections,
            max_keepalive_connections=POOL_LIMITS.max_keepalive_connections,
            keepalive_expiry=POOL_LIMITS.keepalive_expiry,
            network_backend=AsyncioBackend(),
        )
    else:
        transport = ProviderTransport()
    client = httpx.AsyncClient(
        timeout=DEFAULT_TIMEOUT, follow_redirects=False,
        headers={"User-Agent": USER_AGENT}, transport=transport,
    )  # fmt: skip
    return KannelAdapter(connection, credentials, client=client)


async def calls(gateway: KannelAdapter, count: int, first: int) -> None:
    queue = iter(range(first, first + count))

    async def one_lane() -> None:
        for n in queue:
            request = SubmitRequest(job_id=f"msg_{n:08d}", to=f"+90532{n:07d}", text="Merhaba")
            outcome = await gateway.submit(request)
            assert outcome.kind == "accepted", outcome

    await asyncio.gather(*(one_lane() for _ in range(16)))


async def main(args: argparse.Namespace) -> None:
    server = subprocess.Popen(  # noqa: ASYNC220, S603
        [sys.executable, __file__, "--child"], stdout=subprocess.PIPE
    )
    assert server.stdout is not None
    base = f"http://127.0.0.1:{int(server.stdout.readline())}"
    kinds = [args.only] if args.only else list(KINDS)
    gateways = {kind: adapter(base, kind) for kind in kinds}
    per_call: dict[str, list[float]] = {kind: [] for kind in kinds}
    try:
        for kind in kinds:  # warm-up: the pool's connections, the caches
            await calls(gateways[kind], min(args.calls, 200), 0)
        for r in range(args.rounds):
            for kind in kinds:
                cpu = time.process_time()
                await calls(gateways[kind], args.calls, (r + 1) * 1_000_000)
                if args.calls:
                    per_call[kind].append((time.process_time() - cpu) / args.calls * 1e6)
                    print(f"round {r + 1} {kind:8} {per_call[kind][-1]:7.0f} µs CPU/call")
        for gateway in gateways.values():
            await gateway.aclose()
            await gateway.client.aclose()  # an injected client is its owner's to close
    finally:
        server.terminate()
        server.wait()
    if args.calls:
        medians = {kind: statistics.median(v) for kind, v in per_call.items()}
        print(" ".join(f"{kind}: median {m:.0f} µs CPU/call;" for kind, m in medians.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=KINDS)
    parser.add_argument("--child", action="store_true")
    ns = parser.parse_args()
    asyncio.run(child() if ns.child else main(ns))
