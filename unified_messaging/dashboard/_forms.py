"""Reading the dashboard's form posts: ``application/x-www-form-urlencoded``, capped in size.

The dashboard has no file uploads, so it reads the one encoding its forms send, itself, with
a bound on the body (Starlette's own form parsing would need python-multipart and has no
size bound for this encoding). A field given twice keeps its values in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qsl

from starlette.requests import Request

__all__ = ["MAX_FORM_BYTES", "Form", "FormTooLarge", "read_form"]

#: Far above any form of the dashboard (a template body is at most 1600 characters).
MAX_FORM_BYTES: Final = 64 * 1024


class FormTooLarge(Exception):
    """The body went past :data:`MAX_FORM_BYTES`."""


@dataclass(frozen=True, slots=True)
class Form:
    """A form post's fields; ``get`` gives the first value of a field."""

    fields: dict[str, list[str]] = field(default_factory=dict)

    def get(self, name: str, default: str = "") -> str:
        values = self.fields.get(name)
        return values[0] if values else default

    def getlist(self, name: str) -> list[str]:
        return list(self.fields.get(name, ()))

    def first_values(self) -> dict[str, str]:
        return {name: values[0] for name, values in self.fields.items() if values}


async def read_form(request: Request) -> Form:
    """The posted fields (an empty form for another content type: the caller refuses it by
    the fields it misses, and a CSRF token is then only found in the header)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormTooLarge
    if content_type != "application/x-www-form-urlencoded":
        return Form()
    fields: dict[str, list[str]] = {}
    for name, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        fields.setdefault(name, []).append(value)
    return Form(fields)
