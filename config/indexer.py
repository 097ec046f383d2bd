"""The indexer's settings: chunking, repeated content, the lexical fit, batches and the
indexer's own metrics."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings

from config.fields import setting


class IndexerSettings(BaseSettings):
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
    import_rebuilds_own_index: bool = setting(
        False,
        "`import`: after the file commits, the accounts' own indexes whose tails it made due "
        "are merged at once (built again concurrently; otherwise the indexer's next pass "
        "does it); an own index built before tails existed (migration 0012) that the file "
        "brings a fifth of its rows to is dropped in the file's transaction and built again "
        "after the commit, and that drop locks `session_chunks` against every read until "
        "the commit",
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
    lexical_refit_min_interval_s: int = setting(
        600,
        "lexical model: a grown account is fitted again at most this often (a refit embeds "
        "every passage of the account again; under `index --watch` beside the served fit's "
        "vectors, swapped in once complete, a live stream's new passages first; a fit swapped "
        "in so is then served 3 times as long as it was staged before the next)",
        "indexer",
        ge=0,
        le=30 * 86_400,
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
    embedders_kept: int = setting(
        256,
        "embedders built per account (a lexical fit's, a provider's model) a process keeps, the "
        "least recently used let go past it and built again when asked (milliseconds); the "
        "built-in models are kept whatever this is",
        "indexer",
        ge=1,
        le=1_000_000,
    )
    index_interval_s: int = setting(
        10, "pause between `index --watch` passes", "indexer", ge=1, le=86_400
    )
    index_backlog_s: float = setting(
        0.5,
        "seconds an `index --watch` pass spends on an account's waiting chunks beyond the "
        "sessions it chunked (a re-embedding after a new fit, a dense leg behind); the rest "
        "waits for the next pass, taken at once, so a running session's passages never wait "
        "for a whole account's",
        "indexer",
        ge=0,
        le=3600,
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
