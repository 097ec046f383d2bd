"""The tables. Every table carries account_id, first in every key (the shard key)."""

from __future__ import annotations

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID

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


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def _time_in_range(column: str) -> sa.CheckConstraint:
    """Every stored time is an instant Python holds too (data/times.py, migration 0008)."""
    return sa.CheckConstraint(
        f"{column} BETWEEN '0001-01-01 00:00:00+00'::timestamptz "
        "AND '9999-12-31 23:59:59.999999+00'::timestamptz",
        name=f"{column}_in_range",
    )


accounts = sa.Table(
    "accounts",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
)

# LookupAnswer up by hash before the account is known; under Citus a reference table.
api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), primary_key=True
    ),
    sa.Column("key_hash", sa.LargeBinary, primary_key=True),
    sa.Column("scopes", ARRAY(sa.Text), nullable=False),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("revoked_at", TZ),
    sa.Index("api_keys_key_hash_idx", "key_hash", unique=True),  # a key names one account
)

account_features = sa.Table(
    "account_features",
    metadata,
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), primary_key=True
    ),
    sa.Column("feature", sa.Text, primary_key=True),
)

embedding_settings = sa.Table(
    "embedding_settings",
    metadata,
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), primary_key=True
    ),
    sa.Column("enabled", sa.Boolean, nullable=False),
    sa.Column("provider", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("dimensions", sa.Integer, nullable=False),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("daily_cap_usd", sa.Numeric(12, 4)),
    sa.Column(
        "model_identity",
        sa.Text,
        sa.Computed("provider || ':' || model || '@' || dimensions::text", persisted=True),
    ),
    # The account's dense model beside its configured one (migration 0009): all three or none.
    sa.Column("dense_provider", sa.Text),
    sa.Column("dense_model", sa.Text),
    sa.Column("dense_dimensions", sa.Integer),
    sa.Column(
        "dense_identity",
        sa.Text,
        sa.Computed(
            "dense_provider || ':' || dense_model || '@' || dense_dimensions::text", persisted=True
        ),
    ),
    sa.Column("degraded_reason", sa.Text),
    sa.Column("degraded_until", TZ),
    sa.Column("updated_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.CheckConstraint(_in("scope", EMBEDDING_SCOPES), name="scope"),
    sa.CheckConstraint("dimensions BETWEEN 1 AND 16000", name="dimensions"),
)

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
    _time_in_range("started_at"),
    _time_in_range("last_activity_at"),
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
    _time_in_range("occurred_at"),
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

# The session search documents ("chunks"). embedding holds vectors of several
# dimensions; each model identity gets its own partial HNSW index on the column cast
# to its width (data/model_indexes.py), created when the model first appears. The vector
# is stored MAIN (migration 0007): in the row, where exact scans read it, with the content
# moved out of line first when a row passes the TOAST threshold.
session_chunks = sa.Table(
    "session_chunks",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("runtime_session_id", UUID(as_uuid=True), nullable=False),
    sa.Column("source_kind", sa.Text, nullable=False),
    sa.Column("source_id", UUID(as_uuid=True)),
    sa.Column("chunk_index", sa.Integer, nullable=False),
    sa.Column("occurred_at", TZ, nullable=False),
    sa.Column("role", sa.Text),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("content_hash", sa.LargeBinary),
    sa.Column("redaction_state", sa.Text, nullable=False, server_default="clear"),
    sa.Column("embedding_state", sa.Text, nullable=False, server_default="pending"),
    sa.Column("embedding", Vector()),
    sa.Column("embedding_model", sa.Text),
    sa.Column("embedded_at", TZ),
    # Batches the provider failed in a row, and the last error (no text, no key): `failed`
    # after SIMILAR_SESSIONS_EMBED_MAX_ATTEMPTS.
    sa.Column("embed_attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("embed_error", sa.Text),
    # False for a row written while its account has (or, in the same transaction, gets) its
    # own index of the row's model: the model's shared index leaves it out (migration 0010).
    sa.Column("in_shared_index", sa.Boolean, nullable=False, server_default=sa.true()),
    # The row's place in the order rows were written (migration 0012; NULL: written before
    # it): an own index holds its account's rows up to its watermark, the later ones are its
    # tail (data/account_indexes.py).
    sa.Column(
        "written_seq",
        sa.BigInteger,
        server_default=sa.text("nextval('session_chunks_written_seq')"),
    ),
    # The session's chunk whose vector this one repeats (the first written of it, for the same
    # model; data/repeats.py, migration 0016): left out of every HNSW index, added back by the
    # lookups at its representative's distance. NULL: none, or not marked yet.
    sa.Column("repeat_of", UUID(as_uuid=True)),
    # On a representative, when its latest repeat occurred (a lookup within `windowDays` keeps
    # it while one of them is within).
    sa.Column("repeats_until", TZ),
    # The words of the content, stemmed, and the character pairs of its unspaced scripts
    # (migrations 0009, 0013): what a search's lexical leg ranks. Made from the content with
    # its credentials left out (values/credentials.without), written with it by the indexer
    # and the import (migration 0021), so a guessed secret finds no passage.
    sa.Column("search_terms", TSVECTOR),
    # The vector of the account's dense model beside its configured one (a search's dense
    # leg), with its own state, attempts and error; the same passage, another model's space.
    sa.Column("dense_embedding", Vector()),
    sa.Column("dense_model", sa.Text),
    sa.Column("dense_state", sa.Text, nullable=False, server_default="pending"),
    sa.Column("dense_embedded_at", TZ),
    sa.Column("dense_attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("dense_error", sa.Text),
    sa.ForeignKeyConstraint(
        ["account_id", "runtime_session_id"],
        ["runtime_sessions.account_id", "runtime_sessions.id"],
        name="session_chunks_session_fkey",
    ),
    sa.CheckConstraint(_in("source_kind", SOURCE_KINDS), name="source_kind"),
    _time_in_range("occurred_at"),
    _time_in_range("embedded_at"),
    sa.CheckConstraint(_in("redaction_state", REDACTION_STATES), name="redaction_state"),
    sa.CheckConstraint(_in("embedding_state", EMBEDDING_STATES), name="embedding_state"),
    sa.CheckConstraint(
        "embedding_state <> 'embedded' OR (embedding IS NOT NULL AND embedding_model IS NOT NULL)",
        name="embedded_has_vector",
    ),
    sa.CheckConstraint(_in("dense_state", EMBEDDING_STATES), name="dense_state"),
    sa.CheckConstraint(
        "dense_state <> 'embedded' OR (dense_embedding IS NOT NULL AND dense_model IS NOT NULL)",
        name="dense_has_vector",
    ),
    _time_in_range("dense_embedded_at"),
    sa.Index(
        "session_chunks_session_idx",
        "account_id",
        "runtime_session_id",
        "occurred_at",
        "chunk_index",
    ),
    sa.Index(
        "session_chunks_comparable_idx",
        "account_id",
        "embedding_model",
        "runtime_session_id",
        postgresql_where=sa.text("redaction_state = 'clear' AND embedding_state = 'embedded'"),
    ),
    sa.Index("session_chunks_content_hash_idx", "account_id", "content_hash"),
    sa.Index(
        "session_chunks_search_terms_idx", "account_id", "search_terms", postgresql_using="gin"
    ),
    sa.Index(
        "session_chunks_written_idx",
        "account_id",
        "written_seq",
        postgresql_where=sa.text("written_seq IS NOT NULL"),
    ),
    sa.Index(
        "session_chunks_repeats_idx",
        "account_id",
        "repeat_of",
        "id",
        postgresql_where=sa.text("repeat_of IS NOT NULL"),
    ),
    sa.Index(
        "session_chunks_dense_work_idx",
        "account_id",
        "dense_state",
        postgresql_where=sa.text("dense_state IN ('pending', 'in_progress')"),
    ),
    sa.Index(
        "session_chunks_work_idx",
        "account_id",
        "embedding_state",
        postgresql_where=sa.text("embedding_state IN ('pending', 'in_progress')"),
    ),
    sa.Index(
        "session_chunks_unclear_idx",
        "account_id",
        postgresql_where=sa.text("redaction_state <> 'clear'"),
    ),
)

# The dense model's windows of a passage it read in more than one (migration 0014): a search
# scores the passage by its best window.
session_chunk_windows = sa.Table(
    "session_chunk_windows",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("chunk_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("window_index", sa.Integer, primary_key=True),
    sa.Column("embedding", Vector(), nullable=False),
    sa.ForeignKeyConstraint(
        ["account_id", "chunk_id"],
        ["session_chunks.account_id", "session_chunks.id"],
        ondelete="CASCADE",
    ),
)

# One row per model identity in use, with the name of its partial HNSW index.
embedding_models = sa.Table(
    "embedding_models",
    metadata,
    sa.Column("model_identity", sa.Text, primary_key=True),
    sa.Column("dimensions", sa.Integer, nullable=False),
    sa.Column("index_name", sa.Text, nullable=False, unique=True),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    # the index's kind (data/model_indexes.IndexKind; migration 0015)
    sa.Column("index_kind", sa.Text, nullable=False, server_default="vector"),
    sa.CheckConstraint("index_kind IN ('vector', 'halfvec')", name="embedding_models_index_kind"),
)

# What the indexer last chunked of each session: re-chunked when the activity or the
# chunking policy (which includes the embedder it sized windows for) changes.
session_chunking = sa.Table(
    "session_chunking",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("runtime_session_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("policy", sa.Text, nullable=False),
    sa.Column("activity_count", sa.Integer, nullable=False),
    sa.Column("last_ordinal", sa.Integer),
    sa.Column("chunk_count", sa.Integer, nullable=False),
    sa.Column("chunked_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.ForeignKeyConstraint(
        ["account_id", "runtime_session_id"],
        ["runtime_sessions.account_id", "runtime_sessions.id"],
        name="session_chunking_session_fkey",
    ),
)

# One row per (large account, model identity) with its own partial HNSW index
# (data/account_indexes.py). Keyed by account first, like every table (the shard key).
account_model_indexes = sa.Table(
    "account_model_indexes",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("model_identity", sa.Text, primary_key=True),
    sa.Column("index_name", sa.Text, nullable=False),
    sa.Column("chunks_at_build", sa.Integer, nullable=False),
    sa.Column("built_at", TZ, nullable=False, server_default=sa.func.now()),
    # the hnsw.ef_search fitted on the index (data/ef_fits.py; NULL: the configured one) and
    # what its fit measured
    sa.Column("ef_search", sa.Integer, nullable=True),
    sa.Column("ef_fit", JSONB, nullable=True),
    # the index holds the account's rows with written_seq up to this (NULL: built before
    # migration 0012, it holds every row); the later ones are its tail, looked up exactly
    sa.Column("watermark", sa.BigInteger, nullable=True),
    # the index's kind (data/model_indexes.IndexKind; migration 0015)
    sa.Column("index_kind", sa.Text, nullable=False, server_default="vector"),
    # how long its last build took (NULL: built before migration 0022): its tail rests
    # MERGE_REST times as long before the next merge (data/own_index_rebuilds.py)
    sa.Column("build_seconds", sa.Float, nullable=True),
    sa.CheckConstraint("ef_search BETWEEN 10 AND 1000", name="ef_search"),
    sa.CheckConstraint(
        "index_kind IN ('vector', 'halfvec')", name="account_model_indexes_index_kind"
    ),
)

# Secrets of the whole deployment, shared by all its processes, generated on first use
# (data/secrets.py): "cursor" signs paging cursors. Not per account: no account_id.
deployment_secrets = sa.Table(
    "deployment_secrets",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("secret", sa.LargeBinary, nullable=False),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.CheckConstraint("octet_length(secret) >= 32", name="secret_length"),
)

# The lexical embedder's fit of each account (indexer/lexical.py): document frequencies
# over its sessions, named by the model identity the fit gives the account's vectors.
lexical_fits = sa.Table(
    "lexical_fits",
    metadata,
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), primary_key=True
    ),
    sa.Column("model_identity", sa.Text, nullable=False),
    sa.Column("sessions", sa.Integer, nullable=False),
    sa.Column("weights", sa.LargeBinary, nullable=False),
    sa.Column("fitted_at", TZ, nullable=False, server_default=sa.func.now()),
)

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

ALERT_KINDS = ("new", "surge")
DELIVERY_STATES = ("pending", "delivered", "failed", "dropped")

# An account's alert rules (migration 0019, docs/alerts.md): what makes a failure-mode group
# worth telling, the failureModes filters it is asked with, and where it is told. The signing
# secret is read back by the deliveries alone; `disabled_reason` says why a rule stopped.
alert_rules = sa.Table(
    "alert_rules",
    metadata,
    sa.Column(
        "account_id", UUID(as_uuid=True), sa.ForeignKey("accounts.account_id"), primary_key=True
    ),
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("secret", sa.Text, nullable=False),
    sa.Column("min_sessions", sa.Integer, nullable=False),
    sa.Column("window_hours", sa.Integer, nullable=False),
    sa.Column("factor", sa.Float, nullable=False),
    sa.Column("baseline_days", sa.Integer, nullable=False),
    sa.Column("statuses", ARRAY(sa.Text)),  # NULL: every status
    sa.Column("source_types", ARRAY(sa.Text)),  # NULL: every source type
    sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("disabled_reason", sa.Text),
    sa.Column("failures", sa.Integer, nullable=False, server_default="0"),  # consecutive
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.CheckConstraint(_in("kind", ALERT_KINDS), name="kind"),
)

# The groups a rule has seen, kept across regroupings (docs/contract.md, "Alerts"): a group of
# a later evaluation is the kept group it shares most members with, when they share more than
# half of the smaller one's. `telling`: its current episode was told (a `surge` episode ends when
# the group no longer surges; a `new` group is told once); `alerted_at`: its last alert.
alert_groups = sa.Table(
    "alert_groups",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("id", UUID(as_uuid=True), primary_key=True),
    sa.Column("rule_id", UUID(as_uuid=True), nullable=False),
    sa.Column("members", ARRAY(UUID(as_uuid=True)), nullable=False),
    sa.Column("representative", UUID(as_uuid=True), nullable=False),
    sa.Column("first_seen_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("seen_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("telling", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("alerted_at", TZ),
    sa.Column("alerts", sa.Integer, nullable=False, server_default="0"),
    sa.ForeignKeyConstraint(
        ["account_id", "rule_id"],
        ["alert_rules.account_id", "alert_rules.id"],
        name="alert_groups_rule_fkey",
        ondelete="CASCADE",
    ),
    sa.Index("alert_groups_rule_idx", "account_id", "rule_id"),
)

# The outbox: one row per alert, written in the transaction that decided it, delivered at
# least once. `webhook_id` is the alert's, the same on every attempt; `body` is what is signed.
alert_deliveries = sa.Table(
    "alert_deliveries",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("id", sa.BigInteger, sa.Identity(), primary_key=True),
    sa.Column("rule_id", UUID(as_uuid=True), nullable=False),
    sa.Column("group_id", UUID(as_uuid=True), nullable=False),
    sa.Column("webhook_id", sa.Text, nullable=False, unique=True),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False, server_default="pending"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("next_attempt_at", TZ, nullable=False, server_default=sa.func.now()),
    sa.Column("last_attempt_at", TZ),
    sa.Column("last_status", sa.Integer),  # the receiver's HTTP status (NULL: none came)
    sa.Column("last_error", sa.Text),
    sa.Column("response", sa.Text),  # at most 1 KB of the last answer's body
    sa.Column("delivered_at", TZ),
    sa.CheckConstraint(_in("state", DELIVERY_STATES), name="state"),
    sa.ForeignKeyConstraint(
        ["account_id", "rule_id"],
        ["alert_rules.account_id", "alert_rules.id"],
        name="alert_deliveries_rule_fkey",
        ondelete="CASCADE",
    ),
    sa.Index("alert_deliveries_due_idx", "next_attempt_at", postgresql_where="state = 'pending'"),
    sa.Index("alert_deliveries_rule_idx", "account_id", "rule_id", "id"),
)
