"""Consents (D33): İYS consents as a resource, their rules, and the gate's check.

- :mod:`.rules`: İYS's rules, pure functions (no I/O);
- :mod:`.models`: the records and the shapes every edge shares;
- :mod:`.store`: the store's slice of the protocol;
- :mod:`.service`: :class:`Consents`, reached as ``messenger.consents``;
- :mod:`.check`: :class:`LocalConsentCheck`, the hand-over gate's consent rule.
"""

from __future__ import annotations

from .check import LocalConsentCheck
from .errors import (
    ConsentDateInFuture,
    ConsentDateNotAfterCurrent,
    ConsentDateTooEarly,
    ConsentDateTooOld,
    ConsentNotFound,
    ConsentRefused,
    ConsentUnchanged,
    FirstConsentIsRet,
    Hs2015DateOnly,
)
from .models import ConsentCreate, ConsentDetail, ConsentOut, ConsentPage, ConsentSearch
from .rules import CONSENT_SOURCES, ConsentPolicy
from .service import Consents

__all__ = [
    "CONSENT_SOURCES",
    "ConsentCreate",
    "ConsentDateInFuture",
    "ConsentDateNotAfterCurrent",
    "ConsentDateTooEarly",
    "ConsentDateTooOld",
    "ConsentDetail",
    "ConsentNotFound",
    "ConsentOut",
    "ConsentPage",
    "ConsentPolicy",
    "ConsentRefused",
    "ConsentSearch",
    "ConsentUnchanged",
    "Consents",
    "FirstConsentIsRet",
    "Hs2015DateOnly",
    "LocalConsentCheck",
]
