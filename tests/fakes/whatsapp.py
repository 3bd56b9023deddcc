"""A local WhatsApp Cloud API (Graph API) speaking what the ``bizchat`` adapter expects.

``POST /{version}/{phone_number_id}/messages`` checks the Bearer token (401, code 190), the
phone number id (400, code 100), the body (400, code 100 / 131008 / 131051), the 24-hour
customer service window for free text (400, code 131047) and the approved templates (404, code
132001; 400, code 132000 for a wrong parameter count), and answers ``{"messaging_product",
"contacts", "messages": [{"id": "wamid.…"}]}``. ``GET /{version}/{phone_number_id}`` answers the
phone number's fields. Errors use Graph's envelope ``{"error": {"message": "(#code) Title",
"type", "code", "error_data": {"messaging_product", "details"}, "fbtrace_id"}}``.

Knobs script the next answers (:meth:`WhatsAppFake.script`, :func:`graph_error`). Everything
received is in :attr:`WhatsAppFake.received`. :meth:`WhatsAppFake.status_webhook` builds a
signed status webhook as Meta sends it.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

ACCESS_TOKEN = "EAAG-fake-access-token-0123456789"
PHONE_NUMBER_ID = "106540352242922"
APP_SECRET = "fake-app-secret"

__all__ = [
    "ACCESS_TOKEN",
    "APP_SECRET",
    "PHONE_NUMBER_ID",
    "Canned",
    "Received",
    "WhatsAppFake",
    "graph_error",
    "status",
]


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


def graph_error(
    status: int,
    code: int,
    title: str,
    details: str = "",
    *,
    error_type: str = "OAuthException",
    headers: dict[str, str] | None = None,
) -> Canned:
    """A Graph API error answer, as Cloud API words them."""
    error: dict[str, object] = {
        "message": f"(#{code}) {title}",
        "type": error_type,
        "code": code,
        "fbtrace_id": "A" + secrets.token_hex(10),
    }
    if details:
        error["error_data"] = {"messaging_product": "whatsapp", "details": details}
    return Canned(status, json.dumps({"error": error}).encode(), headers=headers or {})


class WhatsAppFake:
    def __init__(
        self,
        *,
        access_token: str = ACCESS_TOKEN,
        phone_number_id: str = PHONE_NUMBER_ID,
        app_secret: str = APP_SECRET,
    ) -> None:
        self.access_token = access_token
        self.phone_number_id = phone_number_id
        self.app_secret = app_secret
        #: Recipients (digits) who wrote to the business in the last 24 hours.
        self.in_window: set[str] = {"905551112233"}
        #: Approved templates: (name, language) → number of body parameters.
        self.templates: dict[tuple[str, str], int] = {("order_ready", "tr"): 2}
        #: Approved authentication templates (category AUTHENTICATION): one body parameter,
        #: the code, and a copy-code button that must be sent the same code.
        self.authentication: set[tuple[str, str]] = set()
        self.received: list[Received] = []
        self._script: deque[Canned] = deque()
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
        if request.headers.get("authorization") != f"Bearer {self.access_token}":
            return _answer(
                graph_error(401, 190, "Invalid OAuth access token - Cannot parse access token")
            )
        parts = request.url.path.strip("/").split("/")
        if len(parts) < 2 or parts[1] != self.phone_number_id:
            return _answer(
                graph_error(
                    400,
                    100,
                    "Unsupported get request.",
                    f"Object with ID '{parts[-1]}' does not exist",
                    error_type="GraphMethodException",
                )
            )
        if request.method == "GET" and len(parts) == 2:
            return JSONResponse(
                {
                    "verified_name": "UM Test",
                    "display_phone_number": "+90 555 000 00 00",
                    "id": self.phone_number_id,
                    "quality_rating": "GREEN",
                }
            )
        if request.method == "POST" and parts[2:] == ["messages"]:
            return self._message(parsed if isinstance(parsed, dict) else {})
        return _answer(graph_error(400, 100, "Invalid parameter"))

    def _message(self, params: dict[str, object]) -> Response:
        if params.get("messaging_product") != "whatsapp":
            return _answer(
                graph_error(400, 100, "Invalid parameter", "Param messaging_product is required")
            )
        to = params.get("to")
        if not isinstance(to, str) or not to.isdigit():
            return _answer(graph_error(400, 131008, "Required parameter is missing", "to"))
        kind = params.get("type")
        if kind == "text":
            text = params.get("text")
            if not isinstance(text, dict) or not isinstance(text.get("body"), str):
                return _answer(graph_error(400, 131008, "Required parameter is missing", "text"))
            if to not in self.in_window:
                return _answer(
                    graph_error(
                        400,
                        131047,
                        "Re-engagement message",
                        "Message failed to send because more than 24 hours have passed since "
                        "the customer last replied to this number.",
                    )
                )
        elif kind == "template":
            problem = self._template_problem(params.get("template"))
            if problem is not None:
                return problem
        else:
            return _answer(graph_error(400, 131051, "Unsupported message type"))
        wamid = "wamid." + base64.b64encode(secrets.token_bytes(24)).decode()
        return JSONResponse(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": to}],
                "messages": [{"id": wamid}],
            }
        )

    def _template_problem(self, template: object) -> Response | None:
        if not isinstance(template, dict):
            return _answer(graph_error(400, 131008, "Required parameter is missing", "template"))
        language = template.get("language")
        code = language.get("code") if isinstance(language, dict) else None
        expected = self.templates.get((str(template.get("name")), str(code)))
        if expected is None:
            return _answer(
                graph_error(
                    404,
                    132001,
                    "Template name does not exist in the translation",
                    f"template name ({template.get('name')}) does not exist in {code}",
                )
            )
        given = 0
        for component in template.get("components") or []:
            if isinstance(component, dict) and component.get("type") == "body":
                given += len(component.get("parameters") or [])
        if (str(template.get("name")), str(code)) in self.authentication:
            problem = _copy_code_problem(template)
            if problem is not None:
                return problem
        if given != expected:
            return _answer(
                graph_error(
                    400,
                    132000,
                    "Number of parameters does not match the expected number of params",
                    f"body: number of localizable_params ({given}) does not match the "
                    f"expected number of params ({expected})",
                )
            )
        return None

    # --- webhooks ---------------------------------------------------------------------------------

    def inbound_webhook(
        self, messages: Sequence[dict[str, object]], *, secret: str | None = None
    ) -> tuple[bytes, dict[str, str]]:
        """A ``messages`` webhook (users writing to the business) as Meta POSTs it, signed."""
        senders = [str(m.get("from")) for m in messages]
        value = {
            "messaging_product": "whatsapp",
            "metadata": {
                "display_phone_number": "905550000000",
                "phone_number_id": self.phone_number_id,
            },
            "contacts": [{"profile": {"name": "Ayşe"}, "wa_id": w} for w in senders],
            "messages": list(messages),
        }
        document = {
            "object": "whatsapp_business_account",
            "entry": [
                {
                    "id": "102290129340398",
                    "changes": [{"value": value, "field": "messages"}],
                }
            ],
        }
        body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
        digest = hmac.new((secret or self.app_secret).encode(), body, hashlib.sha256).hexdigest()
        headers = {"content-type": "application/json", "x-hub-signature-256": f"sha256={digest}"}
        return body, headers

    def status_webhook(
        self,
        statuses: Sequence[dict[str, object]],
        *,
        phone_number_id: str | None = None,
        secret: str | None = None,
    ) -> tuple[bytes, dict[str, str]]:
        """A ``statuses`` webhook as Meta POSTs it: raw body and headers, signed."""
        document = {
            "object": "whatsapp_business_account",
            "entry": [
                {
                    "id": "102290129340398",
                    "changes": [
                        {
                            "value": {
                                "messaging_product": "whatsapp",
                                "metadata": {
                                    "display_phone_number": "905550000000",
                                    "phone_number_id": phone_number_id or self.phone_number_id,
                                },
                                "statuses": list(statuses),
                            },
                            "field": "messages",
                        }
                    ],
                }
            ],
        }
        body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
        digest = hmac.new((secret or self.app_secret).encode(), body, hashlib.sha256).hexdigest()
        headers = {"content-type": "application/json", "x-hub-signature-256": f"sha256={digest}"}
        return body, headers


def text_message(sender: str, body: str, *, wamid: str | None = None) -> dict[str, object]:
    """One inbound ``messages[]`` item of type ``text``, from ``sender`` (digits, no ``+``)."""
    return {
        "from": sender,
        "id": wamid or f"wamid.IN{abs(hash((sender, body, time.time_ns()))):x}",
        "timestamp": str(int(time.time())),
        "type": "text",
        "text": {"body": body},
    }


def status(
    wamid: str,
    word: str,
    *,
    recipient: str = "905551112233",
    errors: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    """One ``statuses[]`` item."""
    item: dict[str, object] = {
        "id": wamid,
        "status": word,
        "timestamp": str(int(time.time())),
        "recipient_id": recipient,
    }
    if errors is not None:
        item["errors"] = errors
    return item


def _copy_code_problem(template: dict[str, object]) -> Response | None:
    """An authentication template's copy-code button: a ``url`` button at index ``"0"``
    whose one parameter is the body's code (Meta: both get the same one-time password)."""
    components = [c for c in template.get("components") or [] if isinstance(c, dict)]  # type: ignore[attr-defined]
    body = [c for c in components if c.get("type") == "body"]
    buttons = [c for c in components if c.get("type") == "button"]
    code = (body[0].get("parameters") or [{}])[0].get("text") if body else None
    if (
        len(buttons) != 1
        or buttons[0].get("sub_type") != "url"
        or buttons[0].get("index") != "0"
        or [p.get("text") for p in buttons[0].get("parameters") or []] != [code]
    ):
        return _answer(
            graph_error(
                400,
                131008,
                "Required parameter is missing",
                "buttons: Button at index 0 of type Url requires a parameter",
            )
        )
    return None


def _answer(canned: Canned) -> Response:
    return Response(canned.body, status_code=canned.status, media_type=canned.content_type)
