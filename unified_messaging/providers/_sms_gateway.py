"""``sms_e``'s credentials: one schema for the two gateways a connection may speak to.

``sms_e`` is "an SMS gateway the customer runs": a Kannel smsbox (``sendsms``, the default) or
a Jasmin SMS Gateway (its own HTTP API, ``/send``). The two wire formats differ in every
field, so each has its own adapter (:mod:`.kannel`, :mod:`.jasmin`); which one a connection
uses is its ``gateway`` credential, checked here with the rest, so ``connections add``, the
dashboard and the library all take it the same way. Apart from the adapters (pydantic only),
like :mod:`._credentials`.
"""

from __future__ import annotations

from typing import Final, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from .._domain import Connection
from .._encoding import analyze_sms
from .._errors import InvalidCredentials
from ._credentials import CredentialsModel
from .base import SubmitRequest

__all__ = [
    "DEFAULT_GATEWAY",
    "JASMIN_MAX_PARTS",
    "KANNEL_MAX_PARTS",
    "Gateway",
    "GatewayCredentials",
    "JasminCredentials",
    "KannelCredentials",
    "require_base_url",
]

Gateway = Literal["kannel", "jasmin"]
DEFAULT_GATEWAY: Final[Gateway] = "kannel"
#: Jasmin's ``long_content_max_parts`` default (``jasmin.cfg`` ``[http-api]``).
JASMIN_MAX_PARTS: Final = 5
#: Kannel's part limit for a ``sendsms-user`` without ``max-messages``: one SMS (user guide
#: 1.4.5, table 7-17, ``text``: "can be more than 160 characters, but then sendsms-user group
#: must have max-messages set more than 1"); smsbox sends the first part and drops the rest.
KANNEL_MAX_PARTS: Final = 1


class GatewayCredentials(CredentialsModel):
    """A user of the gateway, where it should push delivery reports, and which gateway it is.

    ``dlr_url`` is the public base address where this library's ASGI app is reachable (e.g.
    ``https://sms.example.com``); the adapter appends ``/v1/dlr/{connection id}/{dlr token}``.
    Without it no report is asked for and the messages get none (D10: they end ``unknown``
    after the connection's ``dlr_timeout``).
    """

    username: str = Field(min_length=1)
    password: SecretStr = Field(min_length=1)
    dlr_url: str | None = None
    #: ``kannel`` (``sendsms``) or ``jasmin`` (Jasmin's HTTP API).
    gateway: Gateway = DEFAULT_GATEWAY
    #: Kannel only: force one SMSC route of the gateway (Kannel's ``smsc`` parameter).
    smsc: str | None = None
    #: The most SMS parts the gateway sends of one text: Kannel's ``max-messages`` of this
    #: ``sendsms-user`` (default 1), Jasmin's ``long_content_max_parts`` (default 5). Both
    #: gateways silently cut a longer text to this many parts, so the adapter refuses one
    #: before sending it (``BODY_TOO_LONG``).
    max_parts: int | None = Field(default=None, ge=1, le=255)

    @field_validator("dlr_url")
    @classmethod
    def _public_base(cls, value: str | None) -> str | None:
        if not value:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            # Both gateways refuse anything else (Kannel: "DLR-URL field misformed").
            raise ValueError("must be an http:// or https:// address")
        if "%" in value or parts.query or parts.fragment:
            # '%' would read as a Kannel escape code, and we append our own path and query.
            raise ValueError("must be a plain base address without '%', query or fragment")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _settings_of_the_gateway(self) -> GatewayCredentials:
        if self.gateway == "jasmin" and self.smsc is not None:
            raise ValueError("smsc is a Kannel setting: Jasmin picks the route by its MT router")
        return self

    @property
    def parts_allowed(self) -> int:
        """The most parts one message may have through this gateway: ``max_parts``, or the
        gateway's own default."""
        if self.max_parts is not None:
            return self.max_parts
        return JASMIN_MAX_PARTS if self.gateway == "jasmin" else KANNEL_MAX_PARTS

    def parts_problem(self, request: SubmitRequest) -> str | None:
        """Why the gateway would cut ``request``'s text (``BODY_TOO_LONG``), or ``None``.

        The parts are counted in the encoding the adapter sends (no Turkish shift: neither
        gateway's HTTP API can send it): what routing records as ``segments`` for ``sms_e``."""
        parts = analyze_sms(request.text, allow_turkish_shift=False).segments
        allowed = self.parts_allowed
        if parts <= allowed:
            return None
        setting = _PART_SETTING[self.gateway]
        return (
            f"The text takes {parts} SMS parts; this {self.gateway.capitalize()} gateway sends "
            f"at most {allowed} ({setting}, the connection's max_parts) and would cut the rest."
        )


_PART_SETTING: Final[dict[Gateway, str]] = {
    "kannel": "its sendsms-user's max-messages",
    "jasmin": "its long_content_max_parts",
}


class KannelCredentials(GatewayCredentials):
    """The schema the Kannel adapter takes: ``gateway`` absent or ``kannel``."""

    gateway: Literal["kannel"] = "kannel"


class JasminCredentials(GatewayCredentials):
    """The schema the Jasmin adapter takes: ``gateway=jasmin``."""

    gateway: Literal["jasmin"]


def require_base_url(connection: Connection, example: str) -> None:
    """Refuse a connection without an http(s) ``base_url``: a gateway has no public default."""
    base = (connection.base_url or "").strip()
    if not base:
        raise InvalidCredentials(
            "Invalid credentials: base_url is missing: set the connection's base_url to "
            f"the gateway's address (e.g. {example})."
        )
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise InvalidCredentials(
            "Invalid credentials: base_url must start with http:// or https://."
        )
