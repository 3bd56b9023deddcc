"""unified-messaging: five Turkish SMS providers, Telegram and WhatsApp Cloud behind one API.

The public surface is exactly ``__all__``; everything in ``_modules`` is private.

The names are imported on first use (PEP 562): ``import unified_messaging`` alone costs
nothing, so the command line's ``--help`` and admin commands do not load pydantic, httpx and
SQLAlchemy they never touch. ``from unified_messaging import Messenger`` works as before.
"""

import importlib as _importlib
from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:
    from ._access.authorize import RateLimitRefused
    from ._access.flood_guard import RecipientLimit
    from ._access.principal import Principal
    from ._access.ratelimit import (
        MemoryRateLimiter,
        RateLimitDecision,
        RateLimiter,
        RateLimitPolicy,
    )
    from ._client import AsyncClient, Client, Health
    from ._clock import Clock, ManualClock, SystemClock
    from ._domain import (
        ApiKey,
        Attempt,
        Connection,
        DeliveryReport,
        ErrorInfo,
        MessageRecord,
        Template,
        Workspace,
    )
    from ._encoding import SmsEncoding, analyze_sms, split_sms
    from ._errors import (
        AlreadyExists,
        BodyTooLong,
        ChannelNotSupported,
        ChatUnreachable,
        ConfigurationError,
        Conflict,
        DecryptionFailed,
        ErrorDetail,
        EscalationInvalid,
        FallbackNotAllowed,
        IdempotencyConflict,
        IdempotencyInProgress,
        InvalidCredentials,
        InvalidRecipient,
        IpNotAllowed,
        MasterKeyError,
        MessageNotCancelable,
        MessageNotFound,
        MessagingError,
        MissingExtra,
        NotFound,
        PayloadTooLarge,
        ProviderNotConnected,
        ProviderOutcomeUnknown,
        ProviderUnavailable,
        QuotaExceeded,
        RateLimited,
        RecipientRateLimited,
        RecipientSuppressed,
        RequestInvalid,
        ResourceNotFound,
        SendAtOutOfRange,
        SenderNotApproved,
        SenderRequired,
        StorageUnavailable,
        SubmitInterrupted,
        TemplateNotFound,
        TemplateVariableMissing,
        TooManyRequests,
        Unauthorized,
        UnknownKeyId,
        Unprocessable,
        UnsupportedDependency,
        VaultError,
        VerificationAlreadyApproved,
        VerificationFraudSuspected,
        VerificationNotFound,
        VerificationRateLimited,
    )
    from ._lifecycle.runtime import IngestResult
    from ._lifecycle.worker import Worker
    from ._messenger import Messenger
    from ._models import (
        AttemptOut,
        BulkItem,
        BulkRequest,
        BulkResponse,
        BulkResult,
        DlrOut,
        ErrorObject,
        SendRequest,
        SendResponse,
        StatusRecord,
    )
    from ._observability.metrics import Metrics, NoMetrics
    from ._observability.prometheus import PrometheusMetrics
    from ._policies import ContentRules
    from ._recipients import normalize_recipient
    from ._routing.breaker import BreakerHealth
    from ._routing.breaker_policy import BreakerPolicy
    from ._routing.pacing import Pacer
    from ._routing.redis_breaker import RedisBreakerStore
    from ._routing.redis_pacing import RedisPacer
    from ._schedule import QuietHours, parse_quiet_hours
    from ._search import MessagePage, MessageSearch
    from ._sync import SyncMessenger
    from ._types import ALL_PROVIDERS, SMS_PROVIDERS, Channel, MessageStatus, ProviderCode
    from .audit._context import Actor, acting_as
    from .audit._events import AuditEvent, AuditPage
    from .consents.errors import (
        ConsentDateInFuture,
        ConsentDateNotAfterCurrent,
        ConsentDateTooEarly,
        ConsentDateTooOld,
        ConsentNotFound,
        ConsentRefused,
        ConsentSourceRequired,
        ConsentUnchanged,
        FirstConsentIsRet,
        Hs2015DateOnly,
    )
    from .content.errors import CommercialContentRefused
    from .content.models import SendPreview
    from .iys.errors import (
        IysCredentialsRefused,
        IysNotConnected,
        IysProviderUnsupported,
        IysRefused,
        IysThrottled,
        IysTokenLimit,
        IysUnavailable,
    )
    from .keys._service import CreatedApiKey
    from .store.base import ConnectionStats
    from .templates._render import render as render_template
    from .vault._core import Vault, generate_key_spec
    from .vault._rotation import VaultRotation
    from .webhooks._admin import CreatedWebhookEndpoint
    from .webhooks._sender import TargetPolicy
    from .workspaces._service import QuotaUsage

__all__ = [
    "ALL_PROVIDERS",
    "SMS_PROVIDERS",
    "Actor",
    "AlreadyExists",
    "ApiKey",
    "AsyncClient",
    "Attempt",
    "AttemptOut",
    "AuditEvent",
    "AuditPage",
    "BodyTooLong",
    "BreakerHealth",
    "BreakerPolicy",
    "BulkItem",
    "BulkRequest",
    "BulkResponse",
    "BulkResult",
    "Channel",
    "ChannelNotSupported",
    "ChatUnreachable",
    "Client",
    "Clock",
    "CommercialContentRefused",
    "ConfigurationError",
    "Conflict",
    "Connection",
    "ConnectionStats",
    "ConsentDateInFuture",
    "ConsentDateNotAfterCurrent",
    "ConsentDateTooEarly",
    "ConsentDateTooOld",
    "ConsentNotFound",
    "ConsentRefused",
    "ConsentSourceRequired",
    "ConsentUnchanged",
    "ContentRules",
    "CreatedApiKey",
    "CreatedWebhookEndpoint",
    "DecryptionFailed",
    "DeliveryReport",
    "DlrOut",
    "ErrorDetail",
    "ErrorInfo",
    "ErrorObject",
    "EscalationInvalid",
    "FallbackNotAllowed",
    "FirstConsentIsRet",
    "Health",
    "Hs2015DateOnly",
    "IdempotencyConflict",
    "IdempotencyInProgress",
    "IngestResult",
    "InvalidCredentials",
    "InvalidRecipient",
    "IpNotAllowed",
    "IysCredentialsRefused",
    "IysNotConnected",
    "IysProviderUnsupported",
    "IysRefused",
    "IysThrottled",
    "IysTokenLimit",
    "IysUnavailable",
    "ManualClock",
    "MasterKeyError",
    "MemoryRateLimiter",
    "MessageNotCancelable",
    "MessageNotFound",
    "MessagePage",
    "MessageRecord",
    "MessageSearch",
    "MessageStatus",
    "MessagingError",
    "Messenger",
    "Metrics",
    "MissingExtra",
    "NoMetrics",
    "NotFound",
    "Pacer",
    "PayloadTooLarge",
    "Principal",
    "PrometheusMetrics",
    "ProviderCode",
    "ProviderNotConnected",
    "ProviderOutcomeUnknown",
    "ProviderUnavailable",
    "QuietHours",
    "QuotaExceeded",
    "QuotaUsage",
    "RateLimitDecision",
    "RateLimitPolicy",
    "RateLimitRefused",
    "RateLimited",
    "RateLimiter",
    "RecipientLimit",
    "RecipientRateLimited",
    "RecipientSuppressed",
    "RedisBreakerStore",
    "RedisPacer",
    "RequestInvalid",
    "ResourceNotFound",
    "SendAtOutOfRange",
    "SendPreview",
    "SendRequest",
    "SendResponse",
    "SenderNotApproved",
    "SenderRequired",
    "SmsEncoding",
    "StatusRecord",
    "StorageUnavailable",
    "SubmitInterrupted",
    "SyncMessenger",
    "SystemClock",
    "TargetPolicy",
    "Template",
    "TemplateNotFound",
    "TemplateVariableMissing",
    "TooManyRequests",
    "Unauthorized",
    "UnknownKeyId",
    "Unprocessable",
    "UnsupportedDependency",
    "Vault",
    "VaultError",
    "VaultRotation",
    "VerificationAlreadyApproved",
    "VerificationFraudSuspected",
    "VerificationNotFound",
    "VerificationRateLimited",
    "Worker",
    "Workspace",
    "__version__",
    "acting_as",
    "analyze_sms",
    "generate_key_spec",
    "normalize_recipient",
    "parse_quiet_hours",
    "render_template",
    "split_sms",
]

#: Where each public name lives: ``{module: names}``, the same imports as above.
_LAZY: dict[str, tuple[str, ...]] = {
    "_access.authorize": ("RateLimitRefused",),
    "keys._service": ("CreatedApiKey",),
    "workspaces._service": ("QuotaUsage",),
    "_client": ("AsyncClient", "Client", "Health"),
    "_clock": ("Clock", "ManualClock", "SystemClock"),
    "_lifecycle.runtime": ("IngestResult",),
    "_domain": (
        "ApiKey",
        "Attempt",
        "Connection",
        "DeliveryReport",
        "ErrorInfo",
        "MessageRecord",
        "Template",
        "Workspace",
    ),
    "_encoding": ("SmsEncoding", "analyze_sms", "split_sms"),
    "_errors": (
        "AlreadyExists",
        "BodyTooLong",
        "ChatUnreachable",
        "ConfigurationError",
        "Conflict",
        "DecryptionFailed",
        "ErrorDetail",
        "EscalationInvalid",
        "FallbackNotAllowed",
        "IdempotencyConflict",
        "IdempotencyInProgress",
        "InvalidCredentials",
        "InvalidRecipient",
        "IpNotAllowed",
        "MasterKeyError",
        "MessageNotCancelable",
        "MessageNotFound",
        "MessagingError",
        "MissingExtra",
        "NotFound",
        "PayloadTooLarge",
        "ProviderNotConnected",
        "ProviderOutcomeUnknown",
        "ProviderUnavailable",
        "QuotaExceeded",
        "RateLimited",
        "RecipientRateLimited",
        "RecipientSuppressed",
        "RequestInvalid",
        "ResourceNotFound",
        "SendAtOutOfRange",
        "SenderNotApproved",
        "SenderRequired",
        "StorageUnavailable",
        "SubmitInterrupted",
        "TemplateNotFound",
        "TemplateVariableMissing",
        "TooManyRequests",
        "Unauthorized",
        "UnknownKeyId",
        "Unprocessable",
        "UnsupportedDependency",
        "VaultError",
        "ChannelNotSupported",
        "VerificationAlreadyApproved",
        "VerificationFraudSuspected",
        "VerificationNotFound",
        "VerificationRateLimited",
    ),
    "_routing.breaker": ("BreakerHealth",),
    "_search": ("MessagePage", "MessageSearch"),
    "store.base": ("ConnectionStats",),
    "_routing.breaker_policy": ("BreakerPolicy",),
    "_access.flood_guard": ("RecipientLimit",),
    "_policies": ("ContentRules",),
    "_schedule": ("QuietHours", "parse_quiet_hours"),
    "_messenger": ("Messenger",),
    "_access.principal": ("Principal",),
    "_observability.metrics": ("Metrics", "NoMetrics"),
    "_models": (
        "AttemptOut",
        "BulkItem",
        "BulkRequest",
        "BulkResponse",
        "BulkResult",
        "DlrOut",
        "ErrorObject",
        "SendRequest",
        "SendResponse",
        "StatusRecord",
    ),
    "_routing.pacing": ("Pacer",),
    "_observability.prometheus": ("PrometheusMetrics",),
    "_access.ratelimit": (
        "MemoryRateLimiter",
        "RateLimitDecision",
        "RateLimiter",
        "RateLimitPolicy",
    ),
    "_recipients": ("normalize_recipient",),
    "_routing.redis_breaker": ("RedisBreakerStore",),
    "_routing.redis_pacing": ("RedisPacer",),
    "_sync": ("SyncMessenger",),
    "templates._render": ("render_template",),
    "_types": ("ALL_PROVIDERS", "SMS_PROVIDERS", "Channel", "MessageStatus", "ProviderCode"),
    "vault._core": ("Vault", "generate_key_spec"),
    "vault._rotation": ("VaultRotation",),
    "webhooks._admin": ("CreatedWebhookEndpoint",),
    "audit._events": ("AuditEvent", "AuditPage"),
    "audit._context": ("Actor", "acting_as"),
    "webhooks._sender": ("TargetPolicy",),
    "_lifecycle.worker": ("Worker",),
    "content.errors": ("CommercialContentRefused",),
    "content.models": ("SendPreview",),
    "consents.errors": (
        "ConsentDateInFuture",
        "ConsentDateNotAfterCurrent",
        "ConsentDateTooEarly",
        "ConsentDateTooOld",
        "ConsentNotFound",
        "ConsentRefused",
        "ConsentSourceRequired",
        "ConsentUnchanged",
        "FirstConsentIsRet",
        "Hs2015DateOnly",
    ),
    "iys.errors": (
        "IysCredentialsRefused",
        "IysNotConnected",
        "IysProviderUnsupported",
        "IysRefused",
        "IysThrottled",
        "IysTokenLimit",
        "IysUnavailable",
    ),
}
#: Public names that differ from their name in the module.
_RENAMED = {"render_template": "render"}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(
        _importlib.import_module(f".{module}", __name__), _RENAMED.get(name, name)
    )
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


del TYPE_CHECKING
