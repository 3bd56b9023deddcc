"""Verify (D34): one-time codes over SMS, as ``messenger.verifications``.

- ``_records``: a verification, its code messages, a workspace's settings;
- ``_rules``: the rules, as pure functions (code, digest, check, limits);
- ``_texts``: the code message's text (default texts, templates, SMS Retriever);
- ``_models``: the REST shapes; ``_store``: the store's part; ``_service``: the service;
- ``_guard_rules`` and ``_guard``: the SMS-pumping guard (``verifications.guard``);
- ``_stats``: conversion per hour; ``_ops_store``: the store's part of both;
- ``_metrics``: the call-site helpers of Verify's metrics.

The names are imported on first use (PEP 562): the store protocol imports ``_store`` from
here, and must not pull in pydantic or the service with it.
"""

import importlib as _importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._errors import (
        ChannelNotSupported,
        VerificationAlreadyApproved,
        VerificationFraudSuspected,
        VerificationNotFound,
        VerificationRateLimited,
    )
    from ._guard import PumpingGuard
    from ._guard_rules import GuardSettings, Velocity, parse_velocity
    from ._models import CheckRequest, CheckResponse, CodeSendOut, StartRequest, VerificationOut
    from ._records import CodeSend, Verification, VerificationSettings, VerificationStatus
    from ._service import Verifications
    from ._stats import ConversionHour, ConversionTotal, VerificationStats

__all__ = [
    "ChannelNotSupported",
    "CheckRequest",
    "CheckResponse",
    "CodeSend",
    "CodeSendOut",
    "ConversionHour",
    "ConversionTotal",
    "GuardSettings",
    "PumpingGuard",
    "StartRequest",
    "Velocity",
    "Verification",
    "VerificationAlreadyApproved",
    "VerificationFraudSuspected",
    "VerificationNotFound",
    "VerificationOut",
    "VerificationRateLimited",
    "VerificationSettings",
    "VerificationStats",
    "VerificationStatus",
    "Verifications",
    "parse_velocity",
]

_WHERE = {
    ".._errors": (
        "ChannelNotSupported",
        "VerificationAlreadyApproved",
        "VerificationFraudSuspected",
        "VerificationNotFound",
        "VerificationRateLimited",
    ),
    "._guard": ("PumpingGuard",),
    "._guard_rules": ("GuardSettings", "Velocity", "parse_velocity"),
    "._stats": ("ConversionHour", "ConversionTotal", "VerificationStats"),
    "._models": ("CheckRequest", "CheckResponse", "CodeSendOut", "StartRequest", "VerificationOut"),
    "._records": ("CodeSend", "Verification", "VerificationSettings", "VerificationStatus"),
    "._service": ("Verifications",),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted(__all__)
