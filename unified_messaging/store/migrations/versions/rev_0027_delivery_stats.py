"""Delivery figures from indexed counts, kept by the database on every write (``GET /v1/stats``).

``um_stat_changes`` is an append-only log of count changes: triggers on ``um_messages`` and
``um_verifications`` add one row per thing a write changes (``+1`` for what the row counts
as now, ``-1`` for what it counted as before), whatever code path wrote it. Appending never
waits on another transaction (no shared counter row is updated on the send path, so
PostgreSQL's concurrent writers neither queue nor deadlock on one). ``um_stats`` holds the
folded counts, per workspace, mode, kind, span (1: a UTC hour, 24: a UTC day), hour and key;
``Store.fold_stats`` moves the log into it (the worker every minute, and every stats read),
and a read adds what is still in the log, so it is exact whatever the fold has done.

What a message counts as (``stats/_contributions.py`` computes the same in Python, for the
memory store; a test holds the two together):

- ``status``: its status, ``detail`` 0 when no provider was tried, 1 one provider, 2 when it
  went on to another provider than its first (a fallback);
- ``attempt``: each attempt by provider and attempt status, ``detail`` bit 1 when another
  attempt followed it, bit 2 when the provider took it (it answered with its message id);
- ``latency``: a delivered message's ``final_at - sent_at`` bucket (``detail``, the bounds
  of ``stats/_buckets.LATENCY_BOUNDS_MS``) under the provider that delivered it;
- a verification: ``verification`` by status.

Every row counts under the UTC hour of the message's (verification's) ``created_at``. Rows
deleted by hand are not subtracted (no code deletes them). Existing rows are counted once,
here.

Revision ID: 0027
Revises: 0021
Create Date: 2026-12-02
"""

# ruff: noqa: S608 (the SQL is built from this file's own constants, never from input)
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0021"
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
_COLUMNS = f"{_KEY}, n"
_PK = "workspace_id, livemode, kind, span, hour, provider, status, detail"
#: The changes as hour rows (span 1) and UTC day rows (span 24), in ``_PK`` order.
_FOLD_SPANS = (
    "SELECT workspace_id, livemode, kind, 1, hour, provider, status, detail, sum(n) "
    "FROM um_stat_changes GROUP BY workspace_id, livemode, kind, hour, provider, status, detail "
    "UNION ALL "
    "SELECT workspace_id, livemode, kind, 24, (hour / 24) * 24, provider, status, detail, sum(n) "
    "FROM um_stat_changes "
    "GROUP BY workspace_id, livemode, kind, (hour / 24) * 24, provider, status, detail"
)


def _bucket(micros: str) -> str:
    whens = " ".join(f"WHEN {micros} < {b * 1000} THEN {i}" for i, b in enumerate(_BOUNDS_MS))
    return f"CASE {whens} ELSE {len(_BOUNDS_MS)} END"


def _sqlite_rows(r: str, sign: int, table: str = "") -> str:
    """What the message row ``r`` counts as, each with ``sign`` (SQLite). ``table``: read
    every row of ``um_messages AS r`` (the backfill) instead of one trigger row."""
    hour = f"(CAST(strftime('%s', substr({r}.created_at, 1, 19)) AS INTEGER) / 3600)"

    def seconds(column: str) -> str:
        return f"CAST(strftime('%s', substr({r}.{column}, 1, 19)) AS INTEGER)"

    def fraction(column: str) -> str:
        return f"CAST(substr({r}.{column}, 21, 6) AS INTEGER)"

    micros = (
        f"(({seconds('final_at')} - {seconds('sent_at')}) * 1000000"
        f" + {fraction('final_at')} - {fraction('sent_at')})"
    )
    source = f" FROM {table}" if table else ""
    joined = f" FROM {table}, json_each({r}.attempts) AS a" if table else (
        f" FROM json_each({r}.attempts) AS a"
    )  # fmt: skip
    return f"""
    SELECT {r}.workspace_id AS workspace_id, {r}.livemode AS livemode, 'status' AS kind,
        {hour} AS hour, '' AS provider, {r}.status AS status,
        CASE WHEN json_array_length({r}.attempts) = 0 THEN 0
             WHEN json_extract({r}.attempts, '$[0].provider') = {r}.provider THEN 1
             ELSE 2 END AS detail,
        {sign} AS n{source}
    UNION ALL
    SELECT {r}.workspace_id, {r}.livemode, 'attempt', {hour},
        json_extract(a.value, '$.provider'), json_extract(a.value, '$.status'),
        (a.key < json_array_length({r}.attempts) - 1)
            + 2 * (json_extract(a.value, '$.provider_message_id') IS NOT NULL),
        {sign}{joined}
    UNION ALL
    SELECT {r}.workspace_id, {r}.livemode, 'latency', {hour}, {r}.provider, '',
        {_bucket(micros)}, {sign}{source}
    WHERE {r}.status = 'delivered' AND {r}.sent_at IS NOT NULL AND {r}.final_at IS NOT NULL"""


def _postgres_rows(r: str, sign: int, table: str = "") -> str:
    """:func:`_sqlite_rows` on PostgreSQL."""
    hour = f"floor(extract(epoch FROM {r}.created_at) / 3600)::bigint"
    micros = f"(extract(epoch FROM {r}.final_at - {r}.sent_at) * 1000000)::bigint"
    source = f" FROM {table}" if table else ""
    joined = f" FROM {table}, " if table else " FROM "
    return f"""
    SELECT {r}.workspace_id AS workspace_id, {r}.livemode AS livemode, 'status'::text AS kind,
        {hour} AS hour, ''::text AS provider, {r}.status AS status,
        CASE WHEN json_array_length({r}.attempts) = 0 THEN 0
             WHEN ({r}.attempts -> 0 ->> 'provider') = {r}.provider THEN 1
             ELSE 2 END AS detail,
        {sign} AS n{source}
    UNION ALL
    SELECT {r}.workspace_id, {r}.livemode, 'attempt', {hour},
        a.value ->> 'provider', a.value ->> 'status',
        (CASE WHEN a.i < json_array_length({r}.attempts) THEN 1 ELSE 0 END)
            + (CASE WHEN (a.value ->> 'provider_message_id') IS NOT NULL THEN 2 ELSE 0 END),
        {sign}{joined}json_array_elements({r}.attempts) WITH ORDINALITY AS a(value, i)
    UNION ALL
    SELECT {r}.workspace_id, {r}.livemode, 'latency', {hour}, {r}.provider, '',
        {_bucket(micros)}, {sign}{source}
    WHERE {r}.status = 'delivered' AND {r}.sent_at IS NOT NULL AND {r}.final_at IS NOT NULL"""


def _netted(old: str, new: str) -> str:
    """The old row's counts taken back and the new one's added, as one row per key that
    changed (a status change of a message with one attempt: a few rows, not a dozen)."""
    return (
        f"SELECT {_KEY}, sum(n) FROM ({old} UNION ALL {new}) AS c "
        f"GROUP BY {_KEY} HAVING sum(n) <> 0"
    )


_MESSAGE_CHANGED = (
    "OLD.status {ne} NEW.status OR OLD.provider {ne} NEW.provider"
    " OR OLD.attempts{text} {ne} NEW.attempts{text} OR OLD.sent_at {ne} NEW.sent_at"
    " OR OLD.final_at {ne} NEW.final_at OR OLD.created_at {ne} NEW.created_at"
)


def _verification_hour(r: str, dialect: str) -> str:
    if dialect == "sqlite":
        return f"(CAST(strftime('%s', substr({r}.created_at, 1, 19)) AS INTEGER) / 3600)"
    return f"floor(extract(epoch FROM {r}.created_at) / 3600)::bigint"


def _verification_row(r: str, sign: int, dialect: str) -> str:
    hour = _verification_hour(r, dialect)
    return (
        f"SELECT {r}.workspace_id AS workspace_id, {r}.livemode AS livemode, "
        f"'verification' AS kind, {hour} AS hour, '' AS provider, {r}.status AS status, "
        f"0 AS detail, {sign} AS n"
    )


def _sqlite_triggers() -> list[str]:
    insert = f"INSERT INTO um_stat_changes ({_COLUMNS})"
    changed = _MESSAGE_CHANGED.format(ne="IS NOT", text="")
    old, new = _sqlite_rows("OLD", -1), _sqlite_rows("NEW", 1)
    v_old, v_new = _verification_row("OLD", -1, "sqlite"), _verification_row("NEW", 1, "sqlite")
    return [
        f"CREATE TRIGGER um_stats_message_insert AFTER INSERT ON um_messages "
        f"BEGIN {insert} {new}; END",
        f"CREATE TRIGGER um_stats_message_update AFTER UPDATE ON um_messages "
        f"WHEN {changed} BEGIN {insert} {_netted(old, new)}; END",
        f"CREATE TRIGGER um_stats_verification_insert AFTER INSERT ON um_verifications "
        f"BEGIN {insert} {v_new}; END",
        f"CREATE TRIGGER um_stats_verification_update AFTER UPDATE ON um_verifications "
        f"WHEN OLD.status IS NOT NEW.status BEGIN {insert} {v_old} UNION ALL {v_new}; END",
    ]


def _postgres_triggers() -> list[str]:
    insert = f"INSERT INTO um_stat_changes ({_COLUMNS})"
    changed = _MESSAGE_CHANGED.format(ne="IS DISTINCT FROM", text="::text")
    old, new = _postgres_rows("OLD", -1), _postgres_rows("NEW", 1)
    v_old = _verification_row("OLD", -1, "postgresql")
    v_new = _verification_row("NEW", 1, "postgresql")
    return [
        f"""CREATE OR REPLACE FUNCTION um_stats_message_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {insert} {new};
    ELSE
        {insert} {_netted(old, new)};
    END IF;
    RETURN NULL;
END
$$""",
        f"""CREATE OR REPLACE FUNCTION um_stats_verification_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {insert} {v_new};
    ELSE
        {insert} {v_old} UNION ALL {v_new};
    END IF;
    RETURN NULL;
END
$$""",
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


def _backfill(dialect: str) -> list[str]:
    """Count the rows already stored, once, then fold them (the store's fold statements)."""
    rows = _sqlite_rows if dialect == "sqlite" else _postgres_rows
    hour = _verification_hour("v", dialect)
    messages = rows("m", 1, "um_messages AS m")
    verifications = (
        f"SELECT v.workspace_id, v.livemode, 'verification', {hour}, '', v.status, 0, 1 "
        "FROM um_verifications AS v"
    )
    counted = (
        f"INSERT INTO um_stat_changes ({_COLUMNS}) SELECT {_KEY}, sum(n) FROM "
        f"({messages} UNION ALL {verifications}) AS c GROUP BY {_KEY}"
    )
    folded = f"INSERT INTO um_stats ({_PK}, n) SELECT * FROM ({_FOLD_SPANS}) AS s WHERE true"
    return [counted, folded, "DELETE FROM um_stat_changes"]


def _counts() -> list[sa.Column[object]]:
    return [
        sa.Column("hour", sa.BigInteger(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("detail", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
    ]


def _owner() -> list[sa.Column[object]]:
    return [
        sa.Column("workspace_id", sa.Text(), nullable=False),
        sa.Column("livemode", sa.Boolean(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
    ]


def upgrade() -> None:
    key = ("workspace_id", "livemode", "kind", "span", "hour", "provider", "status", "detail")
    op.create_table(
        "um_stats",
        *_owner(),
        sa.Column("span", sa.SmallInteger(), nullable=False),
        *_counts(),
        sa.PrimaryKeyConstraint(*key, name="pk_um_stats"),
        sqlite_with_rowid=False,
    )
    op.create_table("um_stat_changes", *_owner(), *_counts())
    dialect = op.get_bind().dialect.name
    for statement in _sqlite_triggers() if dialect == "sqlite" else _postgres_triggers():
        op.execute(statement)
    for statement in _backfill(dialect):
        op.execute(statement)


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
