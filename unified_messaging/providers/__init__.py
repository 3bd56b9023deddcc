"""Provider adapters: the protocol, the simulator, one module per provider."""

from .base import (
    PROFILES,
    AdapterFactory,
    InboundCallback,
    ProviderAdapter,
    ProviderProfile,
    ProviderReport,
    ProviderTemplate,
    SubmitOutcome,
    SubmitRequest,
)
from .simulator import SimulatedSubmission, Simulator, SimulatorSettings, magic_suffix

__all__ = [
    "PROFILES",
    "AdapterFactory",
    "InboundCallback",
    "ProviderAdapter",
    "ProviderProfile",
    "ProviderReport",
    "ProviderTemplate",
    "SimulatedSubmission",
    "Simulator",
    "SimulatorSettings",
    "SubmitOutcome",
    "SubmitRequest",
    "magic_suffix",
]
