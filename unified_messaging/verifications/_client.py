"""``client.verifications``: ``/v1/verifications`` (D34) from :class:`Client` and
:class:`AsyncClient`.

Each call is validated against the same request models as the server's, then made through
the client's own request path (its retries, its errors: a D13 body becomes the library's
exception, e.g. :class:`VerificationRateLimited` with ``retry_after``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias
from urllib.parse import quote

from .._models import parse_model
from ._models import CheckRequest, CheckResponse, StartRequest, VerificationOut
from ._stats import DEFAULT_STATS_HOURS, StatsQuery, VerificationStats

__all__ = ["AsyncVerificationsClient", "VerificationsClient"]

#: ``(method, path, JSON body or None)`` to the answer's bytes.
AsyncCall: TypeAlias = Callable[[str, str, object], Awaitable[bytes]]
Call: TypeAlias = Callable[[str, str, object], bytes]

StartInput = StartRequest | Mapping[str, Any]


def _start_body(request: StartInput) -> object:
    return parse_model(StartRequest, request).model_dump(mode="json", exclude_unset=True)


def _check_body(code: str) -> object:
    return parse_model(CheckRequest, {"code": code}).model_dump(mode="json")


def _stats_path(hours: int) -> str:
    return f"/v1/verifications/stats?hours={parse_model(StatsQuery, {'hours': hours}).hours}"


def _path(verification_id: str, action: str = "") -> str:
    return f"/v1/verifications/{quote(verification_id, safe='')}{action}"


class AsyncVerificationsClient:
    """``await client.verifications.start({"to": …})`` and the rest, for :class:`AsyncClient`."""

    def __init__(self, call: AsyncCall) -> None:
        self._call = call

    def __repr__(self) -> str:
        return "AsyncVerificationsClient()"

    async def start(self, request: StartInput) -> VerificationOut:
        """``POST /v1/verifications``: send a code (or re-send the pending one)."""
        body = await self._call("POST", "/v1/verifications", _start_body(request))
        return VerificationOut.model_validate_json(body)

    async def check(self, verification_id: str, code: str) -> CheckResponse:
        """``POST /v1/verifications/{id}/check``: ``status`` is ``approved`` once."""
        body = await self._call("POST", _path(verification_id, "/check"), _check_body(code))
        return CheckResponse.model_validate_json(body)

    async def get(self, verification_id: str) -> VerificationOut:
        """``GET /v1/verifications/{id}``."""
        return VerificationOut.model_validate_json(
            await self._call("GET", _path(verification_id), None)
        )

    async def cancel(self, verification_id: str) -> VerificationOut:
        """``POST /v1/verifications/{id}/cancel``."""
        return VerificationOut.model_validate_json(
            await self._call("POST", _path(verification_id, "/cancel"), None)
        )

    async def stats(self, hours: int = DEFAULT_STATS_HOURS) -> VerificationStats:
        """``GET /v1/verifications/stats``: conversion per hour and channel."""
        return VerificationStats.model_validate_json(
            await self._call("GET", _stats_path(hours), None)
        )


class VerificationsClient:
    """The blocking twin of :class:`AsyncVerificationsClient`, for :class:`Client`."""

    def __init__(self, call: Call) -> None:
        self._call = call

    def __repr__(self) -> str:
        return "VerificationsClient()"

    def start(self, request: StartInput) -> VerificationOut:
        """``POST /v1/verifications``: send a code (or re-send the pending one)."""
        body = self._call("POST", "/v1/verifications", _start_body(request))
        return VerificationOut.model_validate_json(body)

    def check(self, verification_id: str, code: str) -> CheckResponse:
        """``POST /v1/verifications/{id}/check``: ``status`` is ``approved`` once."""
        body = self._call("POST", _path(verification_id, "/check"), _check_body(code))
        return CheckResponse.model_validate_json(body)

    def get(self, verification_id: str) -> VerificationOut:
        """``GET /v1/verifications/{id}``."""
        return VerificationOut.model_validate_json(self._call("GET", _path(verification_id), None))

    def cancel(self, verification_id: str) -> VerificationOut:
        """``POST /v1/verifications/{id}/cancel``."""
        return VerificationOut.model_validate_json(
            self._call("POST", _path(verification_id, "/cancel"), None)
        )

    def stats(self, hours: int = DEFAULT_STATS_HOURS) -> VerificationStats:
        """``GET /v1/verifications/stats``: conversion per hour and channel."""
        return VerificationStats.model_validate_json(self._call("GET", _stats_path(hours), None))
