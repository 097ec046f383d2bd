"""Settings, read once from the environment when the app or a command starts."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


class SettingsError(ValueError):
    """An environment variable holds a value the product cannot use."""


def _int(env: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a whole number, got {raw!r}") from None
    if not low <= value <= high:
        raise SettingsError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _bool(env: dict[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise SettingsError(f"{name} must be true or false, got {raw!r}")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable, with the defaults the README documents."""

    database_url: str | None
    data_dir: Path
    log_level: str
    pool_size: int
    pool_timeout_s: int
    statement_timeout_ms: int
    comparison_timeout_ms: int
    embeddings_enabled: bool
    exact_scan_max_chunks: int
    hnsw_ef_search: int
    hnsw_ef_search_retry: int
    hnsw_overfetch: int
    graphiql: bool
    introspection: bool
    chunk_tokens: int = 384
    chunk_overlap_turns: int = 0
    split_overlap_tokens: int = 32
    tool_result_tokens: int = 32
    chunk_system_prompts: bool = False
    chunk_role_labels: bool = False
    repeat_min_sessions: int = 5
    repeat_min_share_percent: int = 5
    lexical_refit_growth_percent: int = 25
    template_min_sessions: int = 20
    embed_batch: int = 64
    index_interval_s: int = 10

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if environ is None else environ)
        data_dir = Path(env.get("SIMILAR_SESSIONS_DATA_DIR") or REPO_ROOT / ".pgdata")
        return cls(
            database_url=env.get("DATABASE_URL") or None,
            data_dir=data_dir.expanduser().resolve(),
            log_level=env.get("SIMILAR_SESSIONS_LOG_LEVEL", "WARNING").upper(),
            pool_size=_int(env, "SIMILAR_SESSIONS_POOL_SIZE", 5, 1, 200),
            pool_timeout_s=_int(env, "SIMILAR_SESSIONS_POOL_TIMEOUT_S", 5, 1, 300),
            statement_timeout_ms=_int(
                env, "SIMILAR_SESSIONS_STATEMENT_TIMEOUT_MS", 5000, 10, 600_000
            ),
            comparison_timeout_ms=_int(
                env, "SIMILAR_SESSIONS_COMPARISON_TIMEOUT_MS", 3000, 10, 600_000
            ),
            embeddings_enabled=_bool(env, "SIMILAR_SESSIONS_EMBEDDINGS", True),
            exact_scan_max_chunks=_int(
                env, "SIMILAR_SESSIONS_EXACT_SCAN_MAX_CHUNKS", 1_000, 0, 100_000_000
            ),
            hnsw_ef_search=_int(env, "SIMILAR_SESSIONS_HNSW_EF_SEARCH", 400, 10, 1000),
            hnsw_ef_search_retry=_int(env, "SIMILAR_SESSIONS_HNSW_EF_SEARCH_RETRY", 1000, 10, 1000),
            hnsw_overfetch=_int(env, "SIMILAR_SESSIONS_HNSW_OVERFETCH", 100, 25, 1000),
            graphiql=_bool(env, "SIMILAR_SESSIONS_GRAPHIQL", True),
            introspection=_bool(env, "SIMILAR_SESSIONS_INTROSPECTION", True),
            chunk_tokens=_int(env, "SIMILAR_SESSIONS_CHUNK_TOKENS", 384, 16, 8192),
            chunk_overlap_turns=_int(env, "SIMILAR_SESSIONS_CHUNK_OVERLAP_TURNS", 0, 0, 8),
            split_overlap_tokens=_int(env, "SIMILAR_SESSIONS_SPLIT_OVERLAP_TOKENS", 32, 0, 1024),
            tool_result_tokens=_int(env, "SIMILAR_SESSIONS_TOOL_RESULT_TOKENS", 32, 0, 8192),
            chunk_system_prompts=_bool(env, "SIMILAR_SESSIONS_CHUNK_SYSTEM_PROMPTS", False),
            chunk_role_labels=_bool(env, "SIMILAR_SESSIONS_CHUNK_ROLE_LABELS", False),
            repeat_min_sessions=_int(env, "SIMILAR_SESSIONS_REPEAT_MIN_SESSIONS", 5, 2, 1_000_000),
            repeat_min_share_percent=_int(
                env, "SIMILAR_SESSIONS_REPEAT_MIN_SHARE_PERCENT", 5, 0, 100
            ),
            lexical_refit_growth_percent=_int(
                env, "SIMILAR_SESSIONS_LEXICAL_REFIT_GROWTH_PERCENT", 25, 1, 10_000
            ),
            template_min_sessions=_int(
                env, "SIMILAR_SESSIONS_TEMPLATE_MIN_SESSIONS", 20, 2, 1_000_000
            ),
            embed_batch=_int(env, "SIMILAR_SESSIONS_EMBED_BATCH", 64, 1, 4096),
            index_interval_s=_int(env, "SIMILAR_SESSIONS_INDEX_INTERVAL_S", 10, 1, 86_400),
        )
