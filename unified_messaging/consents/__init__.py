"""Consents (D33): İYS consents as a resource, their rules, and the gate's check.

- :mod:`.rules`: İYS's rules, pure functions (no I/O);
- :mod:`.models`: the records and the shapes every edge shares;
- :mod:`.store`: the store's slice of the protocol;
- :mod:`.service`: :class:`Consents`, reached as ``messenger.consents``;
- :mod:`.check`: :class:`LocalConsentCheck`, the hand-over gate's consent rule.

The names below load on first use (PEP 562): the command line reads :mod:`.rules` for its
choices without loading pydantic.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .check import (
        LocalConsentCheck,
    )
    from .errors import (
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
    from .models import (
        ConsentCreate,
        ConsentDetail,
        ConsentOut,
        ConsentPage,
        ConsentSearch,
    )
    from .rules import (
        CONSENT_SOURCES,
        ConsentPolicy,
    )
    from .service import (
        Consents,
    )

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
    "ConsentSourceRequired",
    "ConsentUnchanged",
    "Consents",
    "FirstConsentIsRet",
    "Hs2015DateOnly",
    "LocalConsentCheck",
]

#: Where each public name lives.
_HOMES: Final[dict[str, str]] = {
    "LocalConsentCheck": ".check",
    "ConsentDateInFuture": ".errors",
    "ConsentDateNotAfterCurrent": ".errors",
    "ConsentDateTooEarly": ".errors",
    "ConsentDateTooOld": ".errors",
    "ConsentNotFound": ".errors",
    "ConsentRefused": ".errors",
    "ConsentSourceRequired": ".errors",
    "ConsentUnchanged": ".errors",
    "FirstConsentIsRet": ".errors",
    "Hs2015DateOnly": ".errors",
    "ConsentCreate": ".models",
    "ConsentDetail": ".models",
    "ConsentOut": ".models",
    "ConsentPage": ".models",
    "ConsentSearch": ".models",
    "CONSENT_SOURCES": ".rules",
    "ConsentPolicy": ".rules",
    "Consents": ".service",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
