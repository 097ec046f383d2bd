"""The server's settings: the database, pools and budgets, the comparison's lookup paths,
request limits, GraphiQL and introspection."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings

from config.fields import ENV_PREFIX, REPO_ROOT, rate_or_none, setting


class ServerSettings(BaseSettings):
    database_url: str | None = Field(
        None,
        validation_alias="DATABASE_URL",
        description="`postgresql://…` (TCP, or Unix socket as "
        "`postgresql://user:@/db?host=/dir`); unset: the embedded server",
        json_schema_extra={"group": "server", "shown_default": "unset"},
    )
    data_dir: Path = Field(
        REPO_ROOT / ".pgdata",
        description="where the embedded server keeps its data",
        json_schema_extra={"group": "server", "shown_default": "<repo>/.pgdata"},
    )
    log_level: str = setting(
        "WARNING",
        "structured JSON logs on stderr; `INFO` logs one line per comparison with its lookup path",
    )
    pool_size: int = setting(5, "database connections per process (no overflow)", ge=1, le=200)
    comparison_pool_size: int = setting(
        5,
        "connections per process of the comparisons' own pool, opened with the comparison's "
        "settings (its time budget, iterative HNSW scans, generic plans)",
        ge=1,
        le=200,
    )
    pool_timeout_s: int = setting(
        5,
        "wait for a connection (and for a connect) before answering 503 with `Retry-After`",
        ge=1,
        le=300,
    )
    statement_timeout_ms: int = setting(
        5000,
        "bound on every statement of a request (an import and the HNSW builds run without it)",
        ge=10,
        le=600_000,
    )
    comparison_timeout_ms: int = setting(
        3000,
        "bound on each statement of a comparison; when the probe lookup runs past it the answer "
        "is empty with `similar_comparison_timed_out`",
        ge=10,
        le=600_000,
    )
    embeddings_enabled: bool = Field(
        True,
        validation_alias=ENV_PREFIX + "EMBEDDINGS",
        description="`false`: the deployment turned embeddings off",
        json_schema_extra={"group": "server"},
    )
    exact_scan_max_chunks: int = setting(
        1_000,
        "accounts with at most this many comparable chunks are compared by an exact scan; "
        "larger ones get their own HNSW index",
        ge=0,
        le=100_000_000,
    )
    account_snapshot_ttl_s: float = setting(
        60.0,
        "how long a process keeps what it read of an account's indexes (their sizes, kinds, "
        "watermarks and fits), from which it plans the lookups: a new own index is used this "
        "long after it is built at most (at most 60: an index moved to another kind is kept "
        "65 s for processes that read the old one)",
        ge=0,
        le=60,
    )
    hnsw_ef_search: int = setting(
        400, "`hnsw.ef_search` for the approximate paths (set per transaction)", ge=10, le=1000
    )
    hnsw_ef_search_fitted: bool = setting(
        True,
        "comparisons on an account's own index run at the `hnsw.ef_search` fitted on its "
        "vectors when it builds (the lowest of 100, 200 and 300 whose recall@25 held against an "
        "exact scan), when below `SIMILAR_SESSIONS_HNSW_EF_SEARCH`; `false`: always that one",
    )
    hnsw_ef_search_retry: int = setting(
        1000,
        "probes an approximate lookup answered with fewer than 25 rows are asked once more with "
        "this `hnsw.ef_search`",
        ge=10,
        le=1000,
    )
    hnsw_overfetch: int = setting(
        100,
        "candidates read from the index per probe before the exact re-rank to 25",
        ge=25,
        le=1000,
    )
    # 1,000: an exact pass of one lookup over the largest account of bench.run's 1M table
    # (383,000 chunks) took 450-650 ms here; at 500 the same lookup was answered exactly in
    # one run and left unverified in the next.
    verify_timeout_ms: int = setting(
        1000,
        "approximate lookups that cannot vouch for their answer (short, or crowded by "
        "near-duplicates) are checked by an exact pass over the account within this budget (at "
        "most the comparison's); past it the approximate answer stands and the comparison names "
        "`similar_approximate_unverified`; `0`: never check",
        ge=0,
        le=600_000,
    )
    failure_modes_sessions: int = setting(
        500,
        "sessions one failure-modes request compares: the newest of its window; the older "
        "ones are left out and named (`failure_modes_bounded`)",
        ge=1,
        le=5_000,
    )
    failure_modes_timeout_ms: int = setting(
        20_000,
        "bound on the failure modes' one pass comparing the window's sessions with each other "
        "(each of its statements); past it the answer has no group and says "
        "`similar_comparison_timed_out`",
        ge=10,
        le=600_000,
    )
    page_connections: int = setting(
        2,
        "connections of the comparisons' pool one page of comparisons (a `runtimeSessions` "
        "page, or aliases) is spread over, each comparison on one, at least 4 a connection: "
        "their lookups run at once on as many of the server's cores (at most the pool's size)",
        ge=1,
        le=64,
    )
    rate_limit: str | None = setting(
        "20/second;600/minute",
        "requests per API key, per process (`limits` notation: `N/second`, `N/minute`, `N/hour`, "
        "several joined by `;`; `off`: none); past it, 429 with `Retry-After`",
    )
    account_rate_limit: str | None = setting(
        "60/second;1800/minute",
        "requests per account, all its keys together, per process (the same notation); past "
        "it, 429 with `Retry-After`: the bound above its keys' rates",
    )
    seats: int = setting(
        4,
        "requests this process runs at once, in seats: the failure modes take 3, a search or "
        "a page of sessions 2, anything else 1, and a request of more than one leaves one "
        "free; past them, requests wait their turn in their account's queue, served fairly "
        "across accounts by the work each has had (a lone account may use every seat)",
        ge=1,
        le=10_000,
    )
    account_queue: int = setting(
        64,
        "requests of one account that may wait for their turn, per process, all its keys "
        "together; past it, 429 with `Retry-After`",
        ge=1,
        le=100_000,
    )
    replay_content_chars: int = setting(
        2_000_000,
        "characters of replay content one request may read, and may return, across all its "
        "aliases and sessions (the largest session of either corpus has 0.23 M); a turn past it "
        "comes back cut, with `contentTruncated: true`",
        ge=1_000,
        le=1_000_000_000,
    )
    replay_turns: int = setting(
        5_000,
        "replay turns one GraphQL request may read, across all its aliases and sessions: each "
        "replay field counts its `first` times the sessions it can run for, and a query that "
        "could read more is refused whole before it runs (`LIMIT_EXCEEDED`)",
        ge=500,  # a page of MAX_REPLAY_PAGE turns always fits
        le=10_000_000,
    )
    graphiql: bool = setting(True, "serve the GraphiQL page at `GET /graphql`")
    introspection: bool = setting(True, "allow GraphQL introspection")

    @field_validator("log_level")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @field_validator("rate_limit", "account_rate_limit")
    @classmethod
    def _rates(cls, value: str | None) -> str | None:
        return rate_or_none(value)
