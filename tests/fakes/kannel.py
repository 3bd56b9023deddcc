"""A local Kannel smsbox speaking the ``sendsms`` interface the ``sms_e`` adapter expects.

It answers as ``gw/smsbox.c`` does, in ``text/html``: 202 ``0: Accepted for delivery`` (or, by
:attr:`KannelFake.mode`, ``3: Queued for later delivery``, ``Sent.`` or a Kannel-compatible
front end's ``Success "<id>"``; Jasmin has its own API and fake, :mod:`fakes.jasmin`);
403 ``Authorization failed for sendsms``; 400 for field errors (``Missing receiver number,
rejected``, ``Sender missing and no global set, rejected``,
``Coding field misformed, rejected``, ``DLR-Mask field misformed, rejected``,
``DLR-URL field misformed, rejected``); 404 ``Unknown request.`` elsewhere.

Knobs script the next answers (:meth:`KannelFake.script`): any status and body, a delay, HTML,
huge bodies. Everything received is in :attr:`KannelFake.received`. :meth:`KannelFake.report`
builds the delivery-report request Kannel would make to a message's ``dlr-url``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qsl, quote, urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["PASSWORD", "USERNAME", "Canned", "KannelFake", "Received"]

USERNAME = "tester"
#: Characters that need escaping, to prove the query is built right.
PASSWORD = "p@ss word&="

Mode = Literal["accepted", "queued", "sent", "success-id"]

_OK_BODY: dict[Mode, str] = {
    "accepted": "0: Accepted for delivery",
    "queued": "3: Queued for later delivery",
    "sent": "Sent.",
}


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    #: The decoded query parameters (last value wins, as in Kannel's CGI parsing).
    params: dict[str, str]
    raw_query: bytes
    headers: dict[str, str]


@dataclass
class Canned:
    """One scripted answer; the default content type is smsbox's own ``text/html``."""

    status: int = 202
    body: bytes | str = b""
    content_type: str = "text/html"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


class KannelFake:
    def __init__(
        self,
        *,
        username: str = USERNAME,
        password: str = PASSWORD,
        global_sender: str | None = None,
        mode: Mode = "accepted",
    ) -> None:
        self.username = username
        self.password = password
        self.global_sender = global_sender
        self.mode: Mode = mode
        self.received: list[Received] = []
        self._script: deque[Canned] = deque()
        self.app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])

    def script(self, *answers: Canned) -> None:
        """Queue answers for the next requests, in order; then the fake behaves normally again."""
        self._script.extend(answers)

    async def _handle(self, request: Request) -> Response:
        self.received.append(
            Received(
                method=request.method,
                path=request.url.path,
                params=dict(request.query_params),
                raw_query=request.scope.get("query_string", b""),
                headers=dict(request.headers),
            )
        )
        if self._script:
            canned = self._script.popleft()
            if canned.delay:
                await asyncio.sleep(canned.delay)
            return Response(
                canned.body,
                status_code=canned.status,
                media_type=canned.content_type,
                headers=canned.headers,
            )
        if request.url.path != "/cgi-bin/sendsms":
            return _html(404, "Unknown request.")
        return self._sendsms(dict(request.query_params))

    def _sendsms(self, params: dict[str, str]) -> Response:
        user = params.get("username", params.get("user"))
        password = params.get("password", params.get("pass"))
        if user != self.username or password != self.password:
            return _html(403, "Authorization failed for sendsms")
        if "to" not in params:
            return _html(400, "Missing receiver number, rejected")
        if not params["to"]:
            return _html(400, "Empty receiver number not allowed, rejected")
        dlr_url = params.get("dlr-url", "")
        if dlr_url and not dlr_url.lower().startswith(("http://", "https://")):
            return _html(400, "DLR-URL field misformed, rejected")
        if not -1 <= _int(params.get("dlr-mask")) <= 63:
            return _html(400, "DLR-Mask field misformed, rejected")
        if not -1 <= _int(params.get("coding")) <= 2:
            return _html(400, "Coding field misformed, rejected")
        if not params.get("from") and self.global_sender is None:
            return _html(400, "Sender missing and no global set, rejected")
        if self.mode == "success-id":
            return _html(200, f'Success "{uuid.uuid4()}"')
        return _html(202, _OK_BODY[self.mode])

    def report(
        self,
        received: Received,
        dlr_type: int,
        *,
        answer: str = "",
        at: int | None = None,
    ) -> tuple[str, dict[str, str]]:
        """The GET Kannel makes for ``received``'s ``dlr-url``: path and decoded query.

        Escapes are substituted URL-encoded, as Kannel does: ``%d`` type, ``%A`` SMSC reply,
        ``%T`` Unix time, ``%i`` smsc-id, ``%I`` internal id, and the report's own sender and
        receiver: a report comes *from* the handset, so ``%p`` is the message's ``to`` and
        ``%P`` its ``from`` (as Kannel 1.4.5 does: tests/providers/test_kannel_real.py).
        """
        template = received.params["dlr-url"]
        values = {
            "d": str(dlr_type),
            "A": answer,
            "T": str(int(time.time()) if at is None else at),
            "p": received.params["to"],
            "P": received.params.get("from", ""),
            "i": "smsc1",
            "I": str(uuid.uuid4()),
        }
        url = _substitute(template, values)
        parts = urlsplit(url)
        return parts.path, dict(parse_qsl(parts.query, keep_blank_values=True))


def _substitute(template: str, values: dict[str, str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(template):
        char = template[i]
        if char == "%" and i + 1 < len(template) and template[i + 1] in values:
            out.append(quote(values[template[i + 1]], safe=""))
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


def _int(value: str | None) -> int:
    # smsbox reads numbers with sscanf("%d"): garbage leaves the field undefined (-1).
    try:
        return int(value) if value is not None else -1
    except ValueError:
        return -99


def _html(status: int, text: str) -> Response:
    return Response(text, status_code=status, media_type="text/html")
