"""The ``sms_e`` adapter against Debian's real Kannel 1.4.5: bearerbox, smsbox and the fake
SMS centre ``fakesmsc`` (``kannel`` and ``kannel-extras``), started once for this module.

What no fake of ours showed, checked against the gateway itself: the report's ``%p`` is the
handset and ``%P`` our own sender (a report travels back from the phone), and a
``sendsms-user`` without ``max-messages`` sends only the first part of a long text. The
gateway's part limit is the connection's ``max_parts``: a longer text is refused before the
call, and what goes out arrives whole. ``fakesmsc`` only ever reports success, so the report
types it cannot make (2, 16, 34, 66) are read in ``test_kannel.py`` in Kannel's wire format.

Skipped, saying why, only where Kannel is not installed (``apt-get install kannel
kannel-extras``; ``.ci/run`` installs them).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import re
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest

from unified_messaging._domain import Connection
from unified_messaging.providers.base import InboundCallback, ProviderReport, SubmitRequest
from unified_messaging.providers.kannel import KannelAdapter

BEARERBOX = Path("/usr/sbin/bearerbox")
SMSBOX = Path("/usr/sbin/smsbox")
FAKESMSC = Path("/usr/lib/kannel/test/fakesmsc")
MISSING = [str(p) for p in (BEARERBOX, SMSBOX, FAKESMSC) if not p.exists()]
pytestmark = pytest.mark.skipif(
    bool(MISSING),
    reason=f"Kannel is not installed ({', '.join(MISSING)} missing): "
    "apt-get install kannel kannel-extras (.ci/run installs them)",
)

#: How long the gateway may take to start, pass a message on, or report: a generous bound
#: on waits that end as soon as the thing happens.
WAIT = 30.0
TO = "+905321234567"
TOKEN = "dlrTOKEN_real"
#: ``fakesmsc`` prints each message it gets: "Got message N: <from to type [udh] text>".
_GOT = re.compile(r"Got message \d+: <(.*)>")


@dataclass
class Kannel:
    sendsms: str
    dlr_base: str
    #: The requests Kannel made to our dlr-url: (path, decoded query).
    reports: queue.Queue[tuple[str, dict[str, str]]]
    smsc_log: Path
    #: A sendsms-user without max-messages, and one with max-messages = 3.
    users: dict[str, str]

    def delivered(self, count: int) -> list[str]:
        """The first ``count`` messages the SMS centre got, once it has them all."""
        deadline = time.monotonic() + WAIT
        while True:
            got = _GOT.findall(self.smsc_log.read_text(errors="replace"))
            if len(got) >= count:
                return got
            assert time.monotonic() < deadline, f"the SMS centre got {got}"
            time.sleep(0.05)

    def report(self) -> tuple[str, dict[str, str]]:
        return self.reports.get(timeout=WAIT)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(tmp: Path, ports: dict[str, int], admin: str, users: dict[str, str]) -> Path:
    path = tmp / "kannel.conf"
    path.write_text(
        f"""group = core
admin-port = {ports["admin"]}
admin-password = {admin}
smsbox-port = {ports["smsbox"]}
dlr-storage = internal
log-level = 1
log-file = "{tmp / "bearerbox.log"}"

group = smsc
smsc = fake
smsc-id = fake
port = {ports["smsc"]}
connect-allow-ip = 127.0.0.1

group = smsbox
bearerbox-host = 127.0.0.1
sendsms-port = {ports["sendsms"]}
log-level = 1
log-file = "{tmp / "smsbox.log"}"

group = sendsms-user
username = plain
password = {users["plain"]}

group = sendsms-user
username = three
password = {users["three"]}
max-messages = 3
concatenation = true
"""
    )
    return path


class _Reports(BaseHTTPRequestHandler):
    seen: queue.Queue[tuple[str, dict[str, str]]]

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        self.seen.put((parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        return None


def _wait_listening(*ports: int, log: Path) -> None:
    deadline = time.monotonic() + WAIT
    for port in ports:
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)


def _wait_ready(admin_url: str, sendsms_url: str, logs: list[Path]) -> None:
    """Until the fake SMS centre is online in bearerbox and smsbox answers ``sendsms``."""
    deadline = time.monotonic() + WAIT
    while True:
        with contextlib.suppress(httpx.HTTPError):
            status = httpx.get(admin_url, timeout=2).text
            answer = httpx.get(sendsms_url, timeout=2)
            if "online" in status and answer.status_code < 500:
                return
        assert time.monotonic() < deadline, "\n".join(p.read_text() for p in logs if p.exists())
        time.sleep(0.1)


@pytest.fixture(scope="module")
def kannel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kannel]:
    tmp = tmp_path_factory.mktemp("kannel")
    ports = {name: _free_port() for name in ("admin", "smsbox", "smsc", "sendsms")}
    admin = secrets.token_hex(8)
    users = {"plain": secrets.token_hex(8), "three": secrets.token_hex(8)}
    config = _config(tmp, ports, admin, users)
    seen: queue.Queue[tuple[str, dict[str, str]]] = queue.Queue()
    handler = type("Reports", (_Reports,), {"seen": seen})
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    smsc_log = tmp / "fakesmsc.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with (tmp / "boxes.out").open("wb") as out, smsc_log.open("wb") as smsc_out:
            procs.append(subprocess.Popen([BEARERBOX, config], stdout=out, stderr=out))  # noqa: S603
            # smsbox and fakesmsc give up at once if bearerbox is not listening yet.
            _wait_listening(ports["smsbox"], ports["smsc"], log=tmp / "boxes.out")
            procs.append(subprocess.Popen([SMSBOX, config], stdout=out, stderr=out))  # noqa: S603
            # -m 0: it sends nothing itself; stdin kept open, or it ends its interactive mode.
            smsc = [FAKESMSC, "-H", "127.0.0.1", "-r", str(ports["smsc"]), "-m", "0"]
            procs.append(
                subprocess.Popen(smsc, stdin=subprocess.PIPE, stdout=smsc_out, stderr=smsc_out)  # noqa: S603
            )
        _wait_ready(
            f"http://127.0.0.1:{ports['admin']}/status.txt?password={admin}",
            f"http://127.0.0.1:{ports['sendsms']}/cgi-bin/sendsms",
            [tmp / "bearerbox.log", tmp / "smsbox.log", tmp / "boxes.out"],
        )
        yield Kannel(
            sendsms=f"http://127.0.0.1:{ports['sendsms']}",
            dlr_base=f"http://127.0.0.1:{receiver.server_port}",
            reports=seen,
            smsc_log=smsc_log,
            users=users,
        )
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in reversed(procs):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.stdin is not None:
                proc.stdin.close()
        receiver.shutdown()
        receiver.server_close()


def adapter(kannel: Kannel, user: str, **extra: str) -> KannelAdapter:
    connection = Connection(
        id="conn_real",
        workspace_id="ws_1",
        provider="sms_e",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        credentials="v1.k.n.c",
        base_url=kannel.sendsms,
        dlr_token=TOKEN,
    )
    credentials = {"username": user, "password": kannel.users[user], "dlr_url": kannel.dlr_base}
    return KannelAdapter(connection, {**credentials, **extra})


def message(text: str, job: str) -> SubmitRequest:
    return SubmitRequest(job_id=job, to=TO, text=text, sender="ACME")


async def read(adapter: KannelAdapter, kannel: Kannel, message_id: str) -> ProviderReport:
    """The next report Kannel made for ``message_id`` (other tests' reports pass by)."""
    while True:
        path, query = await asyncio.to_thread(kannel.report)
        assert path == f"/v1/dlr/conn_real/{TOKEN}"
        [report] = adapter.parse_reports(InboundCallback("GET", {}, query))
        if report.provider_message_id == message_id:
            return report


async def test_kannels_reports_name_the_minted_id_and_the_handset(kannel: Kannel) -> None:
    gateway = adapter(kannel, "plain")
    before = len(kannel.delivered(0))
    outcome = await gateway.submit(message("Kodunuz 1234", "msg_real_reports"))
    await gateway.aclose()

    assert outcome.kind == "accepted"
    # fakesmsc acknowledges at once (8: delivered to SMSC), then reports success (1).
    # The id we minted (job and attempt) comes back in each report.
    assert outcome.provider_message_id == "msg_real_reports.0"
    reports = [await read(gateway, kannel, "msg_real_reports.0") for _ in range(2)]
    assert sorted((r.provider_status, r.status) for r in reports) == [
        ("1", "delivered"),
        ("8", "pending"),
    ]
    # The handset, never our sender "ACME" (Kannel's %P in a report).
    assert {r.to for r in reports} == {TO}
    [got] = (await asyncio.to_thread(kannel.delivered, before + 1))[before:]
    assert got == f"ACME {TO} text Kodunuz 1234"


async def test_the_gateways_part_limit_is_kept_before_the_call(kannel: Kannel) -> None:
    plain, three = adapter(kannel, "plain"), adapter(kannel, "three", max_parts="3")
    before = len(kannel.delivered(0))

    # The gateway's own behaviour: a user without max-messages sends the first part only.
    async with httpx.AsyncClient() as http:
        cut = await http.get(
            f"{kannel.sendsms}/cgi-bin/sendsms",
            params={"username": "plain", "password": kannel.users["plain"], "from": "ACME",
                    "to": TO, "text": "a" * 300},
        )  # fmt: skip
    refused = await plain.submit(message("b" * 300, "msg_real_refused"))
    whole = await three.submit(message("c" * 300, "msg_real_whole"))
    await plain.aclose()
    await three.aclose()

    assert cut.status_code == 202, cut.text
    assert refused.kind == "rejected"
    assert refused.error is not None
    assert refused.error.code == "BODY_TOO_LONG"
    assert whole.kind == "accepted"
    got = (await asyncio.to_thread(kannel.delivered, before + 3))[before:]
    # 300 characters: 1 part of 160 through the plain user, 2 parts through "three"; the
    # refused text never reached the gateway.
    assert len(got) == 3
    assert got[0] == f"ACME {TO} text {'a' * 160}"
    assert all("b" not in line.split(" ", 3)[-1] for line in got)
    assert "".join(line.rsplit(" ", 1)[-1] for line in got[1:]) == "c" * 300
