"""Reading a POST body: media type, size cap (D16: 1 MiB), strict UTF-8 JSON, an object.

Every refusal is the core's :class:`~unified_messaging.RequestInvalid` (400) naming what was
wrong, or :class:`~unified_messaging.PayloadTooLarge` (413). The cap is checked twice: against
``Content-Length`` before reading, and against the bytes actually received, because a
chunked body announces no length and a lying client may announce a short one.
"""

from __future__ import annotations

import json
import math
import re

from starlette.requests import ClientDisconnect, Request

from .._errors import PayloadTooLarge, RequestInvalid

__all__ = ["check_media_type", "not_json_media_type", "read_body", "read_json_object"]

# Cheap pre-check for the rare body that may hold an unpaired surrogate escape: only such
# bodies pay for the full walk (a surrogate cannot be stored, sent nor encoded as UTF-8).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _NotJson(ValueError):
    pass


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The raw body, whatever its media type, within ``max_bytes`` (413 above it)."""
    _check_length(request.headers.get("content-length"), max_bytes)
    return await _read(request, max_bytes)


async def read_json_object(request: Request, max_bytes: int) -> dict[str, object]:
    check_media_type(request.headers.get("content-type"))
    _check_length(request.headers.get("content-length"), max_bytes)
    raw = await _read(request, max_bytes)
    value = _parse(raw)
    if not isinstance(value, dict):
        raise RequestInvalid.for_field("body", "must be a JSON object")
    return value


def not_json_media_type() -> RequestInvalid:
    """The 400 for a body that is not ``application/json``: REST's, and MCP's for the SDK's 415."""
    return RequestInvalid.for_field("Content-Type", "must be application/json")


def check_media_type(content_type: str | None) -> None:
    """``application/json``, in UTF-8 if a charset is named (400 naming ``Content-Type``)."""
    media_type, *params = (content_type or "").split(";")
    if media_type.strip().lower() != "application/json":
        raise not_json_media_type()
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in (
            "utf-8",
            "utf8",
        ):
            raise RequestInvalid.for_field("Content-Type", "charset must be utf-8")


def _check_length(content_length: str | None, max_bytes: int) -> None:
    if content_length is None:
        return
    if not content_length.strip().isdigit():
        raise RequestInvalid.for_field("Content-Length", "must be a whole number")
    if int(content_length) > max_bytes:
        raise PayloadTooLarge.over(max_bytes)


async def _read(request: Request, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    received = 0
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > max_bytes:
                raise PayloadTooLarge.over(max_bytes)
            chunks.append(chunk)
    except ClientDisconnect:
        raise RequestInvalid.for_field("body", "the request body was cut off") from None
    return b"".join(chunks)


def _parse(raw: bytes) -> object:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RequestInvalid.for_field("body", "must be UTF-8 encoded JSON") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise RequestInvalid.for_field(
            "body", f"is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise RequestInvalid.for_field("body", "is nested too deeply") from None
    except ValueError as exc:  # _NotJson, or an integer past Python's digit limit
        reason = str(exc) if isinstance(exc, _NotJson) else "a number is too large"
        raise RequestInvalid.for_field("body", f"is not valid JSON: {reason}") from None
    if _SURROGATE_ESCAPE.search(text) and not _encodable(value):
        raise RequestInvalid.for_field("body", "is not valid JSON text: unpaired surrogate")
    return value


def _no_constant(name: str) -> object:
    # Python's json reads NaN and Infinity, which JSON (RFC 8259) does not have.
    raise _NotJson(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson("a number is too large")
    return value


def _encodable(value: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True
