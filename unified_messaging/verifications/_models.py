"""Request and response shapes of ``/v1/verifications`` (D34): REST, MCP, Client, OpenAPI."""

from __future__ import annotations

import ipaddress
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, Field

from .._models import Recipient, TemplateKey, _Request, _Response
from .._types import Channel, MessageStatus, ProviderCode
from ._records import Locale, VerificationStatus
from ._texts import APP_HASH_PATTERN

__all__ = [
    "CheckArguments",
    "CheckRequest",
    "CheckResponse",
    "CodeSendOut",
    "StartRequest",
    "VerificationOut",
]

Code = Annotated[str, Field(min_length=1, max_length=32, examples=["123456"])]


def _ip_address(value: str) -> str:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        raise ValueError("must be an IPv4 or IPv6 address") from None


#: The end user's address as the app saw it (the SMS-pumping guard's per-address limit).
ClientIp = Annotated[
    str,
    Field(
        max_length=64,
        examples=["203.0.113.7"],
        json_schema_extra={"anyOf": [{"format": "ipv4"}, {"format": "ipv6"}]},
    ),
    AfterValidator(_ip_address),
]


class StartRequest(_Request):
    """Body of ``POST /v1/verifications``."""

    to: Recipient = Field(
        description="The recipient: a Turkish mobile number for SMS, a phone number for "
        "bizchat, a chat id or @username for chatbot."
    )
    channel: str | None = Field(
        default=None,
        max_length=16,
        description="How the code goes: sms (the default), bizchat (a WhatsApp authentication "
        "template) or chatbot (Telegram). Another value: 422 CHANNEL_NOT_SUPPORTED.",
    )
    channels: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=3,
        description='An escalation order, e.g. ["bizchat", "sms"]: the same code goes by '
        "the next channel when one fails or is not delivered within the workspace's "
        "escalate_after. An unknown or repeated channel: 422 ESCALATION_INVALID.",
    )
    locale: Locale = Field(default="tr", description="The default text's language.")
    code_length: int = Field(default=6, ge=4, le=10, description="Digits in the code (4-10).")
    ttl: int = Field(
        default=600,
        ge=1,
        le=3600,
        description="Seconds until the code expires (at most 3600).",
    )
    template: TemplateKey | None = Field(
        default=None, description="A template whose body has a {{ code }} placeholder."
    )
    app_hash: Annotated[str, Field(pattern=APP_HASH_PATTERN)] | None = Field(
        default=None,
        description="Android SMS Retriever app hash (11 characters): adds the Retriever line.",
        examples=["FA+9qCX9VSu"],
    )
    client_ip: ClientIp | None = Field(
        default=None,
        description="The end user's IP address, as your app saw it: the SMS-pumping guard "
        "limits the starts of one address (IPv6: one /64).",
    )


class CheckRequest(_Request):
    """Body of ``POST /v1/verifications/{id}/check``."""

    code: Code


class CheckArguments(_Request):
    """Arguments of the MCP tool ``check_verification``: the id and the code."""

    id: str = Field(min_length=1, max_length=64, examples=["ver_01HZX3W5V8J2K4M6N8P0Q2R4S6"])
    code: Code


class CodeSendOut(_Response):
    """One code message of a verification; ``status`` is the message's now."""

    job_id: str
    channel: Channel
    provider: ProviderCode
    status: MessageStatus
    created_at: datetime


class VerificationOut(_Response):
    """201 body of ``POST /v1/verifications``; 200 of ``GET`` and ``/cancel``."""

    id: str = Field(examples=["ver_2f0c9a7d1b3e4f56"])
    to: str
    status: VerificationStatus
    channel: Channel
    expires_at: datetime
    checks_remaining: int
    sends: list[CodeSendOut]
    created_at: datetime
    livemode: bool


class CheckResponse(_Response):
    """200 body of ``POST /v1/verifications/{id}/check``."""

    id: str
    status: VerificationStatus
    checks_remaining: int
