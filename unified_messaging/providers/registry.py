"""The live adapters this installation ships, by provider code.

``Messenger`` uses these unless it is given its own ``live_adapters``; ``add_connection``
checks credentials against each provider's schema from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from .._domain import Connection
from .._types import ProviderCode
from ._http import AdapterSpec
from ._sms_gateway import GatewayCredentials
from .iletimerkezi import SPEC as ILETIMERKEZI
from .jasmin import JasminAdapter
from .kannel import KannelAdapter
from .mutlucell import SPEC as MUTLUCELL
from .netgsm import SPEC as NETGSM
from .telegram import SPEC as TELEGRAM
from .verimor import SPEC as VERIMOR
from .whatsapp import SPEC as WHATSAPP

__all__ = ["LIVE_ADAPTERS", "SMS_GATEWAY"]


def sms_gateway(
    connection: Connection, credentials: Mapping[str, str]
) -> KannelAdapter | JasminAdapter:
    """``sms_e``'s adapter: the wire format of the gateway the credentials name, Kannel's
    ``sendsms`` unless ``gateway`` is ``jasmin`` (each adapter checks the rest)."""
    if str(credentials.get("gateway", "")).strip() == "jasmin":
        return JasminAdapter(connection, credentials)
    return KannelAdapter(connection, credentials)


SMS_GATEWAY: Final = AdapterSpec("sms_e", GatewayCredentials, sms_gateway)

LIVE_ADAPTERS: Final[Mapping[ProviderCode, AdapterSpec]] = MappingProxyType(
    {
        spec.code: spec
        for spec in (NETGSM, ILETIMERKEZI, VERIMOR, MUTLUCELL, SMS_GATEWAY, TELEGRAM, WHATSAPP)
    }
)
