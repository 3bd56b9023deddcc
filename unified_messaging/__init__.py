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
    from ._access import RateLimitRefused
    from ._admin import CreatedApiKey, QuotaUsage
    from ._breaker import BreakerHealth
    from ._breaker_policy import BreakerPolicy
    from ._clock import Clock, ManualClock, SystemClock
    from ._delivery import IngestResult
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
        ChatUnreachable,
        ConfigurationError,
        Conflict,
        DecryptionFailed,
        ErrorDetail,
        FallbackNotAllowed,
        IdempotencyConflict,
        IdempotencyInProgress,
        InvalidCredentials,
        InvalidRecipient,
        IpNotAllowed,
        MasterKeyError,
        MessageNotFound,
        MessagingError,
        NotFound,
        PayloadTooLarge,
        ProviderNotConnected,
        ProviderUnavailable,
        QuotaExceeded,
        RateLimited,
        RecipientRateLimited,
        RequestInvalid,
        ResourceNotFound,
        SenderNotApproved,
        SenderRequired,
        StorageUnavailable,
        TemplateNotFound,
        TemplateVariableMissing,
        TooManyRequests,
        Unauthorized,
        UnknownKeyId,
        Unprocessable,
        VaultError,
    )
    from ._flood_guard import RecipientLimit
    from ._messenger import Messenger, Principal
    from ._metrics import Metrics, NoMetrics
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
    from ._pacing import Pacer
    from ._prometheus import PrometheusMetrics
    from ._ratelimit import MemoryRateLimiter, RateLimitDecision, RateLimiter, RateLimitPolicy
    from ._recipients import normalize_recipient
    from ._redis_breaker import RedisBreakerStore
    from ._redis_pacing import RedisPacer
    from ._search import MessagePage, MessageSearch
    from ._sync import SyncMessenger
    from ._templates import render as render_template
    from ._types import ALL_PROVIDERS, SMS_PROVIDERS, Channel, MessageStatus, ProviderCode
    from ._vault import Vault, generate_key_spec
    from ._vault_rotation import VaultRotation
    from ._webhook_admin import CreatedWebhookEndpoint
    from ._webhook_sender import TargetPolicy
    from ._worker import Worker
    from .store.base import ConnectionStats

__all__ = [
    "ALL_PROVIDERS",
    "SMS_PROVIDERS",
    "AlreadyExists",
    "ApiKey",
    "Attempt",
    "AttemptOut",
    "BodyTooLong",
    "BreakerHealth",
    "BreakerPolicy",
    "BulkItem",
    "BulkRequest",
    "BulkResponse",
    "BulkResult",
    "Channel",
    "ChatUnreachable",
    "Clock",
    "ConfigurationError",
    "Conflict",
    "Connection",
    "ConnectionStats",
    "CreatedApiKey",
    "CreatedWebhookEndpoint",
    "DecryptionFailed",
    "DeliveryReport",
    "DlrOut",
    "ErrorDetail",
    "ErrorInfo",
    "ErrorObject",
    "FallbackNotAllowed",
    "IdempotencyConflict",
    "IdempotencyInProgress",
    "IngestResult",
    "InvalidCredentials",
    "InvalidRecipient",
    "IpNotAllowed",
    "ManualClock",
    "MasterKeyError",
    "MemoryRateLimiter",
    "MessageNotFound",
    "MessagePage",
    "MessageRecord",
    "MessageSearch",
    "MessageStatus",
    "MessagingError",
    "Messenger",
    "Metrics",
    "NoMetrics",
    "NotFound",
    "Pacer",
    "PayloadTooLarge",
    "Principal",
    "PrometheusMetrics",
    "ProviderCode",
    "ProviderNotConnected",
    "ProviderUnavailable",
    "QuotaExceeded",
    "QuotaUsage",
    "RateLimitDecision",
    "RateLimitPolicy",
    "RateLimitRefused",
    "RateLimited",
    "RateLimiter",
    "RecipientLimit",
    "RecipientRateLimited",
    "RedisBreakerStore",
    "RedisPacer",
    "RequestInvalid",
    "ResourceNotFound",
    "SendRequest",
    "SendResponse",
    "SenderNotApproved",
    "SenderRequired",
    "SmsEncoding",
    "StatusRecord",
    "StorageUnavailable",
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
    "Vault",
    "VaultError",
    "VaultRotation",
    "Worker",
    "Workspace",
    "__version__",
    "analyze_sms",
    "generate_key_spec",
    "normalize_recipient",
    "render_template",
    "split_sms",
]

#: Where each public name lives: ``{module: names}``, the same imports as above.
_LAZY: dict[str, tuple[str, ...]] = {
    "_access": ("RateLimitRefused",),
    "_admin": ("CreatedApiKey", "QuotaUsage"),
    "_clock": ("Clock", "ManualClock", "SystemClock"),
    "_delivery": ("IngestResult",),
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
        "FallbackNotAllowed",
        "IdempotencyConflict",
        "IdempotencyInProgress",
        "InvalidCredentials",
        "InvalidRecipient",
        "IpNotAllowed",
        "MasterKeyError",
        "MessageNotFound",
        "MessagingError",
        "NotFound",
        "PayloadTooLarge",
        "ProviderNotConnected",
        "ProviderUnavailable",
        "QuotaExceeded",
        "RateLimited",
        "RecipientRateLimited",
        "RequestInvalid",
        "ResourceNotFound",
        "SenderNotApproved",
        "SenderRequired",
        "StorageUnavailable",
        "TemplateNotFound",
        "TemplateVariableMissing",
        "TooManyRequests",
        "Unauthorized",
        "UnknownKeyId",
        "Unprocessable",
        "VaultError",
    ),
    "_breaker": ("BreakerHealth",),
    "_search": ("MessagePage", "MessageSearch"),
    "store.base": ("ConnectionStats",),
    "_breaker_policy": ("BreakerPolicy",),
    "_flood_guard": ("RecipientLimit",),
    "_messenger": ("Messenger", "Principal"),
    "_metrics": ("Metrics", "NoMetrics"),
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
    "_pacing": ("Pacer",),
    "_prometheus": ("PrometheusMetrics",),
    "_ratelimit": ("MemoryRateLimiter", "RateLimitDecision", "RateLimiter", "RateLimitPolicy"),
    "_recipients": ("normalize_recipient",),
    "_redis_breaker": ("RedisBreakerStore",),
    "_redis_pacing": ("RedisPacer",),
    "_sync": ("SyncMessenger",),
    "_templates": ("render_template",),
    "_types": ("ALL_PROVIDERS", "SMS_PROVIDERS", "Channel", "MessageStatus", "ProviderCode"),
    "_vault": ("Vault", "generate_key_spec"),
    "_vault_rotation": ("VaultRotation",),
    "_webhook_admin": ("CreatedWebhookEndpoint",),
    "_webhook_sender": ("TargetPolicy",),
    "_worker": ("Worker",),
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
