"""The runtime sessions, their activity and their API usage."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import UUID

from data.tables.common import TZ, metadata, time_in_range

runtime_sessions = sa.Table(
    "runtime_sessions",
    metadata,
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), primary_key=True
    ),
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("source_type", sa.Text, nullable=False),
    sa.Column("source_id", sa.Text, nullable=False),
    sa.Column("reference", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("started_at", TZ, nullable=False),
    sa.Column("last_activity_at", TZ, nullable=False),
    time_in_range("started_at"),
    time_in_range("last_activity_at"),
    sa.Index(
        "runtime_sessions_recent_idx", "account_id", sa.text("started_at DESC"), sa.text("id DESC")
    ),
    # the live sessions still running, for the idle sweep (migration 0017)
    sa.Index(
        "runtime_sessions_running_idx",
        "last_activity_at",
        postgresql_where=sa.text("status = 'running'"),
    ),
)

runtime_session_activity = sa.Table(
    "runtime_session_activity",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("runtime_session_id", UUID(as_uuid=True), nullable=False),
    sa.Column("ordinal", sa.Integer, nullable=False),
    sa.Column("occurred_at", TZ, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("api_usage_id", UUID(as_uuid=True)),
    sa.ForeignKeyConstraint(
        ["account_id", "runtime_session_id"],
        ["runtime_sessions.account_id", "runtime_sessions.id"],
        name="runtime_session_activity_session_fkey",
    ),
    time_in_range("occurred_at"),
    sa.Index("runtime_session_activity_session_idx", "account_id", "runtime_session_id", "ordinal"),
)

api_usage = sa.Table(
    "api_usage",
    metadata,
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), primary_key=True
    ),
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("runtime_session_id", UUID(as_uuid=True)),
    sa.Column("provider", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("units", sa.Integer, nullable=False, server_default="0"),
    sa.Column("cost_usd", sa.Numeric(18, 10), nullable=False, server_default="0"),
    sa.Column("occurred_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.CheckConstraint("kind IN ('gateway', 'embedding')", name="kind"),
    sa.Index("api_usage_spend_idx", "account_id", "kind", "occurred_at"),
)
