"""The tables. Every table carries account_id, first in every key (the shard key); each module
holds the tables of one part of the product, all on one `metadata`."""

from __future__ import annotations

from data.tables.access import (
    account_features,
    accounts,
    api_keys,
    deployment_secrets,
    embedding_settings,
)
from data.tables.alerts import (
    ALERT_KINDS,
    DELIVERY_STATES,
    alert_deliveries,
    alert_groups,
    alert_rules,
)
from data.tables.chunks import (
    session_chunk_next,
    session_chunk_windows,
    session_chunking,
    session_chunks,
)
from data.tables.common import (
    EMBEDDING_SCOPES,
    EMBEDDING_STATES,
    REDACTION_STATES,
    SOURCE_KINDS,
    TZ,
    metadata,
)
from data.tables.ingest import (
    otlp_batches,
    otlp_spans,
    session_changes,
)
from data.tables.models import (
    account_model_indexes,
    embedding_models,
    lexical_fits,
)
from data.tables.sessions import (
    api_usage,
    runtime_session_activity,
    runtime_sessions,
)

__all__ = [
    "ALERT_KINDS",
    "DELIVERY_STATES",
    "EMBEDDING_SCOPES",
    "EMBEDDING_STATES",
    "REDACTION_STATES",
    "SOURCE_KINDS",
    "TZ",
    "account_features",
    "account_model_indexes",
    "accounts",
    "alert_deliveries",
    "alert_groups",
    "alert_rules",
    "api_keys",
    "api_usage",
    "deployment_secrets",
    "embedding_models",
    "embedding_settings",
    "lexical_fits",
    "metadata",
    "otlp_batches",
    "otlp_spans",
    "runtime_session_activity",
    "runtime_sessions",
    "session_changes",
    "session_chunk_next",
    "session_chunk_windows",
    "session_chunking",
    "session_chunks",
]
