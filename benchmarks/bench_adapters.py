"""A 200-recipient bulk through each live adapter to its fake answering after 50 ms.

    python benchmarks/bench_adapters.py [--delay 0.05] [--runs 5]

Targets: <= 0.15 s through a batch-capable provider (one request per 100
recipients, sent concurrently); <= 1.0 s through a per-recipient one (200 requests, at most
``max_concurrency`` = 32 in flight). Each fake runs under uvicorn on a loopback port, so
this is real HTTP through the same pooled clients production uses. The fakes live in
``tests/fakes``; run from the repository root.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fakes import iletimerkezi, kannel, mutlucell, netgsm, telegram, verimor, whatsapp
from fakes.verimor import serve

from unified_messaging import Messenger, Vault

Scope = MutableMapping[str, Any]
CONCURRENCY = 32
ONLY: str | None = None
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]


def delayed(app: ASGIApp, delay: float) -> ASGIApp:
    async def wrapper(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await asyncio.sleep(delay)
        await app(scope, receive, send)

    return wrapper


def setups() -> list[tuple[str, Any, dict[str, str], str | None]]:
    n, i, v = netgsm.NetgsmFake(), iletimerkezi.IletimerkeziFake(), verimor.FakeVerimor()
    m = mutlucell.FakeMutlucell()
    k, t, w = kannel.KannelFake(), telegram.TelegramFake(), whatsapp.WhatsAppFake()
    t.chats["12345678"] = "private"  # a chat that talked to the bot
    # Every benchmark recipient wrote to the business within 24 hours (free text allowed).
    w.in_window |= {f"90555{1000000 + n:07d}" for n in range(200)}
    return [
        ("sms_a", n.app, {"usercode": n.usercode, "password": n.password}, "ACME"),
        ("sms_b", i.app, {"api_key": i.key, "api_hash": i.hash}, "ACME"),
        ("sms_c", v.app, {"username": v.username, "password": v.password}, "UMTEST"),
        ("sms_d", m.app, {"username": m.username, "password": m.password}, "UMTEST"),
        ("sms_e", k.app, {"username": kannel.USERNAME, "password": kannel.PASSWORD}, "ACME"),
        ("chatbot", t.app, {"bot_token": telegram.TOKEN}, None),
        ("bizchat", w.app, {"access_token": whatsapp.ACCESS_TOKEN,
                            "phone_number_id": whatsapp.PHONE_NUMBER_ID,
                            "app_secret": whatsapp.APP_SECRET, "verify_token": "v"}, None),
    ]  # fmt: skip


async def bench(code: str, app: Any, credentials: dict[str, str], sender: str | None,
                delay: float, runs: int) -> None:  # fmt: skip
    messenger = Messenger(vault=Vault.generate(), max_concurrency=CONCURRENCY)
    async with serve(delayed(app, delay)) as url, messenger:  # type: ignore[arg-type]
        workspace = await messenger.workspaces.create(code, recipient_limit=None)  # not D28
        await messenger.connections.add(
            workspace.id, code, base_url=url, credentials=credentials, default_sender=sender
        )
        principal = await messenger.principal(workspace.id, livemode=True)
        to = "12345678" if code == "chatbot" else None
        timings = []
        for run in range(runs + 1):  # the first run warms the connection pool
            items = [
                {"to": to or f"+90555{1000000 + n:07d}", "body": f"Kampanya {run}.{n}"}
                for n in range(200)
            ]
            started = time.perf_counter()
            response = await messenger.send_bulk(principal, {"items": items})
            timings.append(time.perf_counter() - started)
            if response.sent != 200:
                failed = [r.error for r in response.results if r.error][:1]
                raise SystemExit(f"{code}: only {response.sent} sent; first error {failed}")
        timings = timings[1:]
    median, best = statistics.median(timings), min(timings)
    print(f"{code:8} 200-item bulk: median {median:.3f} s, best {best:.3f} s "
          f"({runs} runs, {delay * 1000:.0f} ms fake latency)")  # fmt: skip


async def baseline(delay: float, runs: int) -> None:
    """The yardstick: a hand-written loop of 200 concurrent httpx POSTs to the same kind of
    fake, with no library in between (the issue's "about 0.9 s on these machines")."""
    import httpx

    fake = telegram.TelegramFake()
    fake.chats["12345678"] = "private"
    async with serve(delayed(fake.app, delay)) as url:  # type: ignore[arg-type]
        endpoint = f"{url}/bot{telegram.TOKEN}/sendMessage"
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=None)) as client:
            timings = []
            for _ in range(runs + 1):
                started = time.perf_counter()
                await asyncio.gather(
                    *(client.post(endpoint, json={"chat_id": 12345678, "text": f"m{n}"})
                      for n in range(200))
                )  # fmt: skip
                timings.append(time.perf_counter() - started)
    timings = timings[1:]
    print(f"{'httpx':8} 200 raw POSTs:   median {statistics.median(timings):.3f} s, "
          f"best {min(timings):.3f} s (the yardstick)")  # fmt: skip


async def main(delay: float, runs: int) -> None:
    if ONLY is None:
        await baseline(delay, runs)
    for code, app, credentials, sender in setups():
        if ONLY is not None and code != ONLY:
            continue
        await bench(code, app, credentials, sender, delay, runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=32, help="Messenger max_concurrency")
    parser.add_argument("--only", default=None, help="one provider code")
    args = parser.parse_args()
    CONCURRENCY, ONLY = args.concurrency, args.only
    asyncio.run(main(args.delay, args.runs))
