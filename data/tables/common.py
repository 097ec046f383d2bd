"""What every table shares: the metadata and its naming convention, the time type, the
values a state column may hold, and the checks several tables write."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "pk": "%(table_name)s_pkey",
        "fk": "%(table_name)s_%(column_0_name)s_fkey",
        "uq": "%(table_name)s_%(column_0_name)s_key",
        "ck": "%(table_name)s_%(constraint_name)s_check",
        "ix": "%(table_name)s_%(column_0_name)s_idx",
    }
)

TZ = sa.DateTime(timezone=True)

SOURCE_KINDS = (
    "gateway_interaction",
    "transcript_message",
    "tool_call",
    "browser_step",
    "operator_note",
    "session_summary",
    "flow_log",
    "artifact",
)
REDACTION_STATES = ("clear", "redacted", "metadata_only", "withheld")
EMBEDDING_STATES = ("pending", "skipped", "in_progress", "embedded", "failed")
EMBEDDING_SCOPES = ("summaries_only", "full")


def one_of(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def time_in_range(column: str) -> sa.CheckConstraint:
    """Every stored time is an instant Python holds too (data/times.py, migration 0008)."""
    return sa.CheckConstraint(
        f"{column} BETWEEN '0001-01-01 00:00:00+00'::timestamptz "
        "AND '9999-12-31 23:59:59.999999+00'::timestamptz",
        name=f"{column}_in_range",
    )
