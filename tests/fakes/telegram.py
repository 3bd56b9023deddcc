"""A local Telegram Bot API speaking what the ``chatbot`` adapter expects.

``POST /bot<token>/sendMessage`` and ``/bot<token>/getMe`` answer as the Bot API does:
``{"ok": true, "result": Message}``, or ``{"ok": false, "error_code", "description"}`` with
Telegram's words: 401 ``Unauthorized`` for an unknown token, 404 ``Not Found`` for a path that
is no bot method, 400 ``Bad Request: chat not found`` (also for a user's ``@name``),
``Bad Request: message text is empty``, ``Bad Request: message is too long``, 403
``Forbidden: bot was blocked by the user`` and ``Forbidden: bot can't initiate conversation
with a user``.

Knobs script the next answers (:meth:`TelegramFake.script`): any status, body and content type,
a delay. Everything received is in :attr:`TelegramFake.received`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

__all__ = ["TOKEN", "Canned", "Received", "TelegramFake", "error_body"]

MAX_TEXT = 4096
TOKEN = "123456:AAH-fake_Token-0123456789abcdef"


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: object | None


@dataclass
class Canned:
    status: int = 200
    body: bytes | str = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def error_body(code: int, description: str, **parameters: int) -> bytes:
    document: dict[str, object] = {"ok": False, "error_code": code, "description": description}
    if parameters:
        document["parameters"] = parameters
    return json.dumps(document).encode()


class TelegramFake:
    def __init__(self, *, token: str = TOKEN) -> None:
        self.token = token
        #: Chats the bot can write to: id → Telegram chat type; ``@name`` keys are channels.
        self.chats: dict[str, str] = {"4242": "private", "-1001234567890": "supergroup"}
        self.channels: dict[str, int] = {"@umchannel": -1009876543210}
        self.blocked: set[str] = {"777"}
        self.never_started: set[str] = {"888"}
        self.received: list[Received] = []
        self._script: deque[Canned] = deque()
        self._next_message_id = 100
        self.app = Starlette(routes=[Route("/{path:path}", self._handle, methods=["GET", "POST"])])

    def script(self, *answers: Canned) -> None:
        self._script.extend(answers)

    async def _handle(self, request: Request) -> Response:
        body = await request.body()
        try:
            parsed: object | None = json.loads(body) if body else None
        except ValueError:
            parsed = None
        self.received.append(
            Received(request.method, request.url.path, dict(request.headers), body, parsed)
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
        prefix, _, method = request.url.path.removeprefix("/").partition("/")
        if not prefix.startswith("bot") or method not in ("sendMessage", "getMe"):
            return _error(404, "Not Found")
        if prefix.removeprefix("bot") != self.token:
            return _error(401, "Unauthorized")
        if method == "getMe":
            return _ok({"id": int(self.token.split(":")[0]), "is_bot": True, "first_name": "UM"})
        return self._send_message(parsed if isinstance(parsed, dict) else {})

    def _send_message(self, params: dict[str, object]) -> Response:
        chat_id = params.get("chat_id")
        text = params.get("text")
        if chat_id in (None, ""):
            return _error(400, "Bad Request: chat_id is empty")
        if not isinstance(text, str) or not text.strip():
            return _error(400, "Bad Request: message text is empty")
        if len(text) > MAX_TEXT:
            return _error(400, "Bad Request: message is too long")
        key = str(chat_id)
        if key in self.blocked:
            return _error(403, "Forbidden: bot was blocked by the user")
        if key in self.never_started:
            return _error(403, "Forbidden: bot can't initiate conversation with a user")
        if key.startswith("@"):
            if key not in self.channels:
                return _error(400, "Bad Request: chat not found")
            chat = {"id": self.channels[key], "type": "channel", "username": key[1:]}
        elif key in self.chats:
            chat = {"id": int(key), "type": self.chats[key]}
        else:
            return _error(400, "Bad Request: chat not found")
        self._next_message_id += 1
        return _ok(
            {
                "message_id": self._next_message_id,
                "from": {"id": int(self.token.split(":")[0]), "is_bot": True, "first_name": "UM"},
                "chat": chat,
                "date": int(time.time()),
                "text": text,
            }
        )


def _ok(result: object) -> Response:
    return JSONResponse({"ok": True, "result": result})


def _error(code: int, description: str) -> Response:
    return Response(error_body(code, description), status_code=code, media_type="application/json")
