"""Accounts, their keys, features and embedding settings, and the deployment's secrets."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from data.tables.common import EMBEDDING_SCOPES, TZ, metadata, one_of

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
    sa.CheckConstraint(one_of("scope", EMBEDDING_SCOPES), name="scope"),
    sa.CheckConstraint("dimensions BETWEEN 1 AND 16000", name="dimensions"),
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
