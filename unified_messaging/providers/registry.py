"""The live adapters this installation ships, by provider code.

``Messenger`` uses these unless it is given its own ``live_adapters``; ``add_connection``
checks credentials against each provider's schema from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from .._types import ProviderCode
from ._http import AdapterSpec
from .iletimerkezi import SPEC as ILETIMERKEZI
from .kannel import SPEC as KANNEL
from .mutlucell import SPEC as MUTLUCELL
from .netgsm import SPEC as NETGSM
from .telegram import SPEC as TELEGRAM
from .verimor import SPEC as VERIMOR
from .whatsapp import SPEC as WHATSAPP

__all__ = ["LIVE_ADAPTERS"]

LIVE_ADAPTERS: Final[Mapping[ProviderCode, AdapterSpec]] = MappingProxyType(
    {
        spec.code: spec
        for spec in (NETGSM, ILETIMERKEZI, VERIMOR, MUTLUCELL, KANNEL, TELEGRAM, WHATSAPP)
    }
)
