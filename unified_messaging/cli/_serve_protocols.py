"""Which guarded HTTP/1.1 protocol ``serve`` runs (``serve --http``), bound to its limits.

Apart from the protocols themselves so that neither imports the other: the h11 one and the
limits they share live in ``_serve_http``, the httptools one in ``_serve_httptools``, which
builds on ``_serve_http`` and is imported only when chosen (httptools is optional).
"""

from __future__ import annotations

import asyncio

from ._serve_http import GuardedH11Protocol, Http, _Guard, _Reports
from ._serve_limits import LogThrottle, ServeLimits
from ._serve_uvicorn import check_uvicorn

__all__ = ["guarded_protocol", "httptools_installed", "resolve_http"]


def guarded_protocol(limits: ServeLimits, http: Http = "h11") -> type[asyncio.Protocol]:
    """A guarded protocol class for one server, to pass as uvicorn's ``http``: the h11 one
    (:class:`GuardedH11Protocol`) or the httptools one
    (:class:`~._serve_httptools.GuardedHttpToolsProtocol`, needs httptools installed).
    Refused on a uvicorn release they were not tested with (:mod:`._serve_uvicorn`)."""
    check_uvicorn()
    every = limits.report_every
    base: type[_Guard]
    if http == "httptools":
        from ._serve_httptools import GuardedHttpToolsProtocol

        base = GuardedHttpToolsProtocol
    else:
        base = GuardedH11Protocol

    class _Bound(base):  # type: ignore[valid-type,misc]
        pass

    _Bound.limits = limits
    _Bound.reports = _Reports(
        refused=LogThrottle(
            f"refused a connection: {limits.max_connections} are open (--max-connections)",
            every,
        ),
        slow_head=LogThrottle(
            f"closed a connection: request head not complete within {limits.header_timeout:g} s"
            " (--header-timeout)",
            every,
        ),
        slow_body=LogThrottle(
            f"closed a connection: request body not complete within {limits.body_timeout:g} s"
            " (--body-timeout)",
            every,
        ),
    )
    return _Bound


def resolve_http(choice: str) -> Http:
    """``serve --http``: ``auto`` is httptools when it can be imported, else h11."""
    if choice == "h11":
        return "h11"
    if choice == "httptools" or httptools_installed():
        return "httptools"
    return "h11"


def httptools_installed() -> bool:
    """httptools and uvicorn's protocol over it can be imported."""
    try:
        import httptools  # noqa: F401
        import uvicorn.protocols.http.httptools_impl  # noqa: F401
    except ImportError:
        return False
    return True
