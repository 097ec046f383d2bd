"""What the live receiver stored: its spans, the requests not yet made into sessions, and the
sessions changed since they were last chunked."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import UUID

from data.tables.common import TZ, metadata

# The spans the live receiver stored (POST /v1/traces, transfer/live.py), one row per span:
# the same span sent again (an exporter's retry) is the same key, stored once. A session's
# turns are made again from its spans as they arrive (migration 0017).
otlp_spans = sa.Table(
    "otlp_spans",
    metadata,
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), primary_key=True
    ),
    sa.Column("trace_id", sa.Text, primary_key=True),
    sa.Column("span_id", sa.Text, primary_key=True),
    sa.Column("parent_span_id", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("operation", sa.Text, nullable=False),
    sa.Column("start_ns", sa.Numeric(24, 0), nullable=False),  # past int64: JSON's times
    sa.Column("end_ns", sa.Numeric(24, 0), nullable=False),
    sa.Column("failed", sa.Boolean, nullable=False),
    sa.Column("service", sa.Text, nullable=False),
    # the conversation the span names itself (NULL: none; it goes where its trace goes)
    sa.Column("conversation", sa.Text),
    # the conversation it belongs to (its own, its trace's, or the trace id) and its session
    sa.Column("session_key", sa.Text, nullable=False),
    sa.Column("runtime_session_id", UUID(as_uuid=True), nullable=False),
    # its GenAI turns, as JSON (transfer/live.py); NULL: none
    sa.Column("turns", sa.LargeBinary),
    sa.Column("received_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Index("otlp_spans_session_idx", "account_id", "runtime_session_id"),
)

# The export requests the live receiver acknowledged and the indexer has not yet made into
# sessions, each as it was sent (migration 0018): the receiver answers 200 once its request
# is here, and the indexer makes sessions of it and deletes it in one transaction.
otlp_batches = sa.Table(
    "otlp_batches",
    metadata,
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), nullable=False
    ),
    sa.Column("encoding", sa.Text, nullable=False),  # application/x-protobuf or application/json
    sa.Column("gzipped", sa.Boolean, nullable=False),
    sa.Column("body", sa.LargeBinary, nullable=False),
    sa.Column("received_at", TZ, nullable=False, server_default=sa.func.now()),
    # why the indexer could not make sessions of it (NULL: it has not failed); kept, not lost
    sa.Column("failure", sa.Text),
    sa.Index("otlp_batches_account_idx", "account_id", "id"),
)

# Sessions whose turns changed since they were last chunked, from which turn on (written by
# the live receiver; the indexer chunks from the last passage before it, then deletes it).
session_changes = sa.Table(
    "session_changes",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("runtime_session_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("from_ordinal", sa.Integer, nullable=False),
    sa.Column("changed_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.ForeignKeyConstraint(
        ["account_id", "runtime_session_id"],
        ["runtime_sessions.account_id", "runtime_sessions.id"],
        name="session_changes_session_fkey",
    ),
)
