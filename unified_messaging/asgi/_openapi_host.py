"""Our operations in a host's OpenAPI document: ``add_to_openapi(host, prefix=...)``.

A host that mounts ``create_app`` (FastAPI: ``api.mount("/messaging", messaging)``) serves our
``/v1`` routes, but its own ``/openapi.json`` and ``/docs`` list only its routes: a mount is
opaque to FastAPI. :func:`merged_openapi` adds ours to a host's document: each path under the
mount's prefix, each operation with our Bearer scheme (the host's own operations keep theirs),
our schemas among the host's components. A component of ours whose name the host already
uses for something else is renamed ``UnifiedMessaging<Name>``, and our references follow it.
:func:`add_to_openapi` makes a FastAPI app's ``openapi()`` return the merged document.
Nothing here imports FastAPI.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ._openapi import openapi_document

__all__ = ["add_to_openapi", "merged_openapi"]

JsonObject = dict[str, Any]
_RENAMED_PREFIX = "UnifiedMessaging"


class OpenApiHost(Protocol):
    """What :func:`add_to_openapi` needs of the host: FastAPI's ``openapi()`` and its cache."""

    openapi_schema: JsonObject | None
    openapi: Callable[[], JsonObject]


def merged_openapi(host_document: JsonObject, *, prefix: str) -> JsonObject:
    """``host_document`` with our operations under ``prefix`` (where ``create_app`` is
    mounted, e.g. ``/messaging``) and our components. The host's document is not changed."""
    prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
    ours = openapi_document()
    merged: JsonObject = {**host_document}
    components: JsonObject = {
        kind: dict(entries) for kind, entries in host_document.get("components", {}).items()
    }
    renames: dict[str, str] = {}
    for kind, entries in ours.get("components", {}).items():
        present = components.setdefault(kind, {})
        for name, definition in entries.items():
            if name in present and present[name] != definition:
                renames[f"#/components/{kind}/{name}"] = (
                    f"#/components/{kind}/{_RENAMED_PREFIX}{name}"
                )
    ours = _rewrite_refs(ours, renames)
    for kind, entries in ours.get("components", {}).items():
        for name, definition in entries.items():
            target = f"#/components/{kind}/{name}"
            final = renames.get(target, target).rsplit("/", 1)[1]
            components[kind][final] = definition
    merged["components"] = components
    default_security = ours.get("security")
    paths: JsonObject = dict(host_document.get("paths", {}))
    for path, item in ours.get("paths", {}).items():
        operations: JsonObject = {}
        for method, operation in item.items():
            if isinstance(operation, dict) and "security" not in operation and default_security:
                operation = {**operation, "security": default_security}
            operations[method] = operation
        paths[prefix + path] = operations
    merged["paths"] = paths
    return merged


def add_to_openapi(host: OpenApiHost, *, prefix: str) -> None:
    """Make a FastAPI ``host``'s ``openapi()`` (its ``/openapi.json`` and ``/docs``) list
    our operations under ``prefix`` beside its own, with our schemas (:func:`merged_openapi`).
    Call it once, after the host's routes are added; the merged document is cached as
    FastAPI caches its own."""
    host_openapi = host.openapi

    def openapi() -> JsonObject:
        if host.openapi_schema is None:
            # FastAPI's own openapi() builds and caches the host's document; we replace it.
            host.openapi_schema = merged_openapi(host_openapi(), prefix=prefix)
        return host.openapi_schema

    host.openapi = openapi


def _rewrite_refs(value: Any, renames: dict[str, str]) -> Any:
    if not renames:
        return value
    if isinstance(value, dict):
        return {
            key: (renames.get(item, item) if key == "$ref" and isinstance(item, str)
                  else _rewrite_refs(item, renames))
            for key, item in value.items()
        }  # fmt: skip
    if isinstance(value, list):
        return [_rewrite_refs(item, renames) for item in value]
    return value
