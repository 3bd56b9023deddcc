"""Delivery figures (``GET /v1/stats``, ``messenger.stats``, the dashboard's Overview charts).

- ``_buckets``: hours and delivery-time buckets, pure; ``_windows``: the windows' buckets;
- ``_records``: what the store counts; ``_contributions``: what a record counts as (the
  Python twin of the SQL triggers); ``_store``: the store's part;
- ``_models``: the REST shapes; ``_overview``: the figures from the counts, pure;
- ``_service``: :class:`Stats`, reached as ``messenger.stats``.

The names are imported on first use (PEP 562): the store protocol imports ``_store`` from
here, and must not pull in pydantic or the service with it.
"""

import importlib as _importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._models import (
        DeliveryTimes,
        FallbackFigures,
        HistogramBucket,
        ProviderFigures,
        SeriesBucket,
        StatsOverview,
        StatsQuery,
        StatusCounts,
        VerificationFigures,
    )
    from ._service import Stats
    from ._windows import Window

__all__ = [
    "DeliveryTimes",
    "FallbackFigures",
    "HistogramBucket",
    "ProviderFigures",
    "SeriesBucket",
    "Stats",
    "StatsOverview",
    "StatsQuery",
    "StatusCounts",
    "VerificationFigures",
    "Window",
]

_WHERE = {
    "._models": (
        "DeliveryTimes",
        "FallbackFigures",
        "HistogramBucket",
        "ProviderFigures",
        "SeriesBucket",
        "StatsOverview",
        "StatsQuery",
        "StatusCounts",
        "VerificationFigures",
    ),
    "._service": ("Stats",),
    "._windows": ("Window",),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}


def __getattr__(name: str) -> object:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_importlib.import_module(module, __name__), name)


def __dir__() -> list[str]:
    return sorted(__all__)
