"""The live receiver's settings (`POST /v1/traces`, docs/ingest.md): its body limit, each
account's ingest rates, when a running session is taken as completed, and whether `serve`
indexes beside itself."""

from __future__ import annotations

from pydantic import field_validator
from pydantic_settings import BaseSettings

from config.fields import rate_or_none, setting


class IngestSettings(BaseSettings):
    ingest_body_bytes: int = setting(
        16 * 1024**2,
        "bytes one `POST /v1/traces` body may hold, and may inflate to when gzipped: past "
        "it, 413 (a gzip body is refused while it inflates, never inflated whole)",
        "ingest",
        ge=64 * 1024,
        le=1024**3,
    )
    ingest_span_rate: str | None = setting(
        "5000/second;200000/minute",
        "spans per account, all its keys together, per process (`limits` notation; `off`: "
        "none); a request past it is refused whole, 429 with `Retry-After`",
        "ingest",
    )
    ingest_byte_rate: str | None = setting(
        "32000000/second",
        "request bytes (as received) per account, per process (the same notation); past it, "
        "429 with `Retry-After`",
        "ingest",
    )
    session_idle_s: int = setting(
        1800,
        "a live session with no span for this long is `completed` (its root `invoke_agent` "
        "span ending without error completes it sooner)",
        "ingest",
        ge=1,
        le=30 * 86_400,
    )
    serve_indexes: bool = setting(
        True,
        "`serve` runs `index --watch` beside itself, as a child process, so ingested sessions "
        "are indexed as they arrive; false: run the indexer yourself",
        "ingest",
    )

    @field_validator("ingest_span_rate", "ingest_byte_rate")
    @classmethod
    def _ingest_rates(cls, value: str | None) -> str | None:
        return rate_or_none(value)
