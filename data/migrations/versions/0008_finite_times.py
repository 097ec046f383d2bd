"""finite times: the infinities asyncpg wrote for year 1 and 9999 made exact, then refused

Before data/times.py, asyncpg wrote 0001-01-01T00:00:00Z (Go's zero time) as -infinity and
9999-12-31T23:59:59.999999Z as infinity, which no answer could serialise: every comparison
where such a session was a candidate failed. Those rows get the instants they were imported
as, and every stored time is held to the range the import allows (data/times.py).

Revision ID: 0008
Revises: 0007
"""

from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'

EARLIEST = "'0001-01-01 00:00:00+00'::timestamptz"
LATEST = "'9999-12-31 23:59:59.999999+00'::timestamptz"
TIMES = {
    'runtime_sessions': ('started_at', 'last_activity_at'),
    'runtime_session_activity': ('occurred_at',),
    'session_chunks': ('occurred_at', 'embedded_at'),
}


def _finite(column: str) -> str:
    return (
        f"{column} = CASE WHEN {column} = '-infinity' THEN {EARLIEST} "
        f"WHEN {column} = 'infinity' THEN {LATEST} ELSE {column} END"
    )


def upgrade() -> None:
    for table, columns in TIMES.items():
        infinite = ' OR '.join(f'NOT isfinite({c})' for c in columns)
        op.execute(f"UPDATE {table} SET {', '.join(_finite(c) for c in columns)} WHERE {infinite}")
        for column in columns:
            op.execute(
                f'ALTER TABLE {table} ADD CONSTRAINT {table}_{column}_in_range_check '
                f'CHECK ({column} BETWEEN {EARLIEST} AND {LATEST})'
            )


def downgrade() -> None:
    for table, columns in TIMES.items():
        for column in columns:
            op.execute(f'ALTER TABLE {table} DROP CONSTRAINT {table}_{column}_in_range_check')
