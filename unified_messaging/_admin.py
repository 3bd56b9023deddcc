"""Admin operations of the façade: workspaces, API keys, connections, templates, quota.

The edges (CLI, a host's dashboard, the pytest plugin) call these; the rules that guard the
data live here, once.
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from ._access.authorize import normalize_allowlist_entry
from ._access.flood_guard import DEFAULT_RECIPIENT_LIMIT, RecipientLimit, parse_recipient_limit
from ._access.keys import generate_api_key, hash_api_key, key_display_prefix
from ._audit import DEFAULT_AUDIT_LIMIT, AuditPage, audit_page
from ._audit_actions import audited, of_argument, of_record, of_workspace
from ._clock import Clock
from ._domain import DEFAULT_DLR_TIMEOUT, DEFAULT_QUEUE_TTL, ApiKey, Connection, Template, Workspace
from ._errors import InvalidCredentials, RequestInvalid, ResourceNotFound, TemplateNotFound
from ._ids import new_id
from ._models import MAX_SENDER_LENGTH, has_control_chars
from ._quota import quota_period
from ._routing.breaker_policy import DEFAULT_BREAKER_POLICY, BreakerPolicy
from ._routing.pacing import RATE_FIELDS, RateSetting, rate_setting
from ._schedule import QuietHours
from ._templates import body_problem
from ._types import ALL_PROVIDERS, IYS_MODES, TEMPLATE_KEY_PATTERN, IysMode, ProviderCode
from ._vault import Vault
from ._vault_rotation import VaultRotation, rotate_sealed
from .providers._credentials import CredentialsModel, validate_credentials
from .providers.base import PROFILES
from .store.base import Store

__all__ = ["AdminMixin", "CreatedApiKey", "QuotaUsage"]

_TEMPLATE_KEY = re.compile(TEMPLATE_KEY_PATTERN)
#: WhatsApp's template names and language codes (its "Supported languages" list).
_PROVIDER_TEMPLATE = re.compile(r"[a-z0-9_]{1,512}")
_PROVIDER_LANGUAGE = re.compile(r"[a-z]{2,3}(_[A-Z]{2})?")
_SENDER_LENGTH_PROBLEM = f"must be 1-{MAX_SENDER_LENGTH} characters"
#: A key's rate and burst beyond this are a typo (and a burst past it would not fit the
#: store's integer column on every backend).
MAX_KEY_RATE = 1_000_000_000
#: A queue TTL beyond this is almost surely a unit mistake (milliseconds given as seconds).
MAX_QUEUE_TTL = timedelta(days=7)
_IYS_MODES: frozenset[str] = frozenset(IYS_MODES)


@dataclass(frozen=True, slots=True)
class CreatedApiKey:
    """A new key: the stored record, and the secret itself, which is shown this once."""

    record: ApiKey
    secret: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class QuotaUsage:
    period: str
    used: int
    limit: int | None


class AdminMixin:
    _store: Store
    _clock: Clock
    _vault: Vault
    #: The credentials schema of each provider whose shipped live adapter is in use.
    _credential_schemas: Mapping[ProviderCode, type[CredentialsModel]]

    # ------------------------------------------------------------------ workspaces

    @audited("workspace.create", of_workspace)
    async def create_workspace(
        self,
        name: str,
        *,
        monthly_quota: int | None = None,
        queue_ttl: timedelta = DEFAULT_QUEUE_TTL,
        recipient_limit: RecipientLimit | None = DEFAULT_RECIPIENT_LIMIT,
    ) -> Workspace:
        """A new workspace. ``recipient_limit``: D28's flood guard, 10 messages per
        recipient per hour unless given (``None`` turns it off)."""
        name = name.strip()
        if not 1 <= len(name) <= 200:
            raise RequestInvalid.for_field("name", "must be 1-200 characters")
        _check_quota(monthly_quota)
        _check_queue_ttl(queue_ttl)
        workspace = Workspace(
            id=new_id("ws"),
            name=name,
            created_at=self._clock.now(),
            monthly_quota=monthly_quota,
            queue_ttl=queue_ttl,
            recipient_limit=_check_recipient_limit(recipient_limit),
        )
        await self._store.create_workspace(workspace)
        return workspace

    async def get_workspace(self, workspace_id: str) -> Workspace:
        workspace = await self._store.get_workspace(workspace_id)
        if workspace is None:
            raise ResourceNotFound(f"Workspace {workspace_id} not found.")
        return workspace

    async def list_workspaces(self) -> list[Workspace]:
        return await self._store.list_workspaces()

    @audited("workspace.quota", of_workspace)
    async def set_monthly_quota(self, workspace_id: str, monthly_quota: int | None) -> Workspace:
        _check_quota(monthly_quota)
        workspace = replace(await self.get_workspace(workspace_id), monthly_quota=monthly_quota)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.retry_unavailable", of_workspace)
    async def set_retry_unavailable(self, workspace_id: str, enabled: bool) -> Workspace:
        """D7's opt-in: when no provider can be reached, answer ``201 queued`` and let the
        worker hand the message over with backoff for up to the workspace's ``queue_ttl``
        (10 minutes unless :meth:`set_queue_ttl` changed it), instead of 502."""
        workspace = replace(await self.get_workspace(workspace_id), retry_unavailable=enabled)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.queue_ttl", of_workspace)
    async def set_queue_ttl(self, workspace_id: str, queue_ttl: timedelta) -> Workspace:
        """How long D7 keeps retrying this workspace's queued messages before they end
        ``failed`` (default 10 minutes); messages queued already keep the TTL they got."""
        _check_queue_ttl(queue_ttl)
        workspace = replace(await self.get_workspace(workspace_id), queue_ttl=queue_ttl)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.recipient_limit", of_workspace)
    async def set_recipient_limit(
        self, workspace_id: str, recipient_limit: RecipientLimit | str | None
    ) -> Workspace:
        """D28's flood guard: at most ``recipient_limit`` messages to one recipient per
        window (a :class:`RecipientLimit`, or its text form such as ``"10/1h"``); ``None``
        (or ``"off"``) turns it off. Past it a send is 429 ``RECIPIENT_RATE_LIMITED``. The
        new limit applies at once, to the messages already sent in the window too."""
        limit = _check_recipient_limit(recipient_limit)
        workspace = replace(await self.get_workspace(workspace_id), recipient_limit=limit)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.quiet_hours", of_workspace)
    async def set_quiet_hours(self, workspace_id: str, quiet_hours: QuietHours | None) -> Workspace:
        """Quiet hours (issue 26): sends inside the daily window (commercial ones, or all,
        as its ``scope`` says) are stored ``queued`` and handed over when it ends, unless a
        send opts out (``ignore_quiet_hours``); ``None`` turns them off (the default).
        Messages waiting already are checked again against the new setting when due."""
        if quiet_hours is not None and not isinstance(quiet_hours, QuietHours):
            raise RequestInvalid.for_field("quiet_hours", "must be QuietHours or None")
        workspace = replace(await self.get_workspace(workspace_id), quiet_hours=quiet_hours)
        await self._store.update_workspace(workspace)
        return workspace

    @audited("workspace.text_masking", of_workspace)
    async def set_text_masking(self, workspace_id: str, enabled: bool) -> Workspace:
        """Hide the text of the workspace's live messages wherever it is shown (status
        records, the list, webhooks, the dashboard): ``******`` instead, for the messages
        sent before as well (personal data under KVKK). Off by default; test mode always
        shows its text. The text is still handed to the providers, and kept for fallback."""
        if not isinstance(enabled, bool):
            raise RequestInvalid.for_field("mask_live_text", "must be true or false")
        workspace = replace(await self.get_workspace(workspace_id), mask_live_text=enabled)
        await self._store.update_workspace(workspace)
        return workspace

    async def quota_usage(self, workspace_id: str) -> QuotaUsage:
        workspace = await self.get_workspace(workspace_id)
        period = quota_period(self._clock.now())
        used = await self._store.quota_used(workspace_id, period)
        return QuotaUsage(period, used, workspace.monthly_quota)

    # ------------------------------------------------------------------ API keys

    @audited("api_key.create", lambda created, _: of_record(created.record, _))
    async def create_api_key(
        self,
        workspace_id: str,
        *,
        livemode: bool = False,
        name: str | None = None,
        expires_at: datetime | None = None,
        rate_limit: float | None = None,
        rate_burst: int | None = None,
    ) -> CreatedApiKey:
        """Create a key; its secret is in the result and nowhere else, ever again (D1)."""
        await self.get_workspace(workspace_id)
        if expires_at is not None and expires_at.tzinfo is None:
            raise RequestInvalid.for_field("expires_at", "must carry a timezone")
        if expires_at is not None and expires_at <= self._clock.now():
            # It could never authenticate: almost always a typo in the year or the zone.
            raise RequestInvalid.for_field("expires_at", "must be in the future")
        if rate_limit is not None and not (math.isfinite(rate_limit) and rate_limit > 0):
            raise RequestInvalid.for_field("rate_limit", "must be positive")
        if rate_limit is not None and rate_limit > MAX_KEY_RATE:
            raise RequestInvalid.for_field("rate_limit", f"must be at most {MAX_KEY_RATE:,}")
        if rate_burst is not None and rate_burst < 1:
            raise RequestInvalid.for_field("rate_burst", "must be at least 1")
        if rate_burst is not None and rate_burst > MAX_KEY_RATE:
            raise RequestInvalid.for_field("rate_burst", f"must be at most {MAX_KEY_RATE:,}")
        secret = generate_api_key(livemode=livemode)
        record = ApiKey(
            id=new_id("key"),
            workspace_id=workspace_id,
            livemode=livemode,
            key_hash=hash_api_key(secret),
            display_prefix=key_display_prefix(secret),
            created_at=self._clock.now(),
            name=name,
            expires_at=expires_at,
            rate_limit=rate_limit,
            rate_burst=rate_burst,
        )
        await self._store.add_api_key(record)
        return CreatedApiKey(record, secret)

    async def list_api_keys(self, workspace_id: str) -> list[ApiKey]:
        return await self._store.list_api_keys(workspace_id)

    @audited("api_key.revoke", of_record)
    async def revoke_api_key(self, key_id: str, *, workspace_id: str | None = None) -> ApiKey:
        """Revoke a key (idempotent). With ``workspace_id``, a key of another workspace is
        not found: the dashboard revokes only within the workspace its user may see (D31)."""
        key = await self._store.get_api_key(key_id)
        if key is None or workspace_id not in (None, key.workspace_id):
            raise ResourceNotFound(f"API key {key_id} not found.")
        if key.revoked_at is None:
            key = replace(key, revoked_at=self._clock.now())
            await self._store.update_api_key(key)
        return key

    # ------------------------------------------------------------------ connections

    @audited("connection.add", of_record)
    async def add_connection(
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
        await self.get_workspace(workspace_id)
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

    async def list_connections(self, workspace_id: str) -> list[Connection]:
        return await self._store.list_connections(workspace_id)

    async def get_connection(self, connection_id: str) -> Connection:
        connection = await self._store.get_connection(connection_id)
        if connection is None:
            raise ResourceNotFound(f"Connection {connection_id} not found.")
        return connection

    @audited("connection.default", of_record)
    async def set_default_connection(self, connection_id: str) -> Connection:
        connection = await self.get_connection(connection_id)
        await self._store.set_default_connection(connection.workspace_id, connection_id)
        return await self.get_connection(connection_id)

    @audited("connection.breaker_policy", of_record)
    async def set_breaker_policy(
        self, /, connection_id: str, policy: BreakerPolicy | None = None, **changes: object
    ) -> Connection:
        """Set a connection's circuit-breaker thresholds (D26): ``policy`` as a whole, or
        ``changes`` by name to its current ones (``window`` and ``cooldown`` in seconds,
        ``min_calls``, ``failure_ratio``, ``consecutive``); neither: back to the defaults.
        A bad value is :class:`RequestInvalid` naming it (``breaker_window`` ...). Every
        process uses the new thresholds within its cache time (``serve``: 1 s)."""
        connection = await self.get_connection(connection_id)
        if changes:
            policy = BreakerPolicy.build(policy or connection.breaker, **changes)
        updated = replace(connection, breaker=policy or DEFAULT_BREAKER_POLICY)
        await self._store.update_connection(updated)
        return await self.get_connection(connection_id)

    @audited("connection.send_rate", of_record)
    async def set_send_rate(self, /, connection_id: str, **limits: RateSetting) -> Connection:
        """Change a connection's send rate (D27): ``max_rate`` (messages a second) and/or
        ``max_calls`` (provider calls a second), each a number, ``None``/``"off"`` for no
        limit, or ``"default"`` for the provider's documented one; the other stays. A bad
        value is :class:`RequestInvalid` naming it. Every process paces by the new rate
        within its cache time (``serve``: 1 s)."""
        connection = await self.get_connection(connection_id)
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
        return await self.get_connection(connection_id)

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
        connection = await self.get_connection(connection_id)
        default, approved = _senders(default_sender, approved_senders)
        updated = replace(connection, default_sender=default, approved_senders=approved)
        await self._store.update_connection(updated)
        return await self.get_connection(connection_id)

    @audited("connection.remove", of_record)
    async def remove_connection(self, connection_id: str) -> Connection:
        """Remove a connection; returns it as it was. If it was the default, the oldest
        remaining one becomes the default."""
        connection = await self.get_connection(connection_id)
        if not await self._store.remove_connection(connection_id):
            raise ResourceNotFound(f"Connection {connection_id} not found.")
        return connection

    # Not atomic: a rotation writes rows of every workspace, and one transaction would hold
    # the write lock (SQLite: every send) for all of it. Its row follows once it succeeded.
    @audited("vault.rotate", lambda rotation, _: (None, rotation.active_key_id), atomic=False)
    async def rotate_vault(self) -> VaultRotation:
        """Re-seal everything the vault seals under its active key (D21): every connection's
        credentials and every webhook endpoint's secret, the previous one too while it still
        signs (an expired one is removed). Returns what it did per kind.

        Nothing is written unless every token opens: a token under a key that is no longer
        configured raises :class:`~unified_messaging.UnknownKeyId` naming it. Safe to repeat.
        """
        return await rotate_sealed(self._store, self._vault, now=self._clock.now())

    async def rotate_credentials(self) -> int:
        """:meth:`rotate_vault` under its older name: re-seals everything the vault seals
        (webhook secrets too) and returns how many tokens it re-sealed. Recorded as
        ``vault.rotate``, by :meth:`rotate_vault`."""
        return (await self.rotate_vault()).total

    # ------------------------------------------------------------------ IP allowlist

    @audited("allowlist.add", lambda entry, call: (call["workspace_id"], entry))
    async def add_allowlist_entry(self, workspace_id: str, cidr: str) -> str:
        """Admit an IPv4/IPv6 address or network (D18); returns the entry as stored.

        While a workspace's allowlist is empty every address may call; the first entry
        closes it to everything else.
        """
        await self.get_workspace(workspace_id)
        entry = _allowlist_entry(cidr)
        await self._store.add_allowlist_entry(workspace_id, entry)
        return entry

    @audited("allowlist.remove", lambda entry, call: (call["workspace_id"], entry))
    async def remove_allowlist_entry(self, workspace_id: str, cidr: str) -> str:
        """Remove an entry (given as added, or in any form that normalizes to it); returns
        the entry as it was stored."""
        await self.get_workspace(workspace_id)
        entry = _allowlist_entry(cidr)
        if not await self._store.remove_allowlist_entry(workspace_id, entry):
            raise ResourceNotFound(f"{entry} is not on the allowlist.")
        return entry

    async def list_allowlist(self, workspace_id: str) -> list[str]:
        await self.get_workspace(workspace_id)
        return await self._store.list_allowlist(workspace_id)

    # ------------------------------------------------------------------ templates

    @audited("template.set", lambda template, _: (template.workspace_id, template.key))
    async def set_template(
        self,
        workspace_id: str,
        key: str,
        body: str,
        *,
        description: str | None = None,
        provider_template: str | None = None,
        provider_language: str | None = None,
    ) -> Template:
        """Create or replace a template (D9). ``provider_template`` and
        ``provider_language``: for ``bizchat``, the approved WhatsApp template a send through
        it uses (its name, lower-case letters, digits and ``_``) and that template's language
        (``tr``, ``en_US``; default ``tr``); the template's variables fill its parameters in
        the order they first appear in ``body``."""
        await self.get_workspace(workspace_id)
        if not _TEMPLATE_KEY.fullmatch(key):
            raise RequestInvalid.for_field("key", f"must match {TEMPLATE_KEY_PATTERN}")
        problem = body_problem(body)
        if problem is not None:
            raise RequestInvalid.for_field("body", problem)
        provider_template, provider_language = _provider_template(
            provider_template, provider_language
        )
        now = self._clock.now()
        existing = await self._store.get_template(workspace_id, key)
        template = Template(
            workspace_id=workspace_id,
            key=key,
            body=body,
            created_at=existing.created_at if existing else now,
            updated_at=now,
            description=description,
            provider_template=provider_template,
            provider_language=provider_language,
        )
        await self._store.put_template(template)
        return template

    async def get_template(self, workspace_id: str, key: str) -> Template:
        template = await self._store.get_template(workspace_id, key)
        if template is None:
            raise TemplateNotFound(f"No template with the key {key!r}.")
        return template

    async def list_templates(self, workspace_id: str) -> list[Template]:
        return await self._store.list_templates(workspace_id)

    @audited("template.delete", of_argument("key"))
    async def delete_template(self, workspace_id: str, key: str) -> None:
        if not await self._store.delete_template(workspace_id, key):
            raise TemplateNotFound(f"No template with the key {key!r}.")

    # ------------------------------------------------------------------ audit log (D32)

    async def list_audit_events(
        self,
        *,
        workspace_id: str | None = None,
        action: str | None = None,
        limit: int = DEFAULT_AUDIT_LIMIT,
        starting_after: str | None = None,
        actor: str | None = None,
        occurred_after: datetime | None = None,
        occurred_before: datetime | None = None,
    ) -> AuditPage:
        """The audit log, newest first: every change made through the admin methods (D32).

        Filters: ``workspace_id``, ``action`` (one of ``AUDIT_ACTIONS``), ``actor`` (``cli``,
        ``library``, ``dashboard:<e-mail>``), ``occurred_after`` (inclusive) and
        ``occurred_before`` (exclusive). ``limit`` 1-100 (default 50); ``starting_after``
        the last event id of the previous page (Stripe's cursor).
        """
        return await audit_page(
            self._store,
            workspace_id=workspace_id,
            action=action,
            actor=actor,
            occurred_after=occurred_after,
            occurred_before=occurred_before,
            limit=limit,
            starting_after=starting_after,
        )


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


def _provider_template(name: str | None, language: str | None) -> tuple[str | None, str | None]:
    """D9's WhatsApp template of a template (``bizchat``): a name as WhatsApp allows one,
    and a language code of the form it lists (``tr``, ``en_US``), only with a name; an
    empty one is none. Checked here so a typo is named now, not by every send's 132001."""
    name, language = name or None, language or None
    if name is not None and not _PROVIDER_TEMPLATE.fullmatch(name):
        raise RequestInvalid.for_field(
            "provider_template",
            "must be 1-512 lower-case letters, digits and _ (as the WhatsApp template is named)",
        )
    if language is not None and name is None:
        raise RequestInvalid.for_field(
            "provider_language", "needs provider_template: the language of which template?"
        )
    if language is not None and not _PROVIDER_LANGUAGE.fullmatch(language):
        raise RequestInvalid.for_field(
            "provider_language", "must be a WhatsApp language code such as tr, en or en_US"
        )
    return name, language


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


def _allowlist_entry(cidr: str) -> str:
    # Spaces around an entry are refused, not trimmed: the entry stored is then exactly the
    # one the operator reads back, and a pasted line with a stray tab is noticed.
    if isinstance(cidr, str) and cidr != cidr.strip():
        raise RequestInvalid.for_field("cidr", "must not have spaces around it")
    return normalize_allowlist_entry(cidr)


def _check_recipient_limit(limit: RecipientLimit | str | None) -> RecipientLimit | None:
    if isinstance(limit, str):
        return parse_recipient_limit(limit)
    if limit is not None and not isinstance(limit, RecipientLimit):
        raise RequestInvalid.for_field(
            "recipient_limit", "must be a RecipientLimit, N/WINDOW text (e.g. 10/1h) or None"
        )
    return limit


def _check_queue_ttl(queue_ttl: timedelta) -> None:
    if not timedelta(0) < queue_ttl <= MAX_QUEUE_TTL:
        raise RequestInvalid.for_field("queue_ttl", "must be more than 0 and at most 7 days")


def _check_quota(monthly_quota: int | None) -> None:
    if monthly_quota is not None and monthly_quota < 0:
        raise RequestInvalid.for_field("monthly_quota", "must be zero or more")


def _credentials(credentials: Mapping[str, str] | None) -> dict[str, str]:
    found = dict(credentials or {})
    for name, value in found.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidCredentials(f"Credential {name!s:.40} must be text.")
    return found
