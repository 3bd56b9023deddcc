"""``messenger.connections``: a workspace's provider connections (D3, D21, D26, D27): add
(credentials sealed at once), read, configure, remove, test against the provider, and how
each fared (its scorecard and its circuit breaker)."""

from __future__ import annotations

import builtins
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pydantic import SecretStr

from .._clock import Clock
from .._domain import DEFAULT_DLR_TIMEOUT, Connection
from .._errors import InvalidCredentials, RequestInvalid, ResourceNotFound
from .._ids import new_id
from .._models import MAX_SENDER_LENGTH, has_control_chars
from .._routing.breaker import BreakerHealth, SharedBreakers
from .._routing.breaker_policy import DEFAULT_BREAKER_POLICY, BreakerPolicy
from .._routing.pacing import RATE_FIELDS, RateSetting, rate_setting
from .._types import ALL_PROVIDERS, IYS_MODES, IysMode, ProviderCode
from ..audit._actions import audited, of_record
from ..providers._credential_words import credential_words
from ..providers._credentials import CredentialsModel, validate_credentials
from ..providers.base import PROFILES, parts_limit
from ..store.base import ConnectionStats, Store
from ..vault._core import Vault
from ..workspaces._service import Workspaces

if TYPE_CHECKING:
    from .._access.principal import Principal
    from .._routing.adapters import AdapterPool

__all__ = ["Connections", "CredentialField"]

_SENDER_LENGTH_PROBLEM = f"must be 1-{MAX_SENDER_LENGTH} characters"
_IYS_MODES: frozenset[str] = frozenset(IYS_MODES)


@dataclass(frozen=True, slots=True)
class CredentialField:
    """One field of a provider's credentials schema: its name, whether it is a secret (a
    password field, never shown back), whether it is required, and what it is."""

    name: str
    secret: bool
    required: bool
    description: str | None = None
    #: The field in words (``API hash``) and a hint in the provider's own terms.
    label: str = ""
    hint: str | None = None


class Connections:
    """A workspace's provider accounts: ``messenger.connections.add(ws, "sms_a", ...)``."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        vault: Vault,
        workspaces: Workspaces,
        adapters: AdapterPool,
        breakers: SharedBreakers,
    ) -> None:
        self._store = store
        self._clock = clock
        self._vault = vault
        self._workspaces = workspaces
        self._adapters = adapters
        self._breakers = breakers
        #: The credentials schema of each provider whose shipped live adapter is in use.
        self._credential_schemas: Mapping[ProviderCode, type[CredentialsModel]] = (
            adapters.credential_schemas
        )

    def __repr__(self) -> str:
        return "<messenger.connections>"

    @audited("connection.add", of_record)
    async def add(
        self,
        workspace_id: str,
        provider: ProviderCode,
        *,
        credentials: Mapping[str, str] | None = None,
        default_sender: str | None = None,
        approved_senders: Iterable[str] = (),
        iys_mode: IysMode = "informational",
        make_default: bool = False,
        dlr_timeout: timedelta = DEFAULT_DLR_TIMEOUT,
        turkish_shift: bool = True,
        base_url: str | None = None,
        breaker: BreakerPolicy | None = None,
        max_rate: RateSetting = "default",
        max_calls: RateSetting = "default",
    ) -> Connection:
        """Connect a provider account. Credentials are sealed in the vault at once (D21).
        ``breaker``: its circuit breaker's thresholds (D26; default: the defaults).
        ``max_rate``/``max_calls``: its send rate (D27), messages and provider calls a second
        (``None`` or ``"off"``: no limit; default: the provider's documented limit)."""
        await self._workspaces.get(workspace_id)
        if provider not in ALL_PROVIDERS:
            raise RequestInvalid.for_field("provider", f"unknown provider code {provider!r}")
        if iys_mode not in _IYS_MODES:
            raise RequestInvalid.for_field("iys_mode", "unknown IYS mode")
        _check_iys_mode(provider, iys_mode)
        if dlr_timeout <= timedelta(0):
            raise RequestInvalid.for_field("dlr_timeout", "must be positive")
        if base_url is not None:
            _check_base_url(base_url)
        profile = PROFILES[provider]
        rates = {"max_rate": rate_setting("max_rate", max_rate, profile.max_rate),
                 "max_calls": rate_setting("max_calls", max_calls, profile.max_calls)}  # fmt: skip
        default_sender, senders = _senders(default_sender, approved_senders)
        connection_id = new_id("conn")
        plain = _credentials(credentials)
        schema = self._credential_schemas.get(provider)
        if plain and schema is not None:
            # Checked against the provider's schema now, so a missing field is named at once
            # rather than at the first live send. No credentials: a test-keys-only connection.
            validate_credentials(schema, plain)
        sealed = self._vault.encrypt_json(
            plain, workspace_id=workspace_id, connection_id=connection_id
        )
        connection = Connection(
            id=connection_id,
            workspace_id=workspace_id,
            provider=provider,
            created_at=self._clock.now(),
            credentials=sealed,
            default_sender=default_sender,
            approved_senders=senders,
            iys_mode=iys_mode,
            is_default=make_default,
            dlr_timeout=dlr_timeout,
            turkish_shift=turkish_shift,
            base_url=base_url,
            dlr_token=secrets.token_urlsafe(24),
            breaker=breaker or DEFAULT_BREAKER_POLICY,
            **rates,
        )
        await self._store.add_connection(connection)
        stored = await self._store.get_connection(connection_id)
        assert stored is not None
        return stored

    async def list(self, workspace_id: str) -> builtins.list[Connection]:
        return await self._store.list_connections(workspace_id)

    async def get(self, connection_id: str) -> Connection:
        connection = await self._store.get_connection(connection_id)
        if connection is None:
            raise ResourceNotFound(f"Connection {connection_id} not found.")
        return connection

    async def of(self, workspace_id: str, connection_id: str) -> Connection:
        """The connection, if it belongs to the workspace; else :class:`ResourceNotFound`, as
        for one that does not exist."""
        connection = await self._store.get_connection(connection_id)
        if connection is None or connection.workspace_id != workspace_id:
            raise ResourceNotFound(f"Connection {connection_id} not found.")
        return connection

    async def available(self, auth: Principal) -> builtins.list[Connection]:
        """The caller's workspace's connections (never their credentials: they stay sealed)."""
        return await self._store.list_connections(auth.workspace_id)

    @audited("connection.default", of_record)
    async def set_default(self, connection_id: str) -> Connection:
        connection = await self.get(connection_id)
        await self._store.set_default_connection(connection.workspace_id, connection_id)
        return await self.get(connection_id)

    @audited("connection.breaker_policy", of_record)
    async def set_breaker_policy(
        self, /, connection_id: str, policy: BreakerPolicy | None = None, **changes: object
    ) -> Connection:
        """Set a connection's circuit-breaker thresholds (D26): ``policy`` as a whole, or
        ``changes`` by name to its current ones (``window`` and ``cooldown`` in seconds,
        ``min_calls``, ``failure_ratio``, ``consecutive``); neither: back to the defaults.
        A bad value is :class:`RequestInvalid` naming it (``breaker_window`` ...). Every
        process uses the new thresholds within its cache time (``serve``: 1 s)."""
        connection = await self.get(connection_id)
        if changes:
            policy = BreakerPolicy.build(policy or connection.breaker, **changes)
        updated = replace(connection, breaker=policy or DEFAULT_BREAKER_POLICY)
        await self._store.update_connection(updated)
        return await self.get(connection_id)

    @audited("connection.send_rate", of_record)
    async def set_send_rate(self, /, connection_id: str, **limits: RateSetting) -> Connection:
        """Change a connection's send rate (D27): ``max_rate`` (messages a second) and/or
        ``max_calls`` (provider calls a second), each a number, ``None``/``"off"`` for no
        limit, or ``"default"`` for the provider's documented one; the other stays. A bad
        value is :class:`RequestInvalid` naming it. Every process paces by the new rate
        within its cache time (``serve``: 1 s)."""
        connection = await self.get(connection_id)
        profile = PROFILES[connection.provider]
        changes: dict[str, float | None] = {}
        for name, value in limits.items():
            if name not in RATE_FIELDS:
                raise RequestInvalid.for_field(name, "is not a send-rate setting")
            changes[name] = rate_setting(name, value, getattr(profile, name))
        updated = replace(
            connection,
            max_rate=changes.get("max_rate", connection.max_rate),
            max_calls=changes.get("max_calls", connection.max_calls),
        )
        await self._store.update_connection(updated)
        return await self.get(connection_id)

    @audited("connection.senders", of_record)
    async def set_senders(
        self,
        connection_id: str,
        *,
        default_sender: str | None = None,
        approved_senders: Iterable[str] = (),
    ) -> Connection:
        """Set a connection's SMS senders (D3) as a whole: ``default_sender``, used when a
        send names none (``None``: a send must name one), and ``approved_senders``, the only
        headers a send may name (empty: any). The rules are ``add_connection``'s: each 1-32
        characters without control characters, and a default joins a non-empty approved
        list. Sends use them within the record cache's time (``serve``: 1 s)."""
        connection = await self.get(connection_id)
        default, approved = _senders(default_sender, approved_senders)
        updated = replace(connection, default_sender=default, approved_senders=approved)
        await self._store.update_connection(updated)
        return await self.get(connection_id)

    @audited("connection.remove", of_record)
    async def remove(self, connection_id: str) -> Connection:
        """Remove a connection; returns it as it was. If it was the default, the oldest
        remaining one becomes the default."""
        connection = await self.get(connection_id)
        if not await self._store.remove_connection(connection_id):
            raise ResourceNotFound(f"Connection {connection_id} not found.")
        return connection

    def credential_fields(self, provider: str) -> builtins.list[CredentialField]:
        """The credentials ``add_connection`` takes for ``provider``, from the schema its
        live adapter validates them with (empty for an adapter the host brought)."""
        if provider not in ALL_PROVIDERS:
            raise RequestInvalid.for_field("provider", f"unknown provider code {provider!r}")
        schema = self._credential_schemas.get(provider)
        if schema is None:
            return []
        fields = []
        for name, field in schema.model_fields.items():
            label, hint = credential_words(provider, name)
            fields.append(
                CredentialField(
                    name=name,
                    secret=field.annotation is SecretStr,
                    required=field.is_required(),
                    description=field.description,
                    label=label,
                    hint=hint or field.description,
                )
            )
        return fields

    async def test(self, connection_id: str) -> int | None:
        """Check a connection's credentials against its provider (a balance or header call).

        Returns the most SMS parts one message may have through the connection (``None``: no
        part limit is known): a longer text is refused with ``BODY_TOO_LONG`` before any call.
        Raises :class:`InvalidCredentials` if the provider refuses them, and
        :class:`ProviderUnavailable` if it cannot be asked.
        """
        connection = await self.get(connection_id)
        adapter = self._adapters.for_connection(connection, livemode=True)
        check = getattr(adapter, "check", None)
        if check is not None:
            await check()
        return parts_limit(adapter, connection.provider)

    async def stats(
        self, workspace_id: str, *, since: datetime, livemode: bool = True
    ) -> builtins.list[ConnectionStats]:
        """How each provider connection fared for the workspace's messages of one mode
        created at or after ``since`` (see :class:`~.store.base.ConnectionStats`)."""
        if since.utcoffset() is None:
            raise RequestInvalid.for_field("since", "needs a time zone")
        await self._workspaces.get(workspace_id)  # ResourceNotFound for an unknown one
        return await self._store.connection_stats(workspace_id, livemode, since)

    async def health(self, workspace_id: str) -> builtins.list[BreakerHealth]:
        """Each of the workspace's connections' circuit breaker (D26), as shared by every
        process now: ``closed``, ``open``, ``half_open`` or ``paused``, until when, and what
        its window counted. Live sends only: test keys never pass through breakers."""
        await self._workspaces.get(workspace_id)  # ResourceNotFound for an unknown one
        connections = await self._store.list_connections(workspace_id)
        return [await self._breakers.health(c) for c in connections]


def _check_iys_mode(provider: ProviderCode, iys_mode: IysMode) -> None:
    """A connection's IYS mode is one its provider's wire format can say (DESIGN §4, IYS).

    Mutlucell (``sms_d``) documents no way to mark a pack commercial: a commercial
    connection there would send IYS-checked traffic as if it were informational, so it is
    refused when it is added, not at every send."""
    profile = PROFILES[provider]
    if iys_mode in profile.iys_modes:
        return
    allowed = " or ".join(sorted(profile.iys_modes))
    able = ", ".join(
        code
        for code, other in PROFILES.items()
        if other.channel == profile.channel and iys_mode in other.iys_modes
    )
    raise RequestInvalid.for_field(
        "iys_mode",
        f"{profile.name} ({provider}) cannot send {iys_mode} traffic: its API documents no "
        f"IYS marking, so only {allowed} is allowed here; send it through a provider that "
        f"marks it ({able})",
    )


def _senders(
    default_sender: str | None, approved_senders: Iterable[str]
) -> tuple[str | None, tuple[str, ...]]:
    """D3's senders of a connection as stored: each 1-32 characters with no control
    character, the approved list without repeats, a default on a non-empty list joined to it
    (else the default itself could not be sent from). An empty default is none."""
    if isinstance(approved_senders, str):
        # A bare string would be read letter by letter, each letter an approved sender.
        raise RequestInvalid.for_field("approved_senders", "must be a list of senders")
    approved = tuple(dict.fromkeys(approved_senders))
    default = default_sender or None
    named = [("approved_senders", s) for s in approved]
    for field_name, sender in [*named, *([("default_sender", default)] if default else [])]:
        if not isinstance(sender, str) or not 1 <= len(sender) <= MAX_SENDER_LENGTH:
            raise RequestInvalid.for_field(field_name, _SENDER_LENGTH_PROBLEM)
        # The same rule a request's ``sender`` meets (_models.Sender): a header stored with
        # a control character would pass here and be refused at every send.
        if has_control_chars(sender):
            raise RequestInvalid.for_field(field_name, "must not contain control characters")
    if default and approved and default not in approved:
        approved = (*approved, default)
    return default, approved


def _check_base_url(base_url: str) -> None:
    """A provider address is an absolute http(s) URL that paths are appended to.

    Checked when the connection is added: otherwise ``notaurl`` is stored and every send
    through the connection fails (or, for the providers that fall back to their default
    address on an empty value, goes somewhere the operator did not mean).
    """
    if any(char.isspace() or not char.isprintable() for char in base_url):
        raise RequestInvalid.for_field("base_url", "must not contain spaces or control characters")
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise RequestInvalid.for_field("base_url", "is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RequestInvalid.for_field(
            "base_url", "must be an absolute http:// or https:// URL, e.g. https://api.example.com"
        )
    if "@" in parts.netloc:
        # It is shown by every listing of the connection; credentials belong in the vault.
        raise RequestInvalid.for_field(
            "base_url", "must not contain credentials: give them as the connection's credentials"
        )
    if parts.query or parts.fragment or base_url.endswith(("?", "#")):
        raise RequestInvalid.for_field(
            "base_url", "must not have a query or fragment: the provider's paths are appended to it"
        )


def _credentials(credentials: Mapping[str, str] | None) -> dict[str, str]:
    found = dict(credentials or {})
    for name, value in found.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidCredentials(f"Credential {name!s:.40} must be text.")
    return found
