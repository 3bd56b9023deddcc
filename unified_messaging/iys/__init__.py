"""İYS (D33): a workspace's connection to İYS, and the work that keeps consents in step.

- :mod:`.records`: what the store keeps (connection, shared token, registrations);
- :mod:`.store`: the store's slice of the protocol;
- :mod:`.api`: İYS's HTTP API, as dev.iys.org.tr documents it;
- :mod:`.tokens`: the token every process shares;
- :mod:`.backend`, :mod:`.simulated`: İYS, or the simulated İYS of test mode;
- :mod:`.register`, :mod:`.pull`: the worker's registrations and pulls;
- :mod:`.lookup`, :mod:`.check`: the hand-over gate's consent rule (policy ``iys``);
- :mod:`.service`: :class:`Iys`, reached as ``messenger.iys``.

The names below load on first use (PEP 562): :mod:`.work` (which the consents service
imports) and :mod:`.records` (which the store imports) load nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .check import (
        IysConsentCheck,
    )
    from .errors import (
        IysCredentialsRefused,
        IysNotConnected,
        IysProviderUnsupported,
        IysRefused,
        IysThrottled,
        IysTokenLimit,
        IysUnavailable,
    )
    from .models import (
        IysConnect,
        IysConnectionOut,
        IysSyncReport,
    )
    from .service import (
        Iys,
        IysSettings,
    )
    from .simulated import (
        MAGIC_NONE,
        MAGIC_ONAY,
        MAGIC_RET,
    )

__all__ = [
    "MAGIC_NONE",
    "MAGIC_ONAY",
    "MAGIC_RET",
    "Iys",
    "IysConnect",
    "IysConnectionOut",
    "IysConsentCheck",
    "IysCredentialsRefused",
    "IysNotConnected",
    "IysProviderUnsupported",
    "IysRefused",
    "IysSettings",
    "IysSyncReport",
    "IysThrottled",
    "IysTokenLimit",
    "IysUnavailable",
]

#: Where each public name lives.
_HOMES: Final[dict[str, str]] = {
    "IysConsentCheck": ".check",
    "IysCredentialsRefused": ".errors",
    "IysNotConnected": ".errors",
    "IysProviderUnsupported": ".errors",
    "IysRefused": ".errors",
    "IysThrottled": ".errors",
    "IysTokenLimit": ".errors",
    "IysUnavailable": ".errors",
    "IysConnect": ".models",
    "IysConnectionOut": ".models",
    "IysSyncReport": ".models",
    "Iys": ".service",
    "IysSettings": ".service",
    "MAGIC_NONE": ".simulated",
    "MAGIC_ONAY": ".simulated",
    "MAGIC_RET": ".simulated",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
