"""The SQL schema as SQLAlchemy Core tables: what the migrations build, what the store queries.

The Alembic revisions under ``migrations/versions`` spell the same tables out on their own
(a revision must never change when this file does); a test compares the migrated database
with this metadata so the two cannot drift apart.

Conventions:

- Every table is prefixed ``um_``, so the store can share a database with its host
  application (which may well have a ``messages`` table of its own).
- Datetimes are timezone-aware UTC on both dialects (:class:`UtcDateTime`).
- Durations are integer milliseconds (``*_ms``); lists and small documents are JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

__all__ = [
    "ALL_TABLES",
    "UtcDateTime",
    "allowlist",
    "api_keys",
    "audit_log",
    "breakers",
    "connections",
    "due_work",
    "idempotency",
    "iys_connections",
    "iys_registrations",
    "login_failures",
    "messages",
    "metadata",
    "notices",
    "pacing",
    "provider_accounts",
    "provider_refs",
    "quota",
    "sessions",
    "stat_changes",
    "stats",
    "suppressions",
    "templates",
    "users",
    "verification_guards",
    "verification_settings",
    "verifications",
    "webhook_deliveries",
    "webhook_endpoints",
    "workspaces",
]


class UtcDateTime(sa.TypeDecorator[datetime]):
    """An aware datetime, stored as UTC, returned as UTC.

    PostgreSQL keeps ``timestamptz``. SQLite has no time zone type: values are stored as
    naive UTC text in SQLAlchemy's fixed-width format (so text order is time order) and
    made aware again on the way out.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.utcoffset() is None:
            # A naive datetime has no instant; guessing one would corrupt ordering silently.
            raise ValueError("the store keeps timezone-aware datetimes only")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)
        # SQLite: the same text as process_bind_param followed by SQLAlchemy's DATETIME
        # processor ("YYYY-MM-DD HH:MM:SS.ffffff", naive UTC), in one step. The two steps
        # were a tenth of a 200-item bulk's CPU; tests/store pins the text.
        return _sqlite_text

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], Any] | None:
        if dialect.name != "sqlite":
            return super().result_processor(dialect, coltype)
        # SQLite: the stored text straight to an aware UTC datetime, where SQLAlchemy's
        # DATETIME processor matched a regular expression and then process_result_value
        # added the zone (a third of a message row's conversion; tests/store pins both).
        return _sqlite_datetime

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def _sqlite_datetime(value: str | None) -> datetime | None:
    if value is None:
        return None
    moment = datetime.fromisoformat(value)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _sqlite_text(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.utcoffset() is None:
        raise ValueError("the store keeps timezone-aware datetimes only")
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")


metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# Texts are unbounded on purpose: a length limit would turn an over-long value into a
# driver error at write time, while validation belongs to the caller.
_Text = sa.Text
_Json = sa.JSON(none_as_null=True)


def _workspace_fk() -> sa.ForeignKey:
    return sa.ForeignKey("um_workspaces.id")


workspaces = sa.Table(
    "um_workspaces",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column("name", _Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("monthly_quota", sa.BigInteger, nullable=True),
    sa.Column("retry_unavailable", sa.Boolean, nullable=False),
    sa.Column("queue_ttl_ms", sa.BigInteger, nullable=False),
    # D28's flood guard: at most recipient_limit messages per recipient per window; both
    # NULL when the workspace turned it off.
    sa.Column("recipient_limit", sa.Integer, nullable=True),
    sa.Column("recipient_window_ms", sa.BigInteger, nullable=True),
    # The quiet window ``{"window", "zone", "scope"}``; NULL: off (migration 0015).
    sa.Column("quiet_hours", _Json, nullable=True),
    # D33: the hand-over gate's consent check, "off" or "local" (migration 0020).
    sa.Column("consent_policy", _Text, nullable=False, server_default="off"),
    # D33: the content hints' settings ``{"trade_name", "mersis", "opt_out", "refuse"}``;
    # NULL: none set, hints only warn (migration 0023).
    sa.Column("content_rules", _Json, nullable=True),
    # Personal data: hide the text of live messages wherever it is shown (migration 0026).
    sa.Column("mask_live_text", sa.Boolean, nullable=False, server_default=sa.false()),
)

api_keys = sa.Table(
    "um_api_keys",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column("workspace_id", _Text, _workspace_fk(), nullable=False, index=True),
    sa.Column("livemode", sa.Boolean, nullable=False),
    sa.Column("key_hash", _Text, nullable=False, unique=True, index=True),
    sa.Column("display_prefix", _Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("name", _Text, nullable=True),
    sa.Column("expires_at", UtcDateTime, nullable=True),
    sa.Column("revoked_at", UtcDateTime, nullable=True),
    sa.Column("rate_limit", sa.Float, nullable=True),
    sa.Column("rate_burst", sa.Integer, nullable=True),
)

connections = sa.Table(
    "um_connections",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column("workspace_id", _Text, _workspace_fk(), nullable=False),
    sa.Column("provider", _Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("credentials", _Text, nullable=False),
    sa.Column("default_sender", _Text, nullable=True),
    sa.Column("approved_senders", _Json, nullable=False),
    sa.Column("iys_mode", _Text, nullable=False),
    sa.Column("is_default", sa.Boolean, nullable=False),
    sa.Column("dlr_timeout_ms", sa.BigInteger, nullable=False),
    sa.Column("turkish_shift", sa.Boolean, nullable=False),
    sa.Column("base_url", _Text, nullable=True),
    sa.Column("dlr_token", _Text, nullable=False),
    # D26: the breaker's thresholds, NULL for the defaults.
    sa.Column("breaker_policy", _Json, nullable=True),
    # D27: messages and provider calls a second at most, NULL for no limit.
    sa.Column("max_rate", sa.Float, nullable=True),
    sa.Column("max_calls", sa.Float, nullable=True),
    # Leads with workspace_id, so it is also the index for a workspace's connections.
    sa.UniqueConstraint("workspace_id", "provider"),
    # At most one default per workspace, enforced by the database itself.
    sa.Index(
        "ux_um_connections_default",
        "workspace_id",
        unique=True,
        sqlite_where=sa.text("is_default"),
        postgresql_where=sa.text("is_default"),
    ),
)

templates = sa.Table(
    "um_templates",
    metadata,
    sa.Column("workspace_id", _Text, _workspace_fk(), primary_key=True),
    sa.Column("key", _Text, primary_key=True),
    sa.Column("body", _Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.Column("description", _Text, nullable=True),
    sa.Column("provider_template", _Text, nullable=True),
    sa.Column("provider_language", _Text, nullable=True),
)

allowlist = sa.Table(
    "um_allowlist",
    metadata,
    sa.Column("workspace_id", _Text, _workspace_fk(), primary_key=True),
    sa.Column("cidr", _Text, primary_key=True),
)

messages = sa.Table(
    "um_messages",
    metadata,
    # GET by job id is this one primary-key lookup; attempts and the DLR ride along as JSON.
    sa.Column("job_id", _Text, primary_key=True),
    sa.Column("workspace_id", _Text, _workspace_fk(), nullable=False),
    sa.Column("livemode", sa.Boolean, nullable=False),
    sa.Column("status", _Text, nullable=False),
    sa.Column("to", _Text, nullable=False),
    sa.Column("channel", _Text, nullable=False),
    sa.Column("provider", _Text, nullable=False),
    sa.Column("text", _Text, nullable=False),
    sa.Column("sender", _Text, nullable=True),
    sa.Column("template_key", _Text, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.Column("sent_at", UtcDateTime, nullable=True),
    sa.Column("final_at", UtcDateTime, nullable=True),
    sa.Column("error_code", _Text, nullable=True),
    sa.Column("error_message", _Text, nullable=True),
    sa.Column("attempts", _Json, nullable=False),
    sa.Column("dlr", _Json, nullable=True),
    sa.Column("segments", sa.Integer, nullable=True),
    sa.Column("encoding", _Text, nullable=True),
    sa.Column("fallback_left", _Json, nullable=False),
    sa.Column("fallback_requested", sa.Boolean, nullable=False),
    sa.Column("template_params", _Json, nullable=False),
    sa.Column("version", sa.Integer, nullable=False, server_default="0"),
    # The sender the request named (NULL: none), resolved again for every fallback hop (D3).
    sa.Column("requested_sender", _Text, nullable=True),
    # A bizchat provider template (name, language) sent with template_params (migration 0014).
    sa.Column("template_name", _Text, nullable=True),
    sa.Column("template_language", _Text, nullable=True),
    # Where the send is: refused / accepted / waiting / settled (``_types.SendPhase``).
    sa.Column("phase", _Text, nullable=False, server_default="settled"),
    # When a waiting send is to be handed over; NULL for one sent at once. Due
    # rows are found by their ``scheduled_send`` work item, so no index (migration 0015).
    sa.Column("send_at", UtcDateTime, nullable=True),
    # D35: the request's ignore_quiet_hours, and until when the gate last held the message
    # for quiet hours (its queue TTL counts from then) (migration 0019).
    sa.Column("ignore_quiet_hours", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("held_until", UtcDateTime, nullable=True),
    # D33: the message's İYS class, fixed at acceptance (NULL: stored before it).
    sa.Column("iys_mode", _Text, nullable=True),
    # D34: a code message's text with its code masked, shown in live mode (migration 0020v).
    sa.Column("masked_text", _Text, nullable=True),
    # The API key it was sent with, id and name (NULL: none; migration 0026).
    sa.Column("api_key_id", _Text, nullable=True),
    sa.Column("api_key_name", _Text, nullable=True),
    # D36: milliseconds to wait for delivered before the next channel (NULL: none; migration 0029).
    sa.Column("escalate_after_ms", sa.BigInteger, nullable=True),
    # Listing (D29): one index per filter, each ending in the list's order, so a page of
    # any filter reads only its own rows, at any depth (migration 0006).
    # Its trailing status and provider (migration 0011) let the dashboard's overview count a
    # day's messages by provider and status from the index alone.
    sa.Index(
        "ix_um_messages_list",
        "workspace_id",
        "livemode",
        "created_at",
        "job_id",
        "status",
        "provider",
    ),
    sa.Index("ix_um_messages_list_to", "workspace_id", "livemode", "to", "created_at", "job_id"),
    sa.Index(
        "ix_um_messages_list_status", "workspace_id", "livemode", "status", "created_at", "job_id"
    ),
    sa.Index(
        "ix_um_messages_list_provider",
        "workspace_id",
        "livemode",
        "provider",
        "created_at",
        "job_id",
    ),
)

provider_refs = sa.Table(
    "um_provider_refs",
    metadata,
    # A delivery report names the provider's message id; this finds the job it belongs to.
    sa.Column("connection_id", _Text, primary_key=True),
    sa.Column("provider_message_id", _Text, primary_key=True),
    sa.Column("job_id", _Text, nullable=False),
    sa.Column("workspace_id", _Text, nullable=False),
    sa.Column("livemode", sa.Boolean, nullable=False),
    # Still waiting for a report: what a polling worker asks the provider about.
    sa.Column("open", sa.Boolean, nullable=False),
    # Not asked about before this (polled providers' pace per message); NULL: at once.
    sa.Column("poll_after", UtcDateTime, nullable=True),
    sa.Index("ix_um_provider_refs_connection_id_open", "connection_id", "open"),
    # What a poll round reads: a connection's live open refs, the longest due first.
    sa.Index("ix_um_provider_refs_poll", "connection_id", "open", "livemode", "poll_after"),
)

quota = sa.Table(
    "um_quota",
    metadata,
    sa.Column("workspace_id", _Text, primary_key=True),
    sa.Column("period", _Text, primary_key=True),
    sa.Column("used", sa.BigInteger, nullable=False),
)

idempotency = sa.Table(
    "um_idempotency",
    metadata,
    sa.Column("workspace_id", _Text, primary_key=True),
    sa.Column("key_id", _Text, primary_key=True),
    sa.Column("idem_key", _Text, primary_key=True),
    sa.Column("request_hash", _Text, nullable=False),
    sa.Column("status_code", sa.Integer, nullable=True),
    sa.Column("response_body", sa.LargeBinary, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False, index=True),
    sa.Column("owner", _Text, nullable=True),
    sa.Column("job_ids", _Json, nullable=True),
)

due_work = sa.Table(
    "um_due_work",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column("kind", _Text, nullable=False),
    sa.Column("ref", _Text, nullable=False),
    sa.Column("payload", _Json, nullable=False),
    sa.Column("due_at", UtcDateTime, nullable=False, index=True),
    sa.Column("claimed_by", _Text, nullable=True),
    sa.Column("lease_until", UtcDateTime, nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
)

webhook_endpoints = sa.Table(
    "um_webhook_endpoints",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column("workspace_id", _Text, _workspace_fk(), nullable=False, index=True),
    sa.Column("url", _Text, nullable=False),
    sa.Column("events", _Json, nullable=False),
    sa.Column("secret_ciphertext", _Text, nullable=False),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("disabled_at", UtcDateTime, nullable=True),
    sa.Column("failing_since", UtcDateTime, nullable=True),
    sa.Column("previous_secret_ciphertext", _Text, nullable=True),
    sa.Column("previous_secret_expires_at", UtcDateTime, nullable=True),
)

webhook_deliveries = sa.Table(
    "um_webhook_deliveries",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column(
        "endpoint_id",
        _Text,
        sa.ForeignKey("um_webhook_endpoints.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("event_id", _Text, nullable=False),
    sa.Column("event_type", _Text, nullable=False),
    sa.Column("payload", sa.LargeBinary, nullable=False),
    sa.Column("status", _Text, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", UtcDateTime, nullable=True),
    sa.Column("last_status_code", sa.Integer, nullable=True),
    sa.Column("last_error", _Text, nullable=True),
    # The start of the receiver's last answer, at most 2 KiB (migration 0031).
    sa.Column("last_answer", _Text, nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    # One delivery per event per endpoint; leads with endpoint_id, so it also serves listing.
    sa.UniqueConstraint("endpoint_id", "event_id"),
)

# D26: each connection's circuit breaker, shared by every process (a JSON document and its
# compare-and-set version); a plain keyed row, like the quota counters.
breakers = sa.Table(
    "um_breakers",
    metadata,
    sa.Column("connection_id", _Text, primary_key=True),
    sa.Column("version", sa.BigInteger, nullable=False),
    sa.Column("data", _Text, nullable=False),
)

# D27: one GCRA per connection and limit (``{connection_id}:messages`` / ``:calls``): the
# theoretical arrival time in microseconds since the epoch, changed by one atomic upsert.
pacing = sa.Table(
    "um_pacing",
    metadata,
    sa.Column("key", _Text, primary_key=True),
    sa.Column("tat", sa.BigInteger, nullable=False),
)

# D32: the audit log, append-only (the store has no method that changes or deletes a row).
# No foreign key: a row records what was done, and stays whatever happens to its target.
audit_log = sa.Table(
    "um_audit_log",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column("at", UtcDateTime, nullable=False),
    sa.Column("actor", _Text, nullable=False),
    sa.Column("workspace_id", _Text, nullable=True),
    sa.Column("action", _Text, nullable=False),
    sa.Column("target", _Text, nullable=False),
    sa.Column("client_address", _Text, nullable=True),
    # The list's order, alone and under each filter an operator reaches for first.
    sa.Index("ix_um_audit_log_list", "at", "id"),
    sa.Index("ix_um_audit_log_workspace", "workspace_id", "at", "id"),
    sa.Index("ix_um_audit_log_action", "action", "at", "id"),
)

# D31: the dashboard's users (an operator has no workspace, a member one) and its sessions,
# kept by the SHA-256 of the cookie's value; a one-time login link is a session of kind "link".
users = sa.Table(
    "um_users",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column("email", _Text, nullable=False, unique=True),
    sa.Column("password_hash", _Text, nullable=False),
    sa.Column("role", _Text, nullable=False),
    sa.Column("workspace_id", _Text, _workspace_fk(), nullable=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("disabled_at", UtcDateTime, nullable=True),
)

sessions = sa.Table(
    "um_sessions",
    metadata,
    sa.Column("id_hash", _Text, primary_key=True),
    sa.Column(
        "user_id",
        _Text,
        sa.ForeignKey("um_users.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("kind", _Text, nullable=False),
    sa.Column("csrf_token", _Text, nullable=False),
    sa.Column("workspace_id", _Text, nullable=True),
    sa.Column("livemode", sa.Boolean, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("last_seen_at", UtcDateTime, nullable=False),
)

# D31's one-time notices: what a form post leaves for the page it redirects to (a new key's
# secret among them), sealed under a key derived from the session's cookie value (which is
# never stored), taken once; they go with their session.
notices = sa.Table(
    "um_notices",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column(
        "session_hash",
        _Text,
        sa.ForeignKey("um_sessions.id_hash", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("sealed", _Text, nullable=False),
)

# D31's sign-in throttle, shared by every process: one row per failed sign-in, keyed by a
# hash of the account and client address (neither is stored as such).
login_failures = sa.Table(
    "um_login_failures",
    metadata,
    sa.Column("key", _Text, nullable=False),
    sa.Column("at", UtcDateTime, nullable=False),
    sa.Index("ix_um_login_failures_key", "key", "at"),
)

# The suppression list: one row per workspace, mode, channel and recipient. The
# primary key is the send's admission lookup; the second index is the list's order.
suppressions = sa.Table(
    "um_suppressions",
    metadata,
    sa.Column("workspace_id", _Text, _workspace_fk(), nullable=False),
    sa.Column("livemode", sa.Boolean, nullable=False),
    sa.Column("channel", _Text, nullable=False),
    sa.Column("recipient", _Text, nullable=False),
    sa.Column("id", _Text, nullable=False, unique=True),
    sa.Column("reason", _Text, nullable=True),
    sa.Column("source", _Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.PrimaryKeyConstraint("workspace_id", "livemode", "channel", "recipient"),
    sa.Index("ix_um_suppressions_list", "workspace_id", "livemode", "created_at", "id"),
)

# İYS consents (D33, migration 0020): one row per workspace, mode, address, type and
# recipient type (İYS keeps one BIREYSEL and one TACIR record per address); the primary key
# is the gate's lookup of a bulk's recipients. The history is append-only.
consents = sa.Table(
    "um_consents",
    metadata,
    sa.Column("workspace_id", _Text, _workspace_fk(), nullable=False),
    sa.Column("livemode", sa.Boolean, nullable=False),
    sa.Column("type", _Text, nullable=False),
    sa.Column("recipient", _Text, nullable=False),
    sa.Column("recipient_type", _Text, nullable=False),
    sa.Column("id", _Text, nullable=False, unique=True),
    sa.Column("status", _Text, nullable=False),
    sa.Column("source", _Text, nullable=True),
    sa.Column("consent_date", UtcDateTime, nullable=True),
    sa.Column("iys_state", _Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    # Migration 0022: the current change, and where it stands with İYS.
    sa.Column("last_change_id", _Text, nullable=True),
    sa.Column("iys_transaction_id", _Text, nullable=True),
    sa.Column("iys_error_code", _Text, nullable=True),
    sa.Column("iys_error_message", _Text, nullable=True),
    sa.PrimaryKeyConstraint("workspace_id", "livemode", "type", "recipient", "recipient_type"),
    sa.Index("ix_um_consents_list", "workspace_id", "livemode", "created_at", "id"),
)

consent_changes = sa.Table(
    "um_consent_changes",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column(
        "consent_id",
        _Text,
        sa.ForeignKey("um_consents.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("status", _Text, nullable=False),
    sa.Column("source", _Text, nullable=True),
    sa.Column("consent_date", UtcDateTime, nullable=True),
    sa.Column("recorded_at", UtcDateTime, nullable=False),
    # Migration 0022: where the change stands with İYS, and İYS's transaction id of it.
    sa.Column("iys_state", _Text, nullable=False, server_default="pending"),
    sa.Column("iys_transaction_id", _Text, nullable=True),
    sa.Index("ix_um_consent_changes_pending", "iys_state", "recorded_at"),
    sa.Index("ix_um_consent_changes_transaction", "iys_transaction_id"),
)

# İYS (D33, migration 0022): a workspace's İYS connection (its password and the shared
# token sealed by the vault), the token's compare-and-set version and fetch lease, and the
# pull cursors.
iys_connections = sa.Table(
    "um_iys_connections",
    metadata,
    sa.Column("workspace_id", _Text, _workspace_fk(), primary_key=True),
    sa.Column("iys_code", sa.BigInteger, nullable=False),
    sa.Column("brand_code", sa.BigInteger, nullable=False),
    sa.Column("username", _Text, nullable=False),
    sa.Column("password", _Text, nullable=False),
    sa.Column("base_url", _Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.Column("after_hs", _Text, nullable=True),
    sa.Column("after_iys", _Text, nullable=True),
    sa.Column("pulled_at", UtcDateTime, nullable=True),
    sa.Column("token", _Text, nullable=True),
    sa.Column("access_expires_at", UtcDateTime, nullable=True),
    sa.Column("refresh_expires_at", UtcDateTime, nullable=True),
    sa.Column("token_version", sa.Integer, nullable=False),
    sa.Column("token_lease_by", _Text, nullable=True),
    sa.Column("token_lease_until", UtcDateTime, nullable=True),
    sa.Column("token_grants", _Json, nullable=False),
    # Migration 0028: consents registered through this provider connection's consent API
    # instead of İYS's own (no İYS API user; null: İYS itself).
    sa.Column("via_connection", _Text, nullable=True),
)

# How each change's registration with İYS goes (D33, migration 0022): the attempts that
# may have reached İYS, and the bulk request it rides in.
iys_registrations = sa.Table(
    "um_iys_registrations",
    metadata,
    sa.Column(
        "change_id",
        _Text,
        sa.ForeignKey("um_consent_changes.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("attempted_at", UtcDateTime, nullable=True),
    sa.Column("request_id", _Text, nullable=True),
    sa.Column("subrequest_id", _Text, nullable=True),
)

# Verify (D34): one row per verification. ``pending_to`` is the recipient while the
# verification is pending and NULL after: its unique index lets one pending verification
# per recipient exist (NULLs never collide), so concurrent starts make one.
verifications = sa.Table(
    "um_verifications",
    metadata,
    sa.Column("id", _Text, primary_key=True),
    sa.Column("workspace_id", _Text, _workspace_fk(), nullable=False),
    sa.Column("livemode", sa.Boolean, nullable=False),
    sa.Column("to", _Text, nullable=False),
    sa.Column("channel", _Text, nullable=False),
    sa.Column("status", _Text, nullable=False),
    sa.Column("pending_to", _Text, nullable=True),
    sa.Column("code_digest", _Text, nullable=False),
    sa.Column("code_length", sa.Integer, nullable=False),
    sa.Column("locale", _Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.Column("expires_at", UtcDateTime, nullable=False),
    sa.Column("max_checks", sa.Integer, nullable=False),
    sa.Column("wrong_checks", sa.Integer, nullable=False),
    sa.Column("sends", _Json, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Index("ix_um_verifications_pending", "workspace_id", "livemode", "pending_to", unique=True),
    sa.Index("ix_um_verifications_started", "workspace_id", "livemode", "to", "created_at"),
    # A workspace's newest verifications and its conversion by hour (migration 0025);
    # ``created`` alone: the scrape's conversion of every workspace.
    sa.Index("ix_um_verifications_recent", "workspace_id", "livemode", "created_at"),
    sa.Index("ix_um_verifications_created", "created_at"),
)

# A workspace's Verify limits (D34); no row: the defaults.
verification_settings = sa.Table(
    "um_verification_settings",
    metadata,
    sa.Column("workspace_id", _Text, _workspace_fk(), primary_key=True),
    sa.Column("max_checks", sa.Integer, nullable=False),
    sa.Column("max_sends", sa.Integer, nullable=False),
    sa.Column("resend_cooldown_ms", sa.BigInteger, nullable=False),
    sa.Column("hourly_limit", sa.Integer, nullable=False),
    # D36: the WhatsApp authentication template of codes, and their escalation wait
    # (migration 0029).
    sa.Column("whatsapp_template", _Text, nullable=True),
    sa.Column("escalate_after_ms", sa.BigInteger, nullable=False, server_default="30000"),
)

# A workspace's SMS-pumping guard (D34); no row: the defaults. A NULL limit is a rule
# turned off (its window NULL with it).
verification_guards = sa.Table(
    "um_verification_guards",
    metadata,
    sa.Column("workspace_id", _Text, _workspace_fk(), primary_key=True),
    sa.Column("prefix_limit", sa.Integer, nullable=True),
    sa.Column("prefix_window_ms", sa.BigInteger, nullable=True),
    sa.Column("prefix_digits", sa.Integer, nullable=False),
    sa.Column("address_limit", sa.Integer, nullable=True),
    sa.Column("address_window_ms", sa.BigInteger, nullable=True),
)

# Delivery figures (migration 0027, ``GET /v1/stats``). Triggers on um_messages and
# um_verifications append each write to um_stat_changes (never a shared row updated on the
# send path); ``Store.fold_stats`` counts the log into um_stats, per UTC hour (span 1) and
# UTC day (span 24). ``_sql_stats`` says what each row counts as.
# No foreign keys: a count outlives nothing, and the triggers must never fail a write.
stats = sa.Table(
    "um_stats",
    metadata,
    sa.Column("workspace_id", _Text, nullable=False),
    sa.Column("livemode", sa.Boolean, nullable=False),
    sa.Column("kind", _Text, nullable=False),
    sa.Column("span", sa.SmallInteger, nullable=False),
    sa.Column("hour", sa.BigInteger, nullable=False),
    sa.Column("provider", _Text, nullable=False),
    sa.Column("status", _Text, nullable=False),
    sa.Column("detail", sa.Integer, nullable=False),
    sa.Column("n", sa.BigInteger, nullable=False),
    # A window of one kind is one range of this key (SQLite keeps the rows in its order).
    sa.PrimaryKeyConstraint(
        "workspace_id", "livemode", "kind", "span", "hour", "provider", "status", "detail"
    ),
    sqlite_with_rowid=False,
)

# The log the triggers append to: the counted fields of a row as written (n = 1) and as it
# was before an update that changed them (n = -1); kind "message" or "verification".
stat_changes = sa.Table(
    "um_stat_changes",
    metadata,
    sa.Column("workspace_id", _Text, nullable=False),
    sa.Column("livemode", sa.Boolean, nullable=False),
    sa.Column("kind", _Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("status", _Text, nullable=False),
    sa.Column("provider", _Text, nullable=True),
    sa.Column("attempts", _Json, nullable=True),
    sa.Column("sent_at", UtcDateTime, nullable=True),
    sa.Column("final_at", UtcDateTime, nullable=True),
    sa.Column("n", sa.SmallInteger, nullable=False),
)

# Each connection's provider account (migration 0030): the last reading (balance as text,
# exact; senders as a JSON list, NULL when the provider keeps none), the operator's
# threshold, and ``low``, flipped by one conditional UPDATE per crossing.
provider_accounts = sa.Table(
    "um_provider_accounts",
    metadata,
    sa.Column("connection_id", _Text, primary_key=True),
    sa.Column("workspace_id", _Text, _workspace_fk(), nullable=False),
    sa.Column("provider", _Text, nullable=False),
    sa.Column("state", _Text, nullable=False),
    sa.Column("balance", _Text, nullable=True),
    sa.Column("unit", _Text, nullable=True),
    sa.Column("senders", _Json, nullable=True),
    sa.Column("read_at", UtcDateTime, nullable=True),
    sa.Column("tried_at", UtcDateTime, nullable=True),
    sa.Column("error", _Text, nullable=True),
    sa.Column("threshold", _Text, nullable=True),
    sa.Column("low", sa.Boolean, nullable=False),
)

#: Every table, parents before children (the order to create them, reversed to empty them).
ALL_TABLES: tuple[sa.Table, ...] = tuple(metadata.sorted_tables)
