"""Connection operations on the façade beside ``_admin``'s, for the dashboard (D31) and any
other edge: a provider's credential fields (to build a form from its schema), and the one
check that a connection belongs to a workspace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import SecretStr

from ._domain import Connection
from ._errors import RequestInvalid, ResourceNotFound
from ._types import ALL_PROVIDERS, ProviderCode
from .providers._credentials import CredentialsModel
from .store.base import Store

__all__ = ["ConnectionOpsMixin", "CredentialField"]


@dataclass(frozen=True, slots=True)
class CredentialField:
    """One field of a provider's credentials schema: its name, whether it is a secret (a
    password field, never shown back), whether it is required, and what it is."""

    name: str
    secret: bool
    required: bool
    description: str | None = None


class ConnectionOpsMixin:
    _store: Store
    _credential_schemas: Mapping[ProviderCode, type[CredentialsModel]]

    def credential_fields(self, provider: str) -> list[CredentialField]:
        """The credentials ``add_connection`` takes for ``provider``, from the schema its
        live adapter validates them with (empty for an adapter the host brought)."""
        if provider not in ALL_PROVIDERS:
            raise RequestInvalid.for_field("provider", f"unknown provider code {provider!r}")
        schema = self._credential_schemas.get(provider)
        if schema is None:
            return []
        return [
            CredentialField(
                name=name,
                secret=field.annotation is SecretStr,
                required=field.is_required(),
                description=field.description,
            )
            for name, field in schema.model_fields.items()
        ]

    async def connection_of(self, workspace_id: str, connection_id: str) -> Connection:
        """The connection, if it belongs to the workspace; else :class:`ResourceNotFound`, as
        for one that does not exist."""
        connection = await self._store.get_connection(connection_id)
        if connection is None or connection.workspace_id != workspace_id:
            raise ResourceNotFound(f"Connection {connection_id} not found.")
        return connection
