"""A local Jasmin SMS Gateway speaking its HTTP API, as the ``sms_e`` adapter with
``gateway=jasmin`` expects it.

``/send`` (GET or POST form) validates as ``jasmin/protocols/http/endpoints/send.py`` does, in
its order, and answers in ``text/plain``: ``200 Success "<uuid>"``; 400 ``Error "Argument
[x] is unknown."``, ``Error "Mandatory argument [x] is not found."``, ``Error "Argument [x]
has an invalid value: [v]."``, ``Error "content or hex-content not present."``; 403
``Error "Authentication failure for username:u"``; 400 ``Error "Authorization failed for user
[u] (…)."`` for a denied authorization (:attr:`JasminFake.denied`); 400 ``Error "Value filter
failed for user [u] (source_address filter mismatch)."`` (:attr:`JasminFake.source_filter`);
412 ``Error "No route found"`` (:attr:`JasminFake.routes`); 403 ``Error "User throughput
exceeded"`` (:attr:`JasminFake.throughput_exceeded`); 403 ``Error "Cannot charge submit_sm,
check RouterPB log file for details"`` (:attr:`JasminFake.balance`). A text longer than
``long_content_max_parts`` (:attr:`JasminFake.max_parts`) is cut, silently, as Jasmin does.
``/balance`` answers JSON. Knobs script the next answers (:meth:`JasminFake.script`).

Reports: :meth:`JasminFake.report_form` builds what Jasmin's DLR thrower sends for a message
and :meth:`JasminFake.throw` sends it to the message's ``dlr-url`` with the message's
``dlr-method``, reading the answer as the thrower does (acknowledged only by ``200`` with
``ACK/Jasmin``).
"""

from __future__ import annotations

import re
import uuid
from collections import deque
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["PASSWORD", "USERNAME", "Canned", "JasminFake", "Sent", "Thrown"]

USERNAME = "jasminuser"
#: Characters that need escaping, to prove the form is built right (Jasmin: 1-16 chars).
PASSWORD = "p@ss w&rd="

_FIELDS: dict[str, re.Pattern[str] | None] = {
    "to": re.compile(r"^\+?\d+$"),
    "from": None,
    "coding": re.compile(r"^(0|1|2|3|4|5|6|7|8|9|10|13|14)$"),
    "username": re.compile(r"^.{1,16}$"),
    "password": re.compile(r"^.{1,16}$"),
    "priority": re.compile(r"^[0-3]$"),
    "sdt": None,
    "validity-period": re.compile(r"^\d+$"),
    "dlr": re.compile(r"^(yes|no)$"),
    "dlr-url": re.compile(r"^(http|https)://.*$"),
    "dlr-level": re.compile(r"^[1-3]$"),
    "dlr-method": re.compile(r"^(get|post)$", re.IGNORECASE),
    "tags": re.compile(r"^([-a-zA-Z0-9,])*$"),
    "content": None,
    "hex-content": None,
    "custom_tlvs": None,
}
_MANDATORY = ("to", "username", "password")


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    #: The decoded arguments, query and form together (Twisted's ``request.args``).
    args: dict[str, str]
    content_type: str


@dataclass(frozen=True)
class Sent:
    """A message Jasmin queued: its id and what it would hand its SMSC connector."""

    id: str
    to: str
    sender: str | None
    coding: int
    text: str
    parts: int
    dlr_url: str | None
    dlr_level: int
    dlr_method: str


@dataclass(frozen=True)
class Thrown:
    """One report the DLR thrower sent, and whether the receiver acknowledged it."""

    form: dict[str, str]
    status: int
    body: str

    @property
    def acknowledged(self) -> bool:
        return self.status == 200 and self.body.strip() == "ACK/Jasmin"


@dataclass
class Canned:
    status: int = 200
    body: bytes | str = b""
    content_type: str = "text/plain"
    headers: dict[str, str] = field(default_factory=dict)


class JasminFake:
    def __init__(self, *, username: str = USERNAME, password: str = PASSWORD) -> None:
        self.username = username
        self.password = password
        #: Authorizations of the user that are off (``set_dlr_level``, ``http_send``, …).
        self.denied: set[str] = set()
        #: Does the MT router have a route for the user's messages?
        self.routes = True
        self.throughput_exceeded = False
        #: The user's balance in parts, or ``None`` for no balance quota.
        self.balance: float | None = None
        #: A pattern the sender must match, or ``None``.
        self.source_filter: re.Pattern[str] | None = None
        #: ``long_content_max_parts`` of ``jasmin.cfg`` ``[http-api]``.
        self.max_parts = 5
        self.received: list[Received] = []
        self.sent: list[Sent] = []
        self.thrown: list[Thrown] = []
        self._script: deque[Canned] = deque()
        self.app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])

    def script(self, *answers: Canned) -> None:
        self._script.extend(answers)

    async def _handle(self, request: Request) -> Response:
        args = dict(request.query_params)
        content_type = request.headers.get("content-type", "")
        if request.method == "POST" and content_type.startswith(
            "application/x-www-form-urlencoded"
        ):
            args.update(parse_qsl((await request.body()).decode("utf-8"), keep_blank_values=True))
        self.received.append(Received(request.method, request.url.path, args, content_type))
        if self._script:
            canned = self._script.popleft()
            return Response(canned.body, canned.status, canned.headers, canned.content_type)
        if request.url.path == "/send":
            return self._send(args)
        if request.url.path == "/balance" and request.method == "GET":
            return self._balance(args)
        return Response("No Such Resource", 404, media_type="text/html")

    # --- /send -----------------------------------------------------------------------------------

    def _send(self, args: dict[str, str]) -> Response:
        problem = _validate(args)
        if problem is not None:
            return _error(400, problem)
        if args["username"] != self.username or args["password"] != self.password:
            return _error(403, f"Authentication failure for username:{args['username']}")
        coding = int(args.get("coding", "0"))
        text = _text(args, coding)
        if text is None:
            return _error(400, f"Invalid hex-content data: '{args.get('hex-content')}'")
        user = f"User #{self.username}"
        for authorization, arg in (
            ("set_dlr_level", "dlr-level"),
            ("http_set_dlr_method", "dlr-method"),
            ("set_source_address", "from"),
            ("set_hex_content", "hex-content"),
        ):
            if arg in args and authorization in self.denied:
                return _error(400, f"Authorization failed for user [{user}] ({authorization}).")
        sender = args.get("from")
        if self.source_filter is not None and not self.source_filter.fullmatch(sender or ""):
            return _error(
                400, f"Value filter failed for user [{user}] (source_address filter mismatch)."
            )
        if not self.routes:
            return _error(412, "No route found")
        if self.throughput_exceeded:
            return _error(403, "User throughput exceeded")
        text, parts = _split(text, coding, self.max_parts)
        if self.balance is not None:
            if self.balance < parts:
                return _error(403, "Cannot charge submit_sm, check RouterPB log file for details")
            self.balance -= parts
        dlr = args.get("dlr-url") is not None or args.get("dlr-level") is not None
        message = Sent(
            id=str(uuid.uuid4()),
            to=args["to"],
            sender=sender,
            coding=coding,
            text=text,
            parts=parts,
            dlr_url=args.get("dlr-url") if dlr else None,
            dlr_level=int(args.get("dlr-level", "1")) if dlr else 0,
            dlr_method=args.get("dlr-method", "POST").upper(),
        )
        self.sent.append(message)
        return Response(f'Success "{message.id}"', 200, media_type="text/plain")

    def _balance(self, args: dict[str, str]) -> Response:
        if args.get("username") != self.username or args.get("password") != self.password:
            return JSONResponse(f"Authentication failure for username:{args.get('username')}", 403)
        balance = "ND" if self.balance is None else self.balance
        return JSONResponse({"balance": balance, "sms_count": "ND"})

    # --- reports ---------------------------------------------------------------------------------

    def report_form(
        self, message: Sent, message_status: str, *, level: int = 2, err: str = "000"
    ) -> dict[str, str]:
        """The fields Jasmin's DLR thrower sends for ``message`` (``throwers.py``)."""
        form = {
            "id": message.id,
            "level": str(level),
            "message_status": message_status,
            "connector": "smsc_tr1",
        }
        if level in (2, 3):
            form.update(
                {
                    "id_smsc": "2567",
                    "sub": "001",
                    "dlvrd": "001" if message_status == "DELIVRD" else "000",
                    "subdate": "2611270900",
                    "donedate": "2611270901",
                    "err": err,
                    "text": message.text[:20],
                }
            )
        return form

    async def throw(
        self, client: httpx.AsyncClient, message: Sent, message_status: str, **options: object
    ) -> Thrown:
        """Send a report for ``message`` to its ``dlr-url`` as the thrower does."""
        assert message.dlr_url is not None, "the message asked for no report"
        form = self.report_form(message, message_status, **options)  # type: ignore[arg-type]
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "text/plain",
            "User-Agent": "Jasmin gateway/1.0 DLRThrower",
        }
        if message.dlr_method == "GET":
            response = await client.get(message.dlr_url, params=form, headers=headers)
        else:
            response = await client.post(
                message.dlr_url, content=urlencode(form).encode(), headers=headers
            )
        thrown = Thrown(form, response.status_code, response.text)
        self.thrown.append(thrown)
        return thrown


def _validate(args: dict[str, str]) -> str | None:
    """``UrlArgsValidator`` and the content check of ``Send.render_POST``, in their order."""
    if not args:
        return "Mandatory arguments not found, please refer to the HTTPAPI specifications."
    for name in args:
        if name not in _FIELDS:
            return f"Argument [{name}] is unknown."
    for name, pattern in _FIELDS.items():
        if name in args and pattern is not None and pattern.match(args[name]) is None:
            return f"Argument [{name}] has an invalid value: [{args[name]}]."
    for name in _MANDATORY:
        if name not in args:
            return f"Mandatory argument [{name}] is not found."
    if ("content" in args) == ("hex-content" in args):
        if "content" in args:
            return "content and hex-content cannot be used both in same request."
        return "content or hex-content not present."
    return None


def _text(args: dict[str, str], coding: int) -> str | None:
    if "content" in args:
        return args["content"]
    try:
        raw = bytes.fromhex(args["hex-content"])
    except ValueError:
        return None
    return raw.decode("utf-16-be" if coding == 8 else "latin-1", "replace")


def _split(text: str, coding: int, max_parts: int) -> tuple[str, int]:
    """What Jasmin's ``SubmitSM`` makes of it: parts of 153 (7-bit) or 67 (UCS-2) characters,
    no more than ``max_parts``; the rest is dropped without a word."""
    single, part = (70, 67) if coding == 8 else (160, 153)
    if len(text) <= single:
        return text, 1
    parts = -(-len(text) // part)
    if parts > max_parts:
        return text[: max_parts * part], max_parts
    return text, parts


def _error(status: int, reason: str) -> Response:
    return Response(f'Error "{reason}"', status, media_type="text/plain")
