"""İYS's errors (D33), each with its HTTP status and code, in the one hierarchy:

    MessagingError
    ├── NotFound ── IysNotConnected            404 IYS_NOT_CONNECTED
    ├── Unprocessable
    │   ├── IysCredentialsRefused              422 IYS_CREDENTIALS_REFUSED (the API user)
    │   ├── IysProviderUnsupported             422 IYS_PROVIDER_UNSUPPORTED (no consent API)
    │   └── IysRefused                         422 IYS_REFUSED (+ h_code: İYS's own H-code)
    └── IysUnavailable                         502 IYS_UNAVAILABLE (ConnectionError; + retry_after)
        ├── IysThrottled                           IYS_RATE_LIMITED (İYS answered 429)
        └── IysTokenLimit                          IYS_TOKEN_LIMIT (our cap on token requests)

:class:`IysTokenExpired` is İYS's 401 to a call with an access token: the client asks for a
new token and calls once more, so no caller sees it. Messages never hold a password or a
token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._errors import MessagingError, NotFound, Unprocessable

__all__ = [
    "IysCredentialsRefused",
    "IysError",
    "IysNotConnected",
    "IysProviderUnsupported",
    "IysRefused",
    "IysThrottled",
    "IysTokenExpired",
    "IysTokenLimit",
    "IysUnavailable",
]


@dataclass(frozen=True, slots=True)
class IysError:
    """One entry of İYS's 422 ``errors``: its H-code, message and where in the consent."""

    code: str
    message: str
    location: tuple[str, ...] = ()


class IysNotConnected(NotFound):
    code = "IYS_NOT_CONNECTED"
    default_message = "The workspace has no İYS connection."


class IysCredentialsRefused(Unprocessable):
    code = "IYS_CREDENTIALS_REFUSED"
    default_message = "İYS refused the API user name or password."


class IysProviderUnsupported(Unprocessable):
    """``iys connect --via-provider`` named a connection whose provider has no consent API
    of ours (only İletimerkezi's and Verimor's are supported)."""

    code = "IYS_PROVIDER_UNSUPPORTED"
    default_message = "The connection's provider has no consent API."


class IysRefused(Unprocessable):
    """İYS answered 422: ``errors`` as it listed them; ``h_code`` is the first one's."""

    code = "IYS_REFUSED"
    default_message = "İYS refused the request."

    def __init__(self, message: str | None = None, errors: Sequence[IysError] = ()) -> None:
        self.errors = tuple(errors)
        first = self.errors[0] if self.errors else IysError("", message or self.default_message)
        self.h_code = first.code or None
        #: İYS's own message for its first error, without the code.
        self.detail = first.message
        shown = f"{first.code}: {first.message}" if first.code else first.message
        super().__init__(message or shown)


class IysUnavailable(MessagingError, ConnectionError):
    """İYS could not be asked (a transport error, a time-out, a 5xx): try again later,
    not before ``retry_after`` seconds when İYS said so."""

    http_status = 502
    code = "IYS_UNAVAILABLE"
    default_message = "İYS could not be reached."

    def __init__(self, message: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class IysThrottled(IysUnavailable):
    code = "IYS_RATE_LIMITED"
    default_message = "İYS asked us to slow down (429)."


class IysTokenLimit(IysUnavailable):
    code = "IYS_TOKEN_LIMIT"
    default_message = "Too many İYS token requests within the last hour."


class IysTokenExpired(Exception):
    """İYS answered 401 to a call made with an access token."""
