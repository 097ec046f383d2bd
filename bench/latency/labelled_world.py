"""The two labelled corpora (bench/quality/labelled.py) embedded by the product's own models,
then scaled (issue #29): each corpus imported and indexed as `bench.quality` does (the
lexical model by default; MiniLM when asked, cached by text), then sessions sampled with
replacement into accounts of growing size. A sampled session is copied with new ids, its
chunks' vectors as the model made them, so a large account repeats every session of its
corpus many times, as a platform whose agents run the same tasks again would."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg
import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.databases import libpq, recreate, with_database
from bench.latency.corpus import Account, now_utc
from bench.latency.database import migrated, store_meta, stored_meta
from bench.quality import served
from bench.quality.labelled import CORPORA, Corpus
from bench.quality.pipeline import MODELS, registry
from config.settings import Settings
from data import import_rows
from data import tables as t
from data.account_indexes import ensure_large_account_indexes
from data.engine import make_engine
from data.migrate import migrate
from data.model_identity import ModelIdentity
from data.model_indexes import build_model_index, index_name
from indexer.commands import config_from
from indexer.worker import index_once

# The accounts each corpus is scaled into (chunks of its model, reached by whole sessions).
SCALED = {"coding-agents": (2_500, 10_000, 25_000, 100_000), "tau-bench": (25_000,)}
SEED = 2929


@dataclass(frozen=True, slots=True)
class RealAccount:
    """An account of the labelled world: its corpus, its model, and the account as the latency
    sections see it (size: its comparable chunks)."""

    corpus: str
    model: str  # a key of bench.quality.pipeline.MODELS
    account: Account
    copied_from: uuid.UUID | None  # None: the corpus as imported


def _source_id(corpus: Corpus, model: str) -> uuid.UUID:
    """The account the corpus is imported into under the model (its own id for lexical)."""
    if model == "lexical":
        return corpus.account_id
    return uuid.uuid5(corpus.account_id, f"model:{model}")


async def prepare(
    server_url: str, database: str, models: list[str], exact_max: int, fresh: bool
) -> tuple[str, list[RealAccount], dict[str, Any]]:
    """The database of the labelled world (loaded once, then reused): its URL, its accounts
    (each corpus as imported, then its scaled copies), and what loading measured."""
    url = with_database(server_url, database)
    wanted = {"seed": SEED, "models": models, "scaled": SCALED, "exact_max": exact_max}
    meta = None if fresh else await stored_meta(url, "labelled")
    if meta is None or any(meta.get(k) != v for k, v in wanted.items()):
        await recreate(server_url, database)
        meta = {**wanted, **await _load(url, models, exact_max)}
        await store_meta(url, meta, "labelled")
    else:
        print(f"reusing database {database} (loaded {meta['loaded_at']})")
        await migrated(url)
    accounts = [
        RealAccount(a["corpus"], a["model"], _account(a), _uuid_or_none(a["copied_from"]))
        for a in meta["accounts"]
    ]
    return url, accounts, meta


def _account(a: dict[str, Any]) -> Account:
    return Account(uuid.UUID(a["id"]), a["name"], a["key"], int(a["chunks"]))


def _uuid_or_none(value: str | None) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(value)


async def _load(url: str, models: list[str], exact_max: int) -> dict[str, Any]:
    settings = Settings.from_env()
    engine = make_engine(url, statement_timeout_ms=0)
    accounts: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}
    try:
        await migrate(engine)
        corpora = [load() for load in CORPORA.values()]
        for corpus in corpora:
            started = time.perf_counter()
            await _embedded(engine, settings, corpus, models)
            seconds[f"{corpus.name} imported and indexed"] = round(time.perf_counter() - started, 1)
        identities = await _drop_shared(engine)  # the copies are indexed in one pass each
        started = time.perf_counter()
        for corpus in corpora:
            for model in models:
                source = _source_id(corpus, model)
                accounts.append(await _described(engine, corpus.name, model, source, None))
                for size in SCALED[corpus.name]:
                    accounts.append(await _scaled(engine, url, corpus.name, model, source, size))
        seconds["copies"] = round(time.perf_counter() - started, 1)
        await _vacuum(url)
        started = time.perf_counter()
        for identity in identities:
            async with engine.begin() as conn:
                await build_model_index(conn, identity)
        seconds["shared indexes"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        async with engine.begin() as conn:
            await ensure_large_account_indexes(conn, exact_max)
        seconds["own indexes"] = round(time.perf_counter() - started, 1)
    finally:
        await engine.dispose()
    return {"loaded_at": now_utc().isoformat(), "accounts": accounts, "seconds": seconds}


async def _embedded(
    engine: AsyncEngine, settings: Settings, corpus: Corpus, models: list[str]
) -> None:
    """The corpus imported as plain activity and indexed by each model, each in an account
    of its own (the lexical one under the corpus's own id, as bench.quality has it)."""
    await served.load(engine, corpus, MODELS["lexical"])
    reg, config = registry(), config_from(settings, progress=False)
    for model in models:
        source = _source_id(corpus, model)
        if source != corpus.account_id:
            await _copy_activity(engine, corpus, source, model)
        await index_once(engine, reg, config, account_ids=[source])


async def _copy_activity(
    engine: AsyncEngine, corpus: Corpus, account_id: uuid.UUID, model: str
) -> None:
    """The corpus's sessions and activity under another account set to the model."""
    provider, name, dims = MODELS[model]
    async with engine.begin() as conn:
        await _new_account(conn, account_id, f"bench {corpus.name} {model}", corpus.account_id)
        await import_rows.replace_embedding_setting(
            conn,
            account_id,
            {
                "enabled": True,
                "provider": provider,
                "model": name,
                "dimensions": dims,
                "scope": "full",
                "daily_cap_usd": None,
            },
        )
        params = {"to": account_id, "source": corpus.account_id}
        await conn.execute(
            sa.text(
                "INSERT INTO runtime_sessions SELECT :to, id, title, source_type, source_id, "
                "reference, status, started_at, last_activity_at FROM runtime_sessions "
                "WHERE account_id = :source"
            ),
            params,
        )
        await conn.execute(
            sa.text(
                "INSERT INTO runtime_session_activity SELECT :to, id, runtime_session_id, "
                "ordinal, occurred_at, role, kind, content, api_usage_id "
                "FROM runtime_session_activity WHERE account_id = :source"
            ),
            params,
        )


async def _new_account(conn: Any, account_id: uuid.UUID, name: str, like: uuid.UUID) -> str:
    """An account with the feature on, the setting of `like` and a key of its own; its key."""
    key = f"sk-bench-real-{account_id}"
    await import_rows.upsert_rows(conn, t.accounts, [{"account_id": account_id, "name": name}])
    await import_rows.replace_features(conn, account_id, ["similarSessions"])
    await import_rows.add_api_keys(conn, account_id, [(key, ["view_runtime_sessions"])])
    row = (
        await conn.execute(
            sa.text(
                "SELECT enabled, provider, model, dimensions, scope, daily_cap_usd "
                "FROM embedding_settings WHERE account_id = :a"
            ),
            {"a": like},
        )
    ).one_or_none()
    if row is not None:
        await import_rows.replace_embedding_setting(conn, account_id, dict(row._mapping))
    return key


async def _comparable(engine: AsyncEngine, account_id: uuid.UUID) -> dict[uuid.UUID, int]:
    """The account's sessions with comparable chunks, and how many each has."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT runtime_session_id, count(*) FROM session_chunks WHERE account_id = :a "
                "AND redaction_state = 'clear' AND embedding_state = 'embedded' "
                "GROUP BY runtime_session_id ORDER BY runtime_session_id"
            ),
            {"a": account_id},
        )
        return {r[0]: int(r[1]) for r in rows}


async def _described(
    engine: AsyncEngine, corpus: str, model: str, account_id: uuid.UUID, source: uuid.UUID | None
) -> dict[str, Any]:
    chunks = sum((await _comparable(engine, account_id)).values())
    async with engine.connect() as conn:
        name = (
            await conn.execute(
                sa.text("SELECT name FROM accounts WHERE account_id = :a"), {"a": account_id}
            )
        ).scalar_one()
    key = (
        CORPORA[corpus]().api_key
        if model == "lexical" and source is None
        else f"sk-bench-real-{account_id}"
    )
    return {
        "corpus": corpus,
        "model": model,
        "id": str(account_id),
        "name": name,
        "key": key,
        "chunks": chunks,
        "copied_from": None if source is None else str(source),
    }


async def _scaled(
    engine: AsyncEngine, url: str, corpus: str, model: str, source: uuid.UUID, size: int
) -> dict[str, Any]:
    """A new account of at least `size` comparable chunks: sessions of `source` sampled with
    replacement, each copied with new ids (a copy starts a minute after the one before)."""
    sizes = await _comparable(engine, source)
    ids = list(sizes)
    rng = np.random.default_rng([SEED, size, len(ids)])
    picked, total = [], 0
    while total < size:
        sid = ids[int(rng.integers(0, len(ids)))]
        picked.append(sid)
        total += sizes[sid]
    account_id = uuid.uuid5(source, f"scaled:{size}")
    async with engine.begin() as conn:
        label = f"{corpus} {model} x{size / 1000:g}k"
        await _new_account(conn, account_id, label, source)
    await _copy_sessions(url, account_id, source, picked)
    return await _described(engine, corpus, model, account_id, source)


async def _copy_sessions(
    url: str, account_id: uuid.UUID, source: uuid.UUID, picked: list[uuid.UUID]
) -> None:
    raw = await asyncpg.connect(libpq(url))
    try:
        async with raw.transaction():
            await raw.execute(
                "CREATE TEMP TABLE copied (id uuid, source uuid, n int) ON COMMIT DROP"
            )
            records = [(uuid.uuid4(), sid, n) for n, sid in enumerate(picked)]
            await raw.copy_records_to_table("copied", records=records)
            await raw.execute(COPY_SESSIONS, account_id, source)
            await raw.execute(COPY_CHUNKS, account_id, source)
    finally:
        await raw.close()


async def _vacuum(url: str) -> None:
    raw = await asyncpg.connect(libpq(url))
    try:
        await raw.execute("VACUUM ANALYZE session_chunks")
        await raw.execute("VACUUM ANALYZE runtime_sessions")
    finally:
        await raw.close()


COPY_SESSIONS = """
INSERT INTO runtime_sessions (account_id, id, title, source_type, source_id, reference, status,
  started_at, last_activity_at)
SELECT $1, m.id, s.title, s.source_type, s.source_id, s.reference, s.status,
  s.started_at + m.n * interval '1 minute', s.last_activity_at + m.n * interval '1 minute'
FROM copied m JOIN runtime_sessions s ON s.account_id = $2 AND s.id = m.source"""
COPY_CHUNKS = """
INSERT INTO session_chunks (account_id, id, runtime_session_id, source_kind, source_id,
  chunk_index, occurred_at, role, content, content_hash, redaction_state, embedding_state,
  embedding, embedding_model, embedded_at, search_terms)
SELECT $1, gen_random_uuid(), m.id, c.source_kind, c.source_id, c.chunk_index,
  c.occurred_at + m.n * interval '1 minute', c.role, c.content, c.content_hash,
  c.redaction_state, c.embedding_state, c.embedding, c.embedding_model, c.embedded_at,
  c.search_terms
FROM copied m JOIN session_chunks c ON c.account_id = $2 AND c.runtime_session_id = m.source"""


async def _drop_shared(engine: AsyncEngine) -> list[ModelIdentity]:
    """Drop every model's shared index (rows copied in would be inserted into it one by
    one); the identities, whose indexes build_model_index builds again."""
    async with engine.begin() as conn:
        rows = await conn.execute(sa.text("SELECT model_identity FROM embedding_models"))
        identities = [ModelIdentity.parse(r[0]) for r in rows]
        for identity in identities:
            await conn.execute(sa.text(f"DROP INDEX IF EXISTS {index_name(identity)}"))
    return identities
