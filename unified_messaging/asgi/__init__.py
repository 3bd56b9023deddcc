"""The HTTP edges: ``create_app(messenger)`` is an ASGI app serving the ``/v1`` REST contract
and the ``/mcp`` tool endpoint.

Needs the ``server`` extra (``pip install '.[server]'`` in a clone), and the ``mcp`` extra
for ``/mcp``. It holds HTTP concerns only: the Bearer token, the client address, body limits,
idempotency replays, error rendering, the OpenAPI document and the MCP transport. Every rule
is the façade's.
"""

try:
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    from .._errors import MissingExtra

    raise MissingExtra("unified_messaging.asgi", extra="server", setting="server") from exc

from ._app import DEFAULT_MAX_BODY_BYTES, app_lifespan, create_app, messenger_lifespan
from ._metrics import create_metrics_app
from ._openapi import openapi_document
from ._openapi_host import add_to_openapi, merged_openapi

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "add_to_openapi",
    "app_lifespan",
    "create_app",
    "create_metrics_app",
    "merged_openapi",
    "messenger_lifespan",
    "openapi_document",
]
