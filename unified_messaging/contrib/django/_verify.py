"""One-time codes (D34) from a Django view, as :func:`~._messenger.send` sends a message:
:func:`start_verification` and :func:`check_verification` as the configured principal.

``start_verification(to=…, http_request=request)`` passes the visitor's address
(``REMOTE_ADDR``) as ``client_ip``, so the SMS-pumping guard can count starts per address;
behind a proxy, pass ``client_ip`` yourself from the header your proxy sets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._messenger import get_messenger, get_principal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from django.http import HttpRequest

    from ...verifications._models import CheckResponse, VerificationOut

__all__ = ["check_verification", "start_verification"]


def start_verification(
    request: Mapping[str, Any] | None = None,
    /,
    *,
    http_request: HttpRequest | None = None,
    **fields: Any,
) -> VerificationOut:
    """Send a code (or re-send the recipient's pending one): ``start_verification(to="0555…")``
    or ``start_verification({"to": …, "locale": "en"})``. ``http_request``: the view's
    request, whose ``REMOTE_ADDR`` becomes ``client_ip`` unless one is given. Raises the
    library's errors (e.g. ``VerificationRateLimited``, 429, with ``retry_after``)."""
    body = {**(request or {}), **fields}
    if http_request is not None and "client_ip" not in body:
        address = http_request.META.get("REMOTE_ADDR")
        if address:
            body["client_ip"] = address
    return get_messenger().verifications.start(get_principal(), body)


def check_verification(verification_id: str, code: str) -> CheckResponse:
    """Check a code: ``check_verification(ver_id, "123456").status == "approved"`` once.
    Raises the library's errors (``VerificationNotFound``, ``VerificationAlreadyApproved``)."""
    return get_messenger().verifications.check(get_principal(), verification_id, {"code": code})
