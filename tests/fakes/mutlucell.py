"""A local Mutlucell XML gateway for the ``sms_d`` adapter's tests.

Speaks the wire format of Mutlucell's API pages and PHP library: ``POST /smsgw-ws/sndblkex``
(an ``<smspack>`` in, ``$<pack id>#<credits>`` or a bare error number out, HTTP 200 either
way), ``POST /smsgw-ws/gtblkrprtex`` (``<smsrapor>`` in, ``<number> <status>`` lines out) and
``POST /smsgw-ws/gtcrdtex`` (``<smskredi>`` in, ``$<credit>`` out). It checks the account,
the header, the charset, the pack's attributes (only the documented ones: an unknown one, an
IYS attribute included, is refused with 20) and the pack's shape as Mutlucell documents
them, and records every request it receives.

Knobs script misbehaviour for every later send: :meth:`FakeMutlucell.fail_with` (an error
number), :meth:`FakeMutlucell.answer` (any status, body and content type: 5xx, malformed,
HTML, huge), :meth:`FakeMutlucell.throttle` and ``delay``; ``report_error`` makes the report
endpoint answer an error number. Report statuses are set per number with ``statuses``.
:func:`serve` runs an app on a real loopback port.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._server import serve

__all__ = ["FakeMutlucell", "Received", "serve"]

_PLAIN = "text/plain; charset=UTF-8"
_CHARSETS = ("default", "turkish", "unicode")
#: The ``smspack`` attributes Mutlucell documents (its PHP library's ``sendBulk``, github.com/
#: mutlucell/api): any other attribute is an unknown one, and the pack is refused with 20.
_PACK_ATTRIBUTES = frozenset(
    {"ka", "pwd", "org", "tarih", "bitis", "addLinkToEnd", "IP", "aboneid", "bayiid",
     "zamanayay", "charset"}
)  # fmt: skip


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def xml(self) -> ET.Element:
        return ET.fromstring(self.body)  # noqa: S314 - our own adapter's output, in a test


@dataclass
class FakeMutlucell:
    username: str = "umuser"
    password: str = "p&ss\"<w>'"
    originators: tuple[str, ...] = ("UMTEST", "MUTLUCELL")
    credit: float = 10_000.0
    delay: float = 0.0
    #: Status number of each ``(pack id, number)`` in report answers; others get ``default``.
    statuses: dict[tuple[int, str], str] = field(default_factory=dict)
    default_status: str = "1"
    #: An error number the report endpoint answers instead of lines.
    report_error: str | None = None
    #: The account's blacklist (Mutlucell's ``addblklst``): numbers a pack skips, sending
    #: nothing to them and using no credit; a pack of only these answers ``$<id>#0.0``.
    blacklist: set[str] = field(default_factory=set)
    received: list[Received] = field(default_factory=list)
    packs: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    _scripted: tuple[int, bytes, str, dict[str, str]] | None = None
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(88096496))

    # --- knobs --------------------------------------------------------------------------------

    def fail_with(self, code: str) -> None:
        """Every later send answers this bare error number (with HTTP 200, as Mutlucell does)."""
        self.answer(200, code)

    def answer(
        self,
        status: int,
        body: str | bytes,
        content_type: str = _PLAIN,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Every later send gets exactly this answer, whatever it asked."""
        raw = body.encode("utf-8") if isinstance(body, str) else body
        self._scripted = (status, raw, content_type, dict(headers or {}))

    def throttle(self, retry_after: str | None = "30") -> None:
        extra = {} if retry_after is None else {"Retry-After": retry_after}
        self.answer(429, "Too Many Requests", headers=extra)

    def sends(self) -> list[Received]:
        return [r for r in self.received if r.path == "/smsgw-ws/sndblkex"]

    # --- the app ------------------------------------------------------------------------------

    @property
    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/smsgw-ws/sndblkex", self._send, methods=["POST"]),
                Route("/smsgw-ws/gtblkrprtex", self._report, methods=["POST"]),
                Route("/smsgw-ws/gtcrdtex", self._credit, methods=["POST"]),
                Route("/smsgw-ws/gtorgex", self._originators, methods=["POST"]),
            ]
        )

    async def _read(self, request: Request, tag: str) -> ET.Element | str:
        """The posted document, or the error number Mutlucell answers for it."""
        body = await request.body()
        self.received.append(Received(request.url.path, dict(request.headers), body))
        if self.delay:
            await asyncio.sleep(self.delay)
        try:
            root = ET.fromstring(body)  # noqa: S314 - test fake reading the adapter's output
        except ET.ParseError:
            return "20"
        if root.tag != tag or "ka" not in root.attrib or "pwd" not in root.attrib:
            return "20"
        if (root.get("ka"), root.get("pwd")) != (self.username, self.password):
            return "23"
        return root

    async def _send(self, request: Request) -> Response:
        root = await self._read(request, "smspack")
        if self._scripted is not None:
            status, raw, content_type, headers = self._scripted
            return Response(raw, status, headers=headers, media_type=content_type)
        if isinstance(root, str):
            return _plain(root)
        refusal = self._refusal(root)
        if refusal is not None:
            return _plain(refusal)
        pack = [
            (number, mesaj.findtext("metin", ""))
            for mesaj in root.findall("mesaj")
            for number in _numbers(mesaj.findtext("nums", ""))
        ]
        if len(pack) > self.credit:
            return _plain("22")
        pack_id = next(self._ids)
        self.packs[pack_id] = pack
        used = sum(1 for number, _ in pack if number not in self.blacklist)
        self.credit -= used
        return _plain(f"${pack_id}#{float(used)}")

    def _refusal(self, root: ET.Element) -> str | None:
        if root.get("org") not in self.originators:
            return "21"
        if root.get("charset", "default") not in _CHARSETS:
            return "20"
        if not set(root.attrib) <= _PACK_ATTRIBUTES:
            return "20"  # no IYS attribute among them: Mutlucell documents none
        messages = root.findall("mesaj")
        if not messages:
            return "20"
        for mesaj in messages:
            if not mesaj.findtext("metin") or not _numbers(mesaj.findtext("nums", "")):
                return "20"
        return None

    async def _report(self, request: Request) -> Response:
        root = await self._read(request, "smsrapor")
        if isinstance(root, str):
            return _plain(root)
        if self.report_error is not None:
            return _plain(self.report_error)
        pack_id = int(root.get("id") or 0)
        lines = [
            f"{number} {self.statuses.get((pack_id, number), self._status_of(number))}"
            for number, _ in self.packs.get(pack_id, [])
        ]
        return _plain("\n".join(lines) + ("\n" if lines else ""))

    def _status_of(self, number: str) -> str:
        return "0" if number in self.blacklist else self.default_status  # 0: not sent

    async def _credit(self, request: Request) -> Response:
        root = await self._read(request, "smskredi")
        return _plain(root if isinstance(root, str) else f"${self.credit}")

    async def _originators(self, request: Request) -> Response:
        """``gtorgex`` with ``<smsorig ka pwd/>``: ``$`` and one owned header a line."""
        root = await self._read(request, "smsorig")
        return _plain(root if isinstance(root, str) else "$" + "\n".join(self.originators))


def _numbers(nums: str) -> list[str]:
    return [re.sub(r"[^0-9]", "", n) for n in nums.split(",") if re.sub(r"[^0-9]", "", n)]


def _plain(text: str) -> Response:
    return Response(text, 200, media_type=_PLAIN)
