"""Delivery figures from indexed counts, kept by the database on every write (``GET /v1/stats``).

``um_stat_changes`` is an append-only log: triggers on ``um_messages`` and
``um_verifications`` add the counted fields of each row written (``n`` = 1), and of the row
as it was before an update that changed any of them (``n`` = -1), whatever code path wrote
it. A trigger copies a few columns and computes nothing, so the send path pays one small
insert per write; and appending never waits on another transaction (no shared counter row is
updated on the send path, so PostgreSQL's concurrent writers neither queue nor deadlock on
one). ``um_stats`` holds the counts, per workspace, mode, kind, span (1: a UTC hour, 24: a
UTC day), hour and key; the store's fold (``Store.fold_stats``: the worker every minute, and
every stats read) counts the log into it, and a read counts what is still in the log, so it
is exact whatever the fold has done. The store's ``_sql_stats`` says what each row counts as
(and ``stats/_contributions.py`` the same in Python).

The messages and verifications already stored are counted here, once, straight into
``um_stats`` (with this revision's own copy of those rules). Rows deleted by hand are not
subtracted: no code deletes them.

Revision ID: 0027
Revises: 0021
Create Date: 2026-12-02
"""

# ruff: noqa: S608 (the SQL is built from this file's own constants, never from input)
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | None = None
depends_on: str | None = None

# Spelled out here, not imported: a revision must never change when the code does.
_BOUNDS_MS = (
    100, 200, 300, 500, 700,
    1_000, 1_500, 2_000, 3_000, 4_000, 5_000, 7_000,
    10_000, 15_000, 20_000, 30_000, 45_000,
    60_000, 90_000, 120_000, 180_000, 240_000, 300_000, 420_000, 600_000, 900_000,
    1_200_000, 1_800_000, 2_700_000,
    3_600_000, 5_400_000, 7_200_000, 10_800_000, 14_400_000, 21_600_000, 32_400_000,
    43_200_000, 64_800_000, 86_400_000, 129_600_000, 172_800_000,
)  # fmt: skip
_KEY = "workspace_id, livemode, kind, hour, provider, status, detail"
_PK = "workspace_id, livemode, kind, span, hour, provider, status, detail"


def _bucket(micros: str) -> str:
    whens = " ".join(f"WHEN {micros} < {b * 1000} THEN {i}" for i, b in enumerate(_BOUNDS_MS))
    return f"CASE {whens} ELSE {len(_BOUNDS_MS)} END"


def _sqlite_rows() -> str:
    """What each row ``m`` of ``um_messages`` counts as (SQLite)."""
    hour = "(CAST(strftime('%s', substr(m.created_at, 1, 19)) AS INTEGER) / 3600)"

    def seconds(column: str) -> str:
        return f"CAST(strftime('%s', substr(m.{column}, 1, 19)) AS INTEGER)"

    def fraction(column: str) -> str:
        return f"CAST(substr(m.{column}, 21, 6) AS INTEGER)"

    micros = (
        f"(({seconds('final_at')} - {seconds('sent_at')}) * 1000000"
        f" + {fraction('final_at')} - {fraction('sent_at')})"
    )
    return f"""
    SELECT m.workspace_id AS workspace_id, m.livemode AS livemode, 'status' AS kind,
        {hour} AS hour, '' AS provider, m.status AS status,
        CASE WHEN json_array_length(m.attempts) = 0 THEN 0
             WHEN json_extract(m.attempts, '$[0].provider') = m.provider THEN 1
             ELSE 2 END AS detail,
        1 AS n
    FROM um_messages AS m
    UNION ALL
    SELECT m.workspace_id, m.livemode, 'attempt', {hour},
        json_extract(a.value, '$.provider'), json_extract(a.value, '$.status'),
        (a.key < json_array_length(m.attempts) - 1)
            + 2 * (json_extract(a.value, '$.provider_message_id') IS NOT NULL),
        1
    FROM um_messages AS m, json_each(m.attempts) AS a
    UNION ALL
    SELECT m.workspace_id, m.livemode, 'latency', {hour}, m.provider, '', {_bucket(micros)}, 1
    FROM um_messages AS m
    WHERE m.status = 'delivered' AND m.sent_at IS NOT NULL AND m.final_at IS NOT NULL"""


def _postgres_rows() -> str:
    """:func:`_sqlite_rows` on PostgreSQL."""
    hour = "floor(extract(epoch FROM m.created_at) / 3600)::bigint"
    micros = "(extract(epoch FROM m.final_at - m.sent_at) * 1000000)::bigint"
    return f"""
    SELECT m.workspace_id AS workspace_id, m.livemode AS livemode, 'status'::text AS kind,
        {hour} AS hour, ''::text AS provider, m.status AS status,
        CASE WHEN json_array_length(m.attempts) = 0 THEN 0
             WHEN (m.attempts -> 0 ->> 'provider') = m.provider THEN 1
             ELSE 2 END AS detail,
        1 AS n
    FROM um_messages AS m
    UNION ALL
    SELECT m.workspace_id, m.livemode, 'attempt', {hour},
        a.value ->> 'provider', a.value ->> 'status',
        (CASE WHEN a.i < json_array_length(m.attempts) THEN 1 ELSE 0 END)
            + (CASE WHEN (a.value ->> 'provider_message_id') IS NOT NULL THEN 2 ELSE 0 END),
        1
    FROM um_messages AS m, json_array_elements(m.attempts) WITH ORDINALITY AS a(value, i)
    UNION ALL
    SELECT m.workspace_id, m.livemode, 'latency', {hour}, m.provider, '', {_bucket(micros)}, 1
    FROM um_messages AS m
    WHERE m.status = 'delivered' AND m.sent_at IS NOT NULL AND m.final_at IS NOT NULL"""


#: The fields a message's counts come from: an update that changes none logs nothing.
_MESSAGE_FIELDS = ("status", "provider", "attempts", "sent_at", "final_at", "created_at")
_LOG = (
    "INSERT INTO um_stat_changes (workspace_id, livemode, kind, created_at, status, provider, "
    "attempts, sent_at, final_at, n) VALUES "
)


def _message_log(r: str, n: int) -> str:
    return (
        f"({r}.workspace_id, {r}.livemode, 'message', {r}.created_at, {r}.status, "
        f"{r}.provider, {r}.attempts, {r}.sent_at, {r}.final_at, {n})"
    )


def _verification_log(r: str, n: int) -> str:
    return (
        f"({r}.workspace_id, {r}.livemode, 'verification', {r}.created_at, {r}.status, "
        f"NULL, NULL, NULL, NULL, {n})"
    )


def _sqlite_triggers() -> list[str]:
    changed = " OR ".join(f"OLD.{f} IS NOT NEW.{f}" for f in _MESSAGE_FIELDS)
    return [
        "CREATE TRIGGER um_stats_message_insert AFTER INSERT ON um_messages "
        f"BEGIN {_LOG}{_message_log('NEW', 1)}; END",
        f"CREATE TRIGGER um_stats_message_update AFTER UPDATE ON um_messages WHEN {changed} "
        f"BEGIN {_LOG}{_message_log('OLD', -1)}, {_message_log('NEW', 1)}; END",
        "CREATE TRIGGER um_stats_verification_insert AFTER INSERT ON um_verifications "
        f"BEGIN {_LOG}{_verification_log('NEW', 1)}; END",
        "CREATE TRIGGER um_stats_verification_update AFTER UPDATE ON um_verifications "
        "WHEN OLD.status IS NOT NEW.status "
        f"BEGIN {_LOG}{_verification_log('OLD', -1)}, {_verification_log('NEW', 1)}; END",
    ]


def _postgres_function(name: str, log: str) -> str:
    values = _message_log if log == "message" else _verification_log
    old, new = values("OLD", -1), values("NEW", 1)
    return f"""CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_LOG}{new};
    ELSE
        {_LOG}{old}, {new};
    END IF;
    RETURN NULL;
END
$$"""


def _postgres_triggers() -> list[str]:
    # json has no equality: the attempts are compared as their text.
    changed = " OR ".join(
        f"OLD.{f}::text IS DISTINCT FROM NEW.{f}::text"
        if f == "attempts"
        else f"OLD.{f} IS DISTINCT FROM NEW.{f}"
        for f in _MESSAGE_FIELDS
    )
    return [
        _postgres_function("um_stats_message_change", "message"),
        _postgres_function("um_stats_verification_change", "verification"),
        "CREATE TRIGGER um_stats_message_insert AFTER INSERT ON um_messages "
        "FOR EACH ROW EXECUTE FUNCTION um_stats_message_change()",
        f"CREATE TRIGGER um_stats_message_update AFTER UPDATE ON um_messages "
        f"FOR EACH ROW WHEN ({changed}) EXECUTE FUNCTION um_stats_message_change()",
        "CREATE TRIGGER um_stats_verification_insert AFTER INSERT ON um_verifications "
        "FOR EACH ROW EXECUTE FUNCTION um_stats_verification_change()",
        "CREATE TRIGGER um_stats_verification_update AFTER UPDATE ON um_verifications "
        "FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) "
        "EXECUTE FUNCTION um_stats_verification_change()",
    ]


def _backfill(dialect: str) -> str:
    """Count the rows already stored, once, as hour rows and UTC day rows."""
    counted = _sqlite_rows() if dialect == "sqlite" else _postgres_rows()
    hour = (
        "(CAST(strftime('%s', substr(v.created_at, 1, 19)) AS INTEGER) / 3600)"
        if dialect == "sqlite"
        else "floor(extract(epoch FROM v.created_at) / 3600)::bigint"
    )
    counted += (
        f" UNION ALL SELECT v.workspace_id, v.livemode, 'verification', {hour}, '', v.status, "
        "0, 1 FROM um_verifications AS v"
    )
    day = "(hour / 24) * 24"
    return (
        f"WITH c AS ({counted}) INSERT INTO um_stats ({_PK}, n) "
        f"SELECT workspace_id, livemode, kind, 1, hour, provider, status, detail, sum(n) "
        f"FROM c GROUP BY {_KEY} "
        f"UNION ALL SELECT workspace_id, livemode, kind, 24, {day}, provider, status, detail, "
        f"sum(n) FROM c GROUP BY {_KEY.replace('hour', day)}"
    )


def upgrade() -> None:
    key = ("workspace_id", "livemode", "kind", "span", "hour", "provider", "status", "detail")
    op.create_table(
        "um_stats",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("span", sa.SmallInteger(), nullable=False),
        sa.Column("hour", sa.BigInteger(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("detail", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(*key, name="pk_um_stats"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "um_stat_changes",
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=True),
        sa.Column("attempts", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("final_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("n", sa.SmallInteger(), nullable=False),
    )
    dialect = op.get_bind().dialect.name
    for statement in _sqlite_triggers() if dialect == "sqlite" else _postgres_triggers():
        op.execute(statement)
    op.execute(_backfill(dialect))


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    for name, table in (
        ("um_stats_message_insert", "um_messages"),
        ("um_stats_message_update", "um_messages"),
        ("um_stats_verification_insert", "um_verifications"),
        ("um_stats_verification_update", "um_verifications"),
    ):
        on = "" if dialect == "sqlite" else f" ON {table}"
        op.execute(f"DROP TRIGGER IF EXISTS {name}{on}")
    if dialect == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS um_stats_message_change()")
        op.execute("DROP FUNCTION IF EXISTS um_stats_verification_change()")
    op.drop_table("um_stat_changes")
    op.drop_table("um_stats")
