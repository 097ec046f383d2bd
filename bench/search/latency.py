"""A search's latency at 100k passages: lexical leg only against both legs fused, side by
side, over the coding-agents descriptions.

The account is the coding-agents corpus as `python -m bench.search` left it (lexical model,
MiniLM beside it), copied into `ss_search_scaled` and grown by copies of its sessions (new
ids, the same texts and vectors) to at least `--chunks` passages. The searches run in process
through `searchSessions`' own code, the two kinds alternating, after one untimed round; the
hybrid's time includes embedding the text with MiniLM.

    python -m bench.search && python -m bench.search.latency [--chunks 100000] [--rounds 3]"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.databases import administer, with_database
from bench.quality import labelled
from bench.search.product import registry
from bench.search.queries import query_set
from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine
from data.server import resolve_url
from resolvers.arguments import SimilarArgs
from resolvers.comparison.legs import Leg
from resolvers.comparison.search import search_sessions
from resolvers.services import Services
from resolvers.tuning import Tuning

SOURCE = "ss_search_coding_agents_dense"
SCALED = "ss_search_scaled"
# Copies of the account's sessions: new ids from the old ones and the copy's number.
_COPY_SESSIONS = """
INSERT INTO runtime_sessions (account_id, id, title, source_type, source_id, reference, status,
                              started_at, last_activity_at)
SELECT account_id, md5(id::text || :copy)::uuid, title, source_type, source_id || '#' || :copy,
       reference, status, started_at, last_activity_at
FROM runtime_sessions WHERE account_id = :a AND source_id NOT LIKE '%#%'"""
_COPY_CHUNKS = """
INSERT INTO session_chunks (account_id, id, runtime_session_id, source_kind, source_id,
  chunk_index, occurred_at, role, content, content_hash, redaction_state, embedding_state,
  embedding, embedding_model, embedded_at, dense_embedding, dense_model, dense_state,
  dense_embedded_at, search_terms)
SELECT c.account_id, md5(c.id::text || :copy)::uuid, md5(c.runtime_session_id::text || :copy)::uuid,
  c.source_kind, c.source_id, c.chunk_index, c.occurred_at, c.role, c.content, c.content_hash,
  c.redaction_state, c.embedding_state, c.embedding, c.embedding_model, c.embedded_at,
  c.dense_embedding, c.dense_model, c.dense_state, c.dense_embedded_at, c.search_terms
FROM session_chunks c JOIN runtime_sessions s
  ON s.account_id = c.account_id AND s.id = c.runtime_session_id AND s.source_id NOT LIKE '%#%'
WHERE c.account_id = :a"""
# The dense model's windows of the copied chunks (a search scores a passage by its best).
_COPY_WINDOWS = """
INSERT INTO session_chunk_windows (account_id, chunk_id, window_index, embedding)
SELECT w.account_id, md5(w.chunk_id::text || :copy)::uuid, w.window_index, w.embedding
FROM session_chunk_windows w JOIN session_chunks c
  ON c.account_id = w.account_id AND c.id = w.chunk_id
JOIN runtime_sessions s
  ON s.account_id = c.account_id AND s.id = c.runtime_session_id AND s.source_id NOT LIKE '%#%'
WHERE w.account_id = :a"""


async def scaled(url: str, account: UUID, chunks: int) -> AsyncEngine:
    """The scaled copy of the corpus's database, made once (reused when it is big enough)."""
    engine = make_engine(with_database(url, SCALED), statement_timeout_ms=3_600_000)
    try:
        async with engine.connect() as conn:
            have = (await conn.execute(sa.text("SELECT count(*) FROM session_chunks"))).scalar()
        if have is not None and have >= chunks:
            return engine
    except Exception:
        pass
    await engine.dispose()
    await administer(
        url,
        f'DROP DATABASE IF EXISTS "{SCALED}" WITH (FORCE)',
        f'CREATE DATABASE "{SCALED}" TEMPLATE "{SOURCE}"',
    )
    engine = make_engine(with_database(url, SCALED), statement_timeout_ms=3_600_000)
    await grow(engine, account, chunks)
    return engine


async def grow(engine: AsyncEngine, account: UUID, chunks: int) -> None:
    """Copies of the sessions until the account holds `chunks` passages. The copies' HNSW
    entries are not wanted (the search's legs do not read the lexical model's graph; the
    dense model's vectors take the exact path), so the graphs are dropped first."""
    async with engine.begin() as conn:
        indexes = await conn.execute(
            sa.text("SELECT indexname FROM pg_indexes WHERE indexdef LIKE '%USING hnsw%'")
        )
        for (name,) in indexes.all():
            await conn.execute(sa.text(f'DROP INDEX "{name}"'))
        base = (await conn.execute(sa.text("SELECT count(*) FROM session_chunks"))).scalar_one()
    for copy in range(1, -(-chunks // base)):
        async with engine.begin() as conn:
            await conn.execute(sa.text(_COPY_SESSIONS), {"a": account, "copy": str(copy)})
            await conn.execute(sa.text(_COPY_CHUNKS), {"a": account, "copy": str(copy)})
            await conn.execute(sa.text(_COPY_WINDOWS), {"a": account, "copy": str(copy)})
        print(f"copy {copy}: {base * (copy + 1):,} passages", file=sys.stderr)
    async with engine.connect() as conn:
        conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
        await conn.execute(sa.text("VACUUM ANALYZE session_chunks"))
        await conn.execute(sa.text("VACUUM ANALYZE runtime_sessions"))


async def timed(
    services: Services, account: UUID, texts: Sequence[str], only: Leg | None
) -> list[float]:
    args = SimilarArgs(limit=10, max_matches_per_session=1, include_match_text=False)
    took = []
    for text in texts:
        started = time.perf_counter()
        await search_sessions(services, account, text, args, only)
        took.append((time.perf_counter() - started) * 1000)
    return took


async def run(chunks: int, rounds: int) -> None:
    settings = Settings.from_env()
    configure_logging("WARNING")
    corpus = labelled.CORPORA["coding-agents"]()
    account = corpus.account_id
    url = resolve_url(settings.database_url, settings.data_dir)
    engine = await scaled(url, account, chunks)
    try:
        async with engine.connect() as conn:
            held = (await conn.execute(sa.text("SELECT count(*) FROM session_chunks"))).scalar()
        services = Services(engine, Tuning.of(settings), embedders=registry())
        texts = [q.text for q in query_set("coding-agents", corpus)]
        await timed(services, account, texts[:5], None)  # untimed: the model loaded, caches warm
        lexical: list[float] = []
        hybrid: list[float] = []
        for turn in range(rounds):
            pair = [(lexical, Leg.LEXICAL), (hybrid, None)]
            for into, only in pair if turn % 2 == 0 else pair[::-1]:
                into += await timed(services, account, texts, only)
        ratio = statistics.median(hybrid) / statistics.median(lexical)
        print("| passages | searches | lexical p50 / p95 ms | hybrid p50 / p95 ms | ratio |")
        print("|---|---|---|---|---|")
        print(
            f"| {held:,} | {len(lexical)} + {len(hybrid)} | {statistics.median(lexical):.1f} / "
            f"{p95(lexical):.1f} | {statistics.median(hybrid):.1f} / {p95(hybrid):.1f} "
            f"| {ratio:.2f}x |"
        )
    finally:
        await engine.dispose()


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search.latency", description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args(argv)
    asyncio.run(run(opts.chunks, opts.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
