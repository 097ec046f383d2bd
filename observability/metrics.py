"""The Prometheus metrics, each declared once in the process's default registry.

No label carries an account id, a session id or any content: routes are templates, the
rest are small closed sets (paths, reason codes, outcomes, providers and models)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

HTTP_DURATION = Histogram(
    "similar_sessions_http_request_duration_seconds",
    "HTTP requests by route template, method and status",
    ["route", "method", "status"],
)
GRAPHQL_DURATION = Histogram(
    "similar_sessions_graphql_operation_duration_seconds",
    "GraphQL operations by type (query, mutation, subscription; unknown: not parsed)",
    ["operation_type"],
)
COMPARISONS = Counter(
    "similar_sessions_comparisons",
    "comparisons by lookup path (exact, index, account_index; none: nothing to compare)",
    ["lookup_path"],
)
DEGRADED_REASONS = Counter(
    "similar_sessions_degraded_reasons", "degraded reasons of comparisons, by code", ["reason"]
)
POOL_WAIT = Histogram(
    "similar_sessions_db_pool_wait_seconds",
    "time to get a database connection from the pool (a new connection's connect included)",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
ADMISSION_WAIT = Histogram(
    "similar_sessions_admission_wait_seconds",
    "time a request waited for its seats in its account's fair queue, by edge (ingest: "
    "POST /v1/traces; graphql; rest; mcp: a tool call); 0 when it started at once",
    ["edge"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
UNAVAILABLE = Counter(
    "similar_sessions_unavailable_answers",
    "answers of 503 (REST, auth) or UNAVAILABLE (GraphQL), by cause "
    "(pool_timeout, statement_timeout, database)",
    ["api", "cause"],
)
REFUSED = Counter(
    "similar_sessions_refused_requests",
    "requests refused by a bound on one key's or one account's work, by bound (rate_limit, "
    "account_rate_limit, account_queue: answered 429; replay_turns, selections, tokens, "
    "aliases, depth: a GraphQL query refused before it ran)",
    ["bound"],
)
STATEMENT_TIMEOUTS = Counter(
    "similar_sessions_db_statement_timeouts", "statements cancelled by their statement_timeout"
)
INGEST_SPANS = Counter(
    "similar_sessions_ingest_spans",
    "acknowledged spans the indexer made into sessions: stored, or repeated (already stored)",
    ["outcome"],
)
INGEST_LAG = Histogram(
    "similar_sessions_ingest_lag_seconds",
    "from a request's acknowledgement to the commit that made its sessions",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300),
)
INGEST_FAILED = Counter(
    "similar_sessions_ingest_failed_requests",
    "acknowledged requests the indexer could not make into sessions (kept with the reason)",
)
INDEXER_CHUNKS = Counter(
    "similar_sessions_indexer_chunks",
    "chunks the indexer embedded, skipped (repeated content) or marked failed",
    ["outcome"],
)
INDEXER_BATCHES = Counter(
    "similar_sessions_indexer_batches",
    "embedding batches by outcome (embedded, failed, capped: stopped at the daily cap)",
    ["outcome"],
)
INDEXER_TOKENS = Counter(
    "similar_sessions_indexer_tokens", "tokens billed for embedding", ["provider", "model"]
)
INDEXER_SPEND = Counter(
    "similar_sessions_indexer_spend_usd", "embedding spend in USD", ["provider", "model"]
)
