"""The embedding models in use, the accounts' own indexes of them, and the lexical fits."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB, UUID

from data.tables.common import TZ, metadata

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
    # MERGE_REST times as long before the next merge (data/own_index_tails.py)
    sa.Column("build_seconds", sa.Float, nullable=True),
    sa.CheckConstraint("ef_search BETWEEN 10 AND 1000", name="ef_search"),
    sa.CheckConstraint(
        "index_kind IN ('vector', 'halfvec')", name="account_model_indexes_index_kind"
    ),
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
    # A new fit staged by `index --watch` (migration 0023): the account's passages are
    # embedded under it beside the served fit's vectors, and it becomes the fit once none
    # waits. NULL: none staged.
    sa.Column("next_identity", sa.Text),
    sa.Column("next_sessions", sa.Integer),
    sa.Column("next_weights", sa.LargeBinary),
    sa.Column("next_fitted_at", TZ),
    # When the fit was swapped in, if it was staged (migration 0024): it was staged from
    # `fitted_at` to then, and a new fit rests for a multiple of that (indexer/fitting.py).
    # NULL: installed at once.
    sa.Column("swapped_at", TZ),
    sa.CheckConstraint(
        "(next_identity IS NULL) = (next_weights IS NULL) "
        "AND (next_identity IS NULL) = (next_sessions IS NULL) "
        "AND (next_identity IS NULL) = (next_fitted_at IS NULL)",
        name="next",
    ),
)
