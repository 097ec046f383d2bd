"""Settings: one declaration per setting (default, bounds, description), read once from the
environment when the app or a command starts."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from limits import parse_many
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[1]
ENV_PREFIX = "SIMILAR_SESSIONS_"
Group = Literal["server", "indexer", "providers", "observability"]
GROUPS: tuple[Group, ...] = ("server", "indexer", "providers", "observability")
# USD per 1M tokens of OpenAI's embedding models (their published prices).
OPENAI_PRICES = {
    "text-embedding-3-small": 0.02,
    "text-embedding-3-large": 0.13,
    "text-embedding-ada-002": 0.10,
}
TRACES_EXPORTERS = ("otlp", "console", "none")


class SettingsError(ValueError):
    """An environment variable holds a value the product cannot use."""


def setting(default: Any, description: str, group: Group = "server", **bounds: Any) -> Any:
    """A field with its default, bounds and the description the README's tables show."""
    return Field(default, description=description, json_schema_extra={"group": group}, **bounds)


class Settings(BaseSettings):
    """Everything configurable; the README's configuration tables are generated from it."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, frozen=True, extra="ignore", validate_by_name=True
    )

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
    hnsw_ef_search: int = setting(
        400, "`hnsw.ef_search` for the approximate paths (set per transaction)", ge=10, le=1000
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
    verify_timeout_ms: int = setting(
        500,
        "approximate lookups that cannot vouch for their answer (short, or crowded by "
        "near-duplicates) are checked by an exact pass over the account within this budget (at "
        "most the comparison's); past it the approximate answer stands and the comparison names "
        "`similar_approximate_unverified`; `0`: never check",
        ge=0,
        le=600_000,
    )
    rate_limit: str | None = setting(
        "20/second;600/minute",
        "requests per API key, per process (`limits` notation: `N/second`, `N/minute`, `N/hour`, "
        "several joined by `;`; `off`: none); past it, 429 with `Retry-After`",
    )
    replay_content_chars: int = setting(
        2_000_000,
        "characters of replay content one request may return, across all its aliases and "
        "sessions (the largest session of either corpus has 0.23 M); a turn past it comes back "
        "cut, with `contentTruncated: true`",
        ge=1_000,
        le=1_000_000_000,
    )
    graphiql: bool = setting(True, "serve the GraphiQL page at `GET /graphql`")
    introspection: bool = setting(True, "allow GraphQL introspection")

    chunk_tokens: int = setting(
        384,
        "a chunk is a window of consecutive turns up to this many tokens (MiniLM: capped at its "
        "254 word pieces); 256: 0.516 / 0.665 (50% more chunks), 384: 0.510 / 0.665, "
        "512: 0.510 / 0.657",
        "indexer",
        ge=16,
        le=8192,
    )
    tool_result_tokens: int = setting(
        32,
        "a tool result keeps its first tokens (what was looked up); more dilutes the chunk: "
        "16: 0.507 / 0.665, 32: 0.510 / 0.665, 64: 0.509 / 0.660, 128: 0.510 / 0.655 "
        "(coding-agents P@1 0.993 at 32, 0.961 at 128)",
        "indexer",
        ge=0,
        le=8192,
    )
    chunk_role_labels: bool = setting(
        False,
        '"user:"/"assistant:" prefixes add the same words to every chunk (close share -2 to -5 '
        "points)",
        "indexer",
    )
    chunk_system_prompts: bool = setting(
        False, "system prompts are identical across sessions: never chunked", "indexer"
    )
    repeat_min_sessions: int = setting(
        5,
        "content (by hash) repeated in at least this many sessions of an account, and in at "
        "least the share below, is marked `skipped`, not embedded",
        "indexer",
        ge=2,
        le=1_000_000,
    )
    repeat_min_share_percent: int = setting(
        5,
        "that share of the account's sessions; a task's own text (in its 4 to 8 sessions) stays "
        "searchable (no effect on either corpus: no chunk recurs whole there)",
        "indexer",
        ge=0,
        le=100,
    )
    template_min_sessions: int = setting(
        20,
        "lexical model: 5-word shingles in at least this many sessions (and the share above) "
        "are template text, left out of vectors; 10 would cost tau-bench 0.015 of P@5 (its "
        "agent's stock phrases recur in 10 to 20 sessions)",
        "indexer",
        ge=2,
        le=1_000_000,
    )
    lexical_refit_growth_percent: int = setting(
        25,
        "lexical model: fit again (new identity, every chunk re-embedded) once the account's "
        "sessions grew by this share",
        "indexer",
        ge=1,
        le=10_000,
    )
    chunk_overlap_turns: int = setting(
        0, "turns shared by consecutive windows (1 did not help)", "indexer", ge=0, le=8
    )
    split_overlap_tokens: int = setting(
        32, "overlap when one long turn is split", "indexer", ge=0, le=1024
    )
    embed_batch: int = setting(
        64,
        "chunks per batch: the unit of crash safety and of spend records",
        "indexer",
        ge=1,
        le=4096,
    )
    index_interval_s: int = setting(
        10, "pause between `index --watch` passes", "indexer", ge=1, le=86_400
    )

    embed_max_attempts: int = setting(
        5,
        "a batch the provider keeps failing is retried on later passes; after this many its "
        "chunks are marked `failed`, with the error kept (`index --retry-failed` puts them back)",
        "indexer",
        ge=1,
        le=1000,
    )
    indexer_metrics_port: int | None = Field(
        None,
        description="`index --watch` serves its Prometheus metrics on this port; unset: not served",
        json_schema_extra={"group": "indexer", "shown_default": "unset"},
        ge=1,
        le=65535,
    )
    indexer_metrics_host: str = setting(
        "127.0.0.1", "the address `index --watch` serves its metrics on", "indexer"
    )

    openai_base_url: str | None = Field(
        None,
        validation_alias="OPENAI_BASE_URL",
        description="the OpenAI-compatible endpoint of the `openai` provider (OpenAI, Azure "
        "OpenAI, Ollama, vLLM, text-embeddings-inference, LiteLLM), up to `/v1`",
        json_schema_extra={"group": "providers", "shown_default": "https://api.openai.com/v1"},
    )
    openai_api_key: SecretStr | None = Field(
        None,
        validation_alias="OPENAI_API_KEY",
        description="its key (any non-empty value for a server that checks none); never logged",
        json_schema_extra={"group": "providers", "shown_default": "unset"},
    )
    openai_prices: dict[str, float] = setting(
        OPENAI_PRICES,
        "USD per 1M tokens by model; a JSON object given here is merged over the default. A "
        "model named nowhere costs 0 (a server of your own); tokens are the answer's `usage`",
        "providers",
    )
    openai_dimensions_models: tuple[str, ...] = setting(
        ("text-embedding-3-small", "text-embedding-3-large"),
        "models sent the `dimensions` request parameter (comma-separated); any other model must "
        "answer vectors of its identity's width as they come",
        "providers",
    )
    openai_max_inputs: int = setting(
        2048, "texts per request: a batch is split to fit", "providers", ge=1, le=100_000
    )
    openai_max_request_tokens: int = setting(
        300_000,
        "tokens per request (counted by an upper bound: UTF-8 bytes + 2 a text)",
        "providers",
        ge=1,
        le=100_000_000,
    )
    openai_max_input_tokens: int = setting(
        8191,
        "the longest text the model reads, in tokens: chunk windows are capped to it "
        "(text-embeddings-inference with a BERT model: 512)",
        "providers",
        ge=16,
        le=1_000_000,
    )
    openai_timeout_s: float = setting(
        60.0, "per request, before it counts as failed", "providers", gt=0, le=3600
    )
    openai_max_retries: int = setting(
        4,
        "retries of a request on 408, 409, 429, 5xx, timeouts and lost connections, with "
        "exponential backoff and jitter, honouring `Retry-After` up to 120 s (the SDK's)",
        "providers",
        ge=0,
        le=20,
    )

    metrics: bool = setting(
        True,
        "serve Prometheus metrics at `GET /metrics` (no key: no account, session or content in "
        "any label)",
        "observability",
    )
    otel_exporter_otlp_endpoint: str | None = Field(
        None,
        validation_alias="OTEL_EXPORTER_OTLP_ENDPOINT",
        description="set: traces are exported there by OTLP over HTTP/protobuf (e.g. "
        "`http://collector:4318`); the exporter's other `OTEL_*` variables apply",
        json_schema_extra={"group": "observability", "shown_default": "unset"},
    )
    otel_traces_exporter: str | None = Field(
        None,
        validation_alias="OTEL_TRACES_EXPORTER",
        description="`otlp`, `console` (JSON spans on stdout) or `none`; unset: `otlp` when an "
        "endpoint is set, else no tracing at all",
        json_schema_extra={"group": "observability", "shown_default": "unset"},
    )
    otel_service_name: str = Field(
        "similar-sessions",
        validation_alias="OTEL_SERVICE_NAME",
        description="the traces' `service.name`",
        json_schema_extra={"group": "observability"},
    )

    @field_validator("openai_prices", mode="before")
    @classmethod
    def _merged_prices(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ValueError('must be a JSON object such as {"model": 0.02}') from None
        if not isinstance(value, dict):
            return value
        return {**OPENAI_PRICES, **value}

    @field_validator("openai_prices")
    @classmethod
    def _non_negative(cls, value: dict[str, float]) -> dict[str, float]:
        negative = sorted(model for model, price in value.items() if price < 0)
        if negative:
            raise ValueError(f"prices cannot be negative ({', '.join(negative)})")
        return value

    @field_validator("openai_dimensions_models", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("otel_traces_exporter")
    @classmethod
    def _known_exporter(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().lower()
        if value not in TRACES_EXPORTERS:
            raise ValueError(f"must be one of {', '.join(TRACES_EXPORTERS)}")
        return value

    @property
    def traces_exporter(self) -> str | None:
        """Where traces go (`otlp` or `console`), or None: tracing is off."""
        exporter = self.otel_traces_exporter
        if exporter is None and self.otel_exporter_otlp_endpoint:
            exporter = "otlp"
        return None if exporter in (None, "none") else exporter

    @field_validator("log_level")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

    @field_validator("data_dir")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @field_validator("rate_limit")
    @classmethod
    def _rates(cls, value: str | None) -> str | None:
        if value is None or value.strip().lower() in {"", "off", "none", "0"}:
            return None
        parse_many(value)  # a ValueError naming the string it could not read
        return value.strip()

    @field_validator("database_url", "openai_base_url", "otel_exporter_otlp_endpoint")
    @classmethod
    def _unset_when_empty(cls, value: str | None) -> str | None:
        return value or None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings from `environ` (the process environment by default); an unusable
        value raises SettingsError naming its variable."""
        env = os.environ if environ is None else environ
        values = {
            name: env[variable]
            for name, variable in ENV_NAMES.items()
            if env.get(variable, "") != ""
        }
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise SettingsError(_describe(exc)) from None


def env_name(name: str) -> str:
    alias = Settings.model_fields[name].validation_alias
    return alias if isinstance(alias, str) else ENV_PREFIX + name.upper()


ENV_NAMES = {name: env_name(name) for name in Settings.model_fields}


def default_of(name: str) -> Any:
    """A setting's declared default: the one place other modules take their defaults from."""
    return Settings.model_fields[name].default


def _describe(exc: ValidationError) -> str:
    first = exc.errors(include_url=False)[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    variable = ENV_NAMES.get(name, name)
    return f"{variable}: {first['msg']}, got {first.get('input')!r}"
