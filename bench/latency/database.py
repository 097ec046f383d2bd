"""Create (or reuse) the benchmark database and load the corpus: accounts through the
product's import functions, sessions and chunks by binary COPY, then the indexes the
product would build (the model's shared index, each large account's own index)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import asyncpg
import sqlalchemy as sa
from pgvector.asyncpg import register_vector
from sqlalchemy.ext.asyncio import AsyncEngine
from tqdm import tqdm

from bench.common.databases import libpq, recreate, with_database
from bench.common.synthetic import topic_space
from bench.latency.corpus import (
    IDENTITY,
    Account,
    Corpus,
    copy_rows,
    generate_account,
    now_utc,
)
from data import import_rows
from data import tables as t
from data.account_indexes import ensure_large_account_indexes, valid_account_index
from data.engine import make_engine
from data.migrate import migrate
from data.model_indexes import ensure_model_index
from data.own_index_rebuilds import fit_all


async def stored_meta(url: str, key: str = "corpus") -> dict[str, Any] | None:
    """What was recorded under `key` when the database was loaded; None before."""
    try:
        conn = await asyncpg.connect(libpq(url))
    except asyncpg.InvalidCatalogNameError:
        return None
    try:
        raw = await conn.fetchval(
            "SELECT value FROM bench_meta WHERE key = $1 AND to_regclass('bench_meta') IS NOT NULL",
            key,
        )
    except asyncpg.UndefinedTableError:
        return None
    finally:
        await conn.close()
    return None if raw is None else dict(json.loads(raw))


async def migrated(url: str) -> None:
    """Bring a reused database's schema up to this checkout's (a column added since it was
    loaded, say); nothing when it is current."""
    engine = make_engine(url, statement_timeout_ms=0)
    try:
        await migrate(engine)
        fitted = await fit_all(engine)  # `similar-sessions fit-indexes`, as an upgrade runs it
        if fitted:
            print(f"fitted the ef_search of {len(fitted)} own indexes built before fits")
    finally:
        await engine.dispose()


async def store_meta(url: str, meta: dict[str, Any], key: str = "corpus") -> None:
    """Record what was loaded, so that the next run reuses the database."""
    conn = await asyncpg.connect(libpq(url))
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_meta (key text PRIMARY KEY, value text)"
        )
        await conn.execute(
            "INSERT INTO bench_meta VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = $2",
            key,
            json.dumps(meta),
        )
    finally:
        await conn.close()


async def create_accounts(engine: AsyncEngine, accounts: list[Account]) -> None:
    """The accounts, each with the feature on, an embedding setting and its API key, through
    the product's import functions."""
    async with engine.begin() as conn:
        for a in accounts:
            await import_rows.upsert_rows(conn, t.accounts, [{"account_id": a.id, "name": a.name}])
            await import_rows.replace_features(conn, a.id, ["similarSessions"])
            await import_rows.replace_embedding_setting(
                conn,
                a.id,
                {
                    "enabled": True,
                    "provider": "local",
                    "model": "hash-384",
                    "dimensions": 384,
                    "scope": "full",
                    "daily_cap_usd": 5.0,
                },
            )
            await import_rows.add_api_keys(conn, a.id, [(a.key, ["view_runtime_sessions"])])


async def prepare(
    server_url: str, database: str, corpus: Corpus, exact_max: int, fresh: bool
) -> tuple[str, dict[str, Any]]:
    """The database URL and what was measured while loading (reused when already loaded)."""
    url = with_database(server_url, database)
    meta = None if fresh else await stored_meta(url)
    wanted = {"total": corpus.total, "seed": corpus.seed, "exact_max": exact_max}
    if meta is not None and all(meta.get(k) == v for k, v in wanted.items()):
        print(f"reusing database {database} (loaded {meta['loaded_at']})")
        await migrated(url)
        return url, meta
    await recreate(server_url, database)
    engine = make_engine(url, statement_timeout_ms=0)
    try:
        await migrate(engine)
        meta = {**wanted, **await _load(engine, url, corpus, exact_max)}
    finally:
        await engine.dispose()
    await store_meta(url, meta)
    return url, meta


async def _load(engine: AsyncEngine, url: str, corpus: Corpus, exact_max: int) -> dict[str, Any]:
    started = time.perf_counter()
    await create_accounts(engine, corpus.accounts)
    centres, subs = topic_space(corpus.seed)
    now = now_utc()
    raw = await asyncpg.connect(libpq(url))
    await register_vector(raw)
    try:
        with tqdm(total=corpus.total, desc="generate+COPY", unit="chunk") as bar:
            for i in range(len(corpus.accounts)):
                sessions, chunks = generate_account(corpus, i, centres, subs, now)
                await copy_rows(raw, sessions, chunks)
                bar.update(len(chunks))
        copy_s = time.perf_counter() - started
        print("VACUUM ANALYZE ...")
        await raw.execute("VACUUM ANALYZE session_chunks")
        await raw.execute("VACUUM ANALYZE runtime_sessions")
    finally:
        await raw.close()
    print("building the model's shared HNSW index ...")
    t0 = time.perf_counter()
    async with engine.begin() as conn:
        await ensure_model_index(conn, IDENTITY)
    shared_s = time.perf_counter() - t0
    print(f"  {shared_s:.1f} s; building own indexes of accounts over {exact_max} chunks ...")
    async with engine.begin() as conn:
        built = await ensure_large_account_indexes(conn, exact_max)
    for b in built:
        print(f"  {b.index_name}: {b.chunks} chunks in {b.seconds:.1f} s")
    return {
        "loaded_at": now.isoformat(),
        "copy_s": round(copy_s, 1),
        "shared_index_s": round(shared_s, 1),
        "account_index_s": {str(b.account_id): round(b.seconds, 1) for b in built},
        "load_total_s": round(time.perf_counter() - started, 1),
    }


async def index_options(engine: AsyncEngine, account_id: uuid.UUID) -> str:
    """The build parameters of the account's own index (under the name it is registered by:
    a merge builds it under its other one), as PostgreSQL stores them."""
    async with engine.connect() as conn:
        name = await valid_account_index(conn, account_id, IDENTITY)
        options = (
            await conn.execute(
                sa.text("SELECT reloptions FROM pg_class WHERE relname = :n"), {"n": name}
            )
        ).scalar()
    return ", ".join(options or ["defaults"])


async def sessions_of(engine: AsyncEngine) -> dict[str, list[Any]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT account_id, id FROM runtime_sessions ORDER BY account_id, id")
        )
        out: dict[str, list[Any]] = {}
        for account_id, sid in rows:
            out.setdefault(str(account_id), []).append(sid)
        return out
