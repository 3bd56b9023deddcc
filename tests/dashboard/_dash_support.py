"""A dashboard on real loopback HTTP for the tests, and a client that reads it as a browser
would: cookies kept, redirects looked at one by one, the CSRF token taken from the page.

Not in ``conftest.py``: every test folder has a ``conftest`` module, so importing names from
one by that name depends on which was loaded first.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser

import httpx

__all__ = ["PASSWORD", "Console", "PageAudit", "csrf_of"]

PASSWORD = "correct horse battery staple"
_HX_TOKEN = re.compile(r'"X-CSRF-Token": "([^"]+)"')
_FIELD_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(page: str) -> str:
    found = _HX_TOKEN.search(page) or _FIELD_TOKEN.search(page)
    assert found, "the page carries no CSRF token"
    return html.unescape(found.group(1))


@dataclass
class Console:
    """One browser on the dashboard at ``base`` (``http://127.0.0.1:PORT/dashboard``)."""

    http: httpx.AsyncClient
    base: str

    @property
    def origin(self) -> str:
        return str(httpx.URL(self.base).copy_with(path="", query=None)).rstrip("/")

    async def get(self, path: str, **kwargs: object) -> httpx.Response:
        return await self.http.get(self.base + path, **kwargs)  # type: ignore[arg-type]

    async def sign_in(self, email: str, password: str = PASSWORD) -> httpx.Response:
        form = await self.get("/login")
        return await self.http.post(
            self.base + "/login",
            data={"email": email, "password": password, "csrf_token": csrf_of(form.text)},
            headers={"Origin": self.origin},
        )

    async def token(self, path: str = "/") -> str:
        page = await self.get(path)
        assert page.status_code == 200, (page.status_code, page.headers.get("location"))
        return csrf_of(page.text)

    async def post(
        self,
        path: str,
        data: dict[str, str] | None = None,
        *,
        csrf: str | None = None,
        origin: str | None = "own",
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """A form post as the dashboard's own page makes it (token and ``Origin``); pass
        ``csrf=""`` for none, ``origin=None`` for no ``Origin`` header, or another one."""
        fields = dict(data or {})
        token = await self.token() if csrf is None else csrf
        if token:
            fields["csrf_token"] = token
        headers = dict(headers or {})
        if origin is not None:
            headers["Origin"] = self.origin if origin == "own" else origin
        return await self.http.post(self.base + path, data=fields, headers=headers)

    async def follow(self, answer: httpx.Response) -> httpx.Response:
        """The page a form post redirected to (post/redirect/get), as the browser loads it."""
        assert answer.status_code == 303, (answer.status_code, answer.text[:300])
        location = answer.headers["location"]
        assert location.startswith("/"), location
        return await self.http.get(self.origin + location)


class PageAudit(HTMLParser):
    """What a page is made of, for the rules every page keeps: scripts only from files, no
    event-handler attributes, a label for every field, text in every button."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.inline_scripts = 0
        self.handlers: list[str] = []
        self.fields: list[str] = []  # ids (or names) of visible form fields
        self.labelled: set[str] = set()
        self.empty_buttons = 0
        self._in_label = 0
        self._button_text: list[str] | None = None
        self._in_script = False
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.handlers += [name for name, _ in attrs if name.startswith(("on", "hx-on"))]
        if tag == "script":
            self._in_script = "src" not in found
        elif tag == "label":
            self._in_label += 1
            if found.get("for"):
                self.labelled.add(str(found["for"]))
        elif tag in ("input", "select", "textarea") and found.get("type") != "hidden":
            ident = str(found.get("id") or found.get("name"))
            self.fields.append(ident)
            if self._in_label or found.get("aria-label"):
                self.labelled.add(ident)
        elif tag == "button":
            self._button_text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False
        elif tag == "label":
            self._in_label -= 1
        elif tag == "button" and self._button_text is not None:
            if not "".join(self._button_text).strip():
                self.empty_buttons += 1
            self._button_text = None

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline_scripts += 1
        if self._button_text is not None:
            self._button_text.append(data)

    @property
    def unlabelled(self) -> list[str]:
        return [f for f in self.fields if f not in self.labelled]
