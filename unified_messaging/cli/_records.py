"""How each stored record looks on the command line, as JSON and as a table row.

Only what an operator may see: an API key is its display prefix (never the hash), a
connection never carries its credentials or its delivery-report token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._output import Column, JsonObject, JsonValue, cell, iso, seconds

if TYPE_CHECKING:
    from datetime import datetime

    from .._domain import ApiKey, Connection, Template, Workspace

__all__ = [
    "API_KEY_COLUMNS",
    "CONNECTION_COLUMNS",
    "TEMPLATE_COLUMNS",
    "WORKSPACE_COLUMNS",
    "api_key_json",
    "connection_json",
    "template_json",
    "workspace_json",
]


def workspace_json(workspace: Workspace) -> JsonObject:
    quiet: JsonObject | None = None
    if workspace.quiet_hours is not None:
        quiet = dict(workspace.quiet_hours.to_json())
    return {
        "id": workspace.id,
        "name": workspace.name,
        "monthly_quota": workspace.monthly_quota,
        "retry_unavailable": workspace.retry_unavailable,
        "queue_ttl": workspace.queue_ttl.total_seconds(),
        # D28, in the form --recipient-limit takes: "10/1h", or "off".
        "recipient_limit": str(workspace.recipient_limit or "off"),
        # {"window", "zone", "scope"}, or "off".
        "quiet_hours": quiet or "off",
        # D33: the hand-over gate's consent check, "off" or "local".
        "consent_policy": workspace.consent_policy,
        # Personal data: live message text shown as ****** everywhere.
        "mask_live_text": workspace.mask_live_text,
        "created_at": iso(workspace.created_at),
    }


def api_key_json(key: ApiKey, now: datetime) -> JsonObject:
    return {
        "id": key.id,
        "workspace_id": key.workspace_id,
        "livemode": key.livemode,
        "display_prefix": key.display_prefix,
        "name": key.name,
        "status": _key_status(key, now),
        "created_at": iso(key.created_at),
        "expires_at": iso(key.expires_at),
        "revoked_at": iso(key.revoked_at),
        "rate_limit": key.rate_limit,
        "rate_burst": key.rate_burst,
    }


def connection_json(connection: Connection) -> JsonObject:
    from ..providers.base import uses_turkish_shift  # when a command runs, not at parse time

    return {
        "id": connection.id,
        "workspace_id": connection.workspace_id,
        "provider": connection.provider,
        "channel": connection.channel,
        "is_default": connection.is_default,
        "default_sender": connection.default_sender,
        "approved_senders": list(connection.approved_senders),
        "iys_mode": connection.iys_mode,
        "dlr_timeout": seconds(connection.dlr_timeout),
        # What the connection really does: never the shift where its provider cannot send it.
        "turkish_shift": uses_turkish_shift(connection),
        "base_url": connection.base_url,
        # Where the provider posts delivery reports (D20): give it this path on your host.
        "dlr_path": f"/v1/dlr/{connection.id}/{connection.dlr_token}",
        "created_at": iso(connection.created_at),
    }


def template_json(template: Template) -> JsonObject:
    return {
        "workspace_id": template.workspace_id,
        "key": template.key,
        "body": template.body,
        "description": template.description,
        "provider_template": template.provider_template,
        "provider_language": template.provider_language,
        "created_at": iso(template.created_at),
        "updated_at": iso(template.updated_at),
    }


def _key_status(key: ApiKey, now: datetime) -> str:
    if key.revoked_at is not None and key.revoked_at <= now:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "active"


def _mode(livemode: JsonValue) -> str:
    return "live" if livemode else "test"


def _prefix(prefix: JsonValue) -> str:
    # The ellipsis says "this is not the whole key" to whoever copies it.
    return f"{prefix}…"


def _when(moment: JsonValue) -> str:
    # Tables show seconds; the JSON keeps the full timestamp.
    return cell(moment)[:19].replace("T", " ") if moment else "-"


def _default(is_default: JsonValue) -> str:
    return "*" if is_default else ""


def _clip(text: JsonValue) -> str:
    shown = cell(text)
    return shown if len(shown) <= 48 else shown[:47] + "…"


WORKSPACE_COLUMNS = (
    Column("ID", "id"),
    Column("NAME", "name"),
    Column("MONTHLY QUOTA", "monthly_quota", lambda q: "unlimited" if q is None else cell(q)),
    Column("CREATED", "created_at", _when),
)
API_KEY_COLUMNS = (
    Column("ID", "id"),
    Column("MODE", "livemode", _mode),
    Column("PREFIX", "display_prefix", _prefix),
    Column("NAME", "name"),
    Column("STATUS", "status"),
    Column("CREATED", "created_at", _when),
    Column("EXPIRES", "expires_at", _when),
)
CONNECTION_COLUMNS = (
    Column("ID", "id"),
    Column("PROVIDER", "provider"),
    Column("DEFAULT", "is_default", _default),
    Column("SENDER", "default_sender"),
    Column("APPROVED", "approved_senders"),
    Column("IYS", "iys_mode"),
    Column("BASE URL", "base_url"),
)
TEMPLATE_COLUMNS = (
    Column("KEY", "key"),
    Column("BODY", "body", _clip),
    Column("DESCRIPTION", "description", _clip),
    Column("UPDATED", "updated_at", _when),
)
