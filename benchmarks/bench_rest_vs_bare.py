"""POST /v1/messages through the real app beside a bare Starlette endpoint.

    python benchmarks/bench_rest_vs_bare.py [--requests 5000] [--concurrency 16] [--rounds 3]
    python benchmarks/bench_rest_vs_bare.py --transport asgi [--profile]

Target: the app answers at least half as many requests per second as a bare
endpoint on the same framework that parses the same JSON body and answers a fixed 201 JSON
body. The app is ``create_app(messenger, worker=False)`` as ``serve --no-worker`` runs it
(default middleware, the ``/mcp`` route when the extra is installed, its lifespan; the
delivery lifecycle's worker runs in processes of its own and is measured by
``bench_lifecycle.py``), over a memory-store messenger
set up by ``create_testbed``, and every request carries a TEST key whose rate limit never
runs dry, so each one really sends through the simulator.

``--transport http`` (the default) measures over real HTTP on loopback: each app runs under
uvicorn (port 0, ``log_level="warning"``) in a subprocess of its own, and this process
drives it with ``--concurrency`` workers, each with its own ``httpx.AsyncClient`` holding
one keep-alive connection (cheaper for the client than one client's shared pool).
Subprocesses, not servers in this event loop, because the machine has two cores: in one
process the client and the server would share one interpreter and one core, and the
client's cost (httpx spends more CPU per request than either server) would be added to
both sides, pulling the ratio towards 1. In separate processes the server under test has a
core to itself. Only one server is loaded at a time, and rounds alternate bare, app, bare,
app, so drift in the machine's load hits both alike. Besides requests per second, it reads
each server's CPU time from ``/proc`` (Linux), which measures the server's own cost per
request even when the client is the bottleneck: on two cores one Python httpx client
(about 1 ms of CPU per request) cannot keep up with the bare endpoint (about 0.3 ms), so
the requests-per-second ratio over HTTP comes out near 1 and says little; the ratio of
server CPU per request ("server-bound rates") is the figure that decides the target.

``--transport asgi`` calls both apps in this process through ``httpx.ASGITransport`` (no
sockets, no lifespan: the testbed opens the messenger); ``--profile`` then runs cProfile
over the app's measured round and prints the top functions by own time.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from unified_messaging import Messenger
from unified_messaging.asgi import create_app
from unified_messaging.testing import create_testbed

BODY = {"to": "+905551234567", "body": "Siparişiniz yola çıktı."}
# The shape of a real answer, fixed: the bare endpoint does no work to build it.
BARE_ANSWER = json.dumps(
    {"job_id": "msg_01JBARE00000000000000000", "status": "sent", "to": BODY["to"]}
).encode()


def bare_app() -> Starlette:
    async def send(request: Request) -> Response:
        await request.json()
        return Response(BARE_ANSWER, status_code=201, media_type="application/json")

    return Starlette(routes=[Route("/v1/messages", send, methods=["POST"])])


async def real_app() -> tuple[Starlette, str]:
    messenger = Messenger()  # system clock; no outbox (each send still queues its DLR work)
    bed = await create_testbed(messenger=messenger, recipient_limit=None)  # no D28 guard
    key = await messenger.keys.create(bed.workspace.id, rate_limit=1e9, rate_burst=10**9)
    # The request path only: the background worker (reports, time-outs, webhooks) is a
    # separate cost, run by `unified-messaging worker` beside `serve --no-worker` in a busy
    # deployment, and measured by bench_lifecycle.py.
    return create_app(messenger, worker=False), key.secret


# ---------------------------------------------------------------------- the load


@dataclass
class Round:
    name: str
    requests: int
    seconds: float
    server_cpu: float | None  # seconds of the server process's CPU, when known
    client_cpu: float  # seconds of this process's CPU

    @property
    def rate(self) -> float:
        return self.requests / self.seconds


async def load(clients: Sequence[httpx.AsyncClient], requests: int) -> None:
    """``requests`` POSTs, one worker per client, so ``len(clients)`` are in flight."""
    remaining = requests

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            response = await client.post("/v1/messages", json=BODY)
            if response.status_code != 201:
                raise SystemExit(f"{response.status_code}: {response.text}")

    await asyncio.gather(*(worker(client) for client in clients))


async def measure(
    name: str, clients: Sequence[httpx.AsyncClient], requests: int, pid: int | None
) -> Round:
    cpu_before, client_before = process_cpu(pid), time.process_time()
    started = time.perf_counter()
    await load(clients, requests)
    seconds = time.perf_counter() - started
    cpu_after, client_cpu = process_cpu(pid), time.process_time() - client_before
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return Round(name, requests, seconds, cpu, client_cpu)


def process_cpu(pid: int | None) -> float | None:
    """User plus system CPU seconds of ``pid`` so far, from ``/proc`` (Linux only)."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After the command name: state is field 3, utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client(base_url: str, secret: str | None, **kwargs: Any) -> httpx.AsyncClient:
    headers = {} if secret is None else {"Authorization": f"Bearer {secret}"}
    return httpx.AsyncClient(base_url=base_url, headers=headers, **kwargs)


def warm_up_count(requests: int, concurrency: int) -> int:
    return max(requests // 5, concurrency * 20)


# ---------------------------------------------------------------------- the servers


async def serve(which: str) -> None:
    """Child mode: run one app under uvicorn and print its port and key as a JSON line."""
    app, secret = await real_app() if which == "app" else (bare_app(), None)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="none")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()  # startup failed: raise its error
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    print(json.dumps({"port": port, "secret": secret}), flush=True)
    await task


@dataclass
class Child:
    name: str
    process: asyncio.subprocess.Process
    base_url: str
    secret: str | None


async def start(which: str) -> Child:
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--serve", which, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
    if not line:
        raise SystemExit(f"the {which} server did not start")
    ready = json.loads(line)
    return Child(which, process, f"http://127.0.0.1:{ready['port']}", ready["secret"])


async def over_http(requests: int, concurrency: int, rounds: int) -> list[Round]:
    children = [await start("bare"), await start("app")]
    results: list[Round] = []
    try:
        # One keep-alive connection per client and a client per worker: one AsyncClient
        # sharing a pool of 16 connections spends about 1 ms more of the client's CPU per
        # request (httpcore's pool bookkeeping), and the client is already the slower end.
        one = httpx.Limits(max_connections=1)
        loads = [
            [client(c.base_url, c.secret, limits=one) for _ in range(concurrency)] for c in children
        ]
        for clients in loads:
            await load(clients, warm_up_count(requests, concurrency))
        for _ in range(rounds):
            for child, clients in zip(children, loads, strict=True):
                results.append(await measure(child.name, clients, requests, pid(child)))
        for clients in loads:
            for http in clients:
                await http.aclose()
    finally:
        for child in children:
            child.process.terminate()
            await child.process.wait()
    return results


def pid(child: Child) -> int | None:
    return child.process.pid if sys.platform == "linux" else None


async def in_process(requests: int, concurrency: int, rounds: int, profile: bool) -> list[Round]:
    app, secret = await real_app()
    targets = [("bare", bare_app(), None), ("app", app, secret)]
    # No sockets, so no pool to spread: one client per app, shared by the workers.
    clients = [
        (name, client("http://b", key, transport=httpx.ASGITransport(app=target)))
        for name, target, key in targets
    ]
    results: list[Round] = []
    for _, http in clients:
        await load([http] * concurrency, warm_up_count(requests, concurrency))
    for _ in range(rounds):
        for name, http in clients:
            results.append(await measure(name, [http] * concurrency, requests, None))
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        await load([clients[1][1]] * concurrency, requests)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    for _, http in clients:
        await http.aclose()
    return results


# ---------------------------------------------------------------------- the report


def median_of(results: list[Round], name: str, value: Callable[[Round], float]) -> float:
    return statistics.median(value(r) for r in results if r.name == name)


def per_request_cpu(r: Round) -> float:
    return (r.server_cpu or 0.0) / r.requests


def report(results: list[Round], transport: str, concurrency: int) -> None:
    for r in results:
        line = f"  {r.name:4}  {r.requests} requests in {r.seconds:6.3f} s = {r.rate:7,.0f} req/s"
        client_cpu = f"client CPU {r.client_cpu / r.requests * 1e6:5.0f} µs/req"
        if r.server_cpu is not None:
            line += f"  server CPU {per_request_cpu(r) * 1e6:5.0f} µs/req, {client_cpu}"
        print(line)
    bare = median_of(results, "bare", lambda r: r.rate)
    app = median_of(results, "app", lambda r: r.rate)
    verdict = "met" if app / bare >= 0.5 else "MISSED"
    print(f"\n{transport}, {concurrency} concurrent, median of {len(results) // 2} rounds:")
    print(f"  bare Starlette endpoint  {bare:7,.0f} req/s")
    print(f"  POST /v1/messages (app)  {app:7,.0f} req/s")
    print(f"  app / bare               {app / bare:7.2f}   (target >= 0.50: {verdict})")
    if any(r.server_cpu is None for r in results):
        return
    # The server's CPU per request is its cost whoever the bottleneck is; its inverse is the
    # rate the server would reach with a core to itself and a client that keeps up.
    bare_cpu = median_of(results, "bare", per_request_cpu)
    app_cpu = median_of(results, "app", per_request_cpu)
    print(f"  server CPU per request   bare {bare_cpu * 1e6:.0f} µs, app {app_cpu * 1e6:.0f} µs")
    print(
        f"  server-bound rates       bare {1 / bare_cpu:,.0f} req/s, app {1 / app_cpu:,.0f} req/s,"
        f" app / bare {bare_cpu / app_cpu:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transport", choices=("http", "asgi"), default="http")
    parser.add_argument("--requests", type=int, default=5_000, help="per round and app")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="asgi only: cProfile the app")
    parser.add_argument("--serve", choices=("app", "bare"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return
    if args.transport == "http":
        results = asyncio.run(over_http(args.requests, args.concurrency, args.rounds))
    else:
        results = asyncio.run(
            in_process(args.requests, args.concurrency, args.rounds, args.profile)
        )
    report(results, args.transport, args.concurrency)


if __name__ == "__main__":
    main()
