"""The session search documents ("chunks"), their dense windows, and what the indexer last chunked
of each session."""

from __future__ import annotations

import sqlalchemy as sa
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects.postgresql import TSVECTOR, UUID

from data.tables.common import (
    EMBEDDING_STATES,
    REDACTION_STATES,
    SOURCE_KINDS,
    TZ,
    metadata,
    one_of,
    time_in_range,
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
    sa.CheckConstraint(one_of("source_kind", SOURCE_KINDS), name="source_kind"),
    time_in_range("occurred_at"),
    time_in_range("embedded_at"),
    sa.CheckConstraint(one_of("redaction_state", REDACTION_STATES), name="redaction_state"),
    sa.CheckConstraint(one_of("embedding_state", EMBEDDING_STATES), name="embedding_state"),
    sa.CheckConstraint(
        "embedding_state <> 'embedded' OR (embedding IS NOT NULL AND embedding_model IS NOT NULL)",
        name="embedded_has_vector",
    ),
    sa.CheckConstraint(one_of("dense_state", EMBEDDING_STATES), name="dense_state"),
    sa.CheckConstraint(
        "dense_state <> 'embedded' OR (dense_embedding IS NOT NULL AND dense_model IS NOT NULL)",
        name="dense_has_vector",
    ),
    time_in_range("dense_embedded_at"),
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

# A lexical refit's staged vectors (migration 0023): while `index --watch` embeds an account's
# passages under its staged fit (lexical_fits.next_*), each passage's vector, state, attempts
# and error, and the hash of the text it was made of; swapped into session_chunks once none
# waits, and the account's rows deleted. Apart from session_chunks: an update of a chunk row
# inserts it again into every HNSW graph its served vector is in.
session_chunk_next = sa.Table(
    "session_chunk_next",
    metadata,
    sa.Column("account_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("chunk_id", UUID(as_uuid=True), primary_key=True),
    sa.Column("state", sa.Text, nullable=False, server_default="pending"),
    sa.Column("embedding", Vector()),
    sa.Column("model", sa.Text),
    sa.Column("content_hash", sa.LargeBinary),
    sa.Column("written_seq", sa.BigInteger),  # its chunk's, when it was marked to wait
    sa.Column("embedded_at", TZ),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("error", sa.Text),
    sa.CheckConstraint(one_of("state", EMBEDDING_STATES), name="state"),
    sa.CheckConstraint(
        "state <> 'embedded' OR (embedding IS NOT NULL AND model IS NOT NULL)", name="has_vector"
    ),
    time_in_range("embedded_at"),
    sa.Index(
        "session_chunk_next_waiting_idx",
        "account_id",
        sa.text("written_seq DESC NULLS LAST"),
        "chunk_id",
        postgresql_where=sa.text("state = 'pending'"),
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
