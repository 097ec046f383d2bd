"""Worlds of clustered vectors (issue #29): accounts whose chunks sit in topics, each chunk its
topic's centre plus noise, at noise levels whose same-topic cosines span 0.4 to 0.9. With a
unit centre and noise of norm `noise` (N(0, noise²/d) per dimension) two chunks of one topic
meet at a cosine near 1 / (1 + noise²): noise 0.9 gives 0.55, the issue's world. Sessions of
5 to 40 chunks, each on one topic; a topic holds about 83 chunks whatever the account's
size (the issue's 25,000 chunks in 300 topics)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector
from tqdm import tqdm

from bench.common.databases import libpq, recreate, with_database
from bench.common.synthetic import DIMS, unit_rows
from bench.latency.corpus import (
    IDENTITY,
    Account,
    Row,
    chunk_row,
    copy_rows,
    now_utc,
    session_lengths,
    session_row,
)
from bench.latency.database import create_accounts, migrated, store_meta, stored_meta
from data.account_indexes import ensure_large_account_indexes
from data.engine import make_engine
from data.migrate import migrate
from data.model_indexes import ensure_model_index

# Noise norms and the same-topic cosine each gives (1 / (1 + noise²)): 0.41, 0.55, 0.70, 0.90.
NOISES = (1.2, 0.9, 0.65, 0.33)
SIZES = (600, 5_000, 25_000)  # chunks: one on the exact path, two on their own index
CHUNKS_PER_TOPIC = 25_000 / 300
LONGEST_SESSION = 40
SEED = 29


@dataclass(frozen=True, slots=True)
class ClusteredAccount:
    """An account of one world: its noise, and the account as the latency sections see it."""

    noise: float
    account: Account

    @property
    def expected_cosine(self) -> float:
        return 1 / (1 + self.noise**2)


def plan(
    noises: tuple[float, ...] = NOISES, sizes: tuple[int, ...] = SIZES
) -> list[ClusteredAccount]:
    """Every (noise, size) account, with stable ids and keys."""
    rng = np.random.default_rng(SEED)
    out = []
    for noise in noises:
        for size in sizes:
            account_id = uuid.UUID(bytes=rng.bytes(16), version=4)
            scale = f"{size // 1000}k" if size >= 1000 else str(size)
            name = f"clustered-{1 / (1 + noise**2):.2f}-{scale}"
            key = f"sk-bench-{name}-{SEED}"
            out.append(
                ClusteredAccount(noise, Account(account_id, name, key, size, LONGEST_SESSION))
            )
    return out


def generate(world: ClusteredAccount, index: int) -> tuple[list[Row], list[Row], float]:
    """(session rows, chunk rows, the mean same-topic cosine of a sample of pairs)."""
    account = world.account
    rng = np.random.default_rng([SEED, index])
    topics = max(2, round(account.size / CHUNKS_PER_TOPIC))
    centres = unit_rows(rng, topics)
    lengths = session_lengths(rng, account.size, account.longest)
    started_all = now_utc() - timedelta(days=30)
    sessions, chunks = [], []
    by_topic: dict[int, list[np.ndarray]] = {}
    account.sessions = []
    for s, n in enumerate(lengths):
        sid = uuid.UUID(bytes=rng.bytes(16), version=4)
        account.sessions.append(sid)
        topic = int(rng.integers(0, topics))
        started = started_all + timedelta(hours=s)
        title = f"clustered session {s} of {account.name} on topic {topic}"
        sessions.append(session_row(account.id, sid, title, str(sid)[:8], started, n))
        noise = rng.standard_normal((n, DIMS)).astype(np.float32) * (world.noise / np.sqrt(DIMS))
        vectors = centres[topic] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        by_topic.setdefault(topic, []).append(vectors)
        for j in range(n):
            content = f"passage {j} of session {s} of {account.name} on topic {topic}"
            chunks.append(
                chunk_row(
                    account.id,
                    uuid.UUID(bytes=rng.bytes(16), version=4),
                    sid,
                    uuid.UUID(bytes=rng.bytes(16), version=4),
                    j,
                    started + timedelta(minutes=j),
                    content,
                    vectors[j],
                    started,
                )
            )
    return sessions, chunks, _same_topic_cosine(rng, by_topic)


def _same_topic_cosine(rng: np.random.Generator, by_topic: dict[int, list[np.ndarray]]) -> float:
    rows = [np.concatenate(v) for v in by_topic.values() if sum(len(x) for x in v) > 1]
    cosines = []
    for _ in range(2000):
        topic = rows[int(rng.integers(0, len(rows)))]
        i, j = rng.choice(len(topic), 2, replace=False)
        cosines.append(float(topic[i] @ topic[j]))
    return float(np.mean(cosines))


async def prepare(
    server_url: str,
    database: str,
    exact_max: int,
    fresh: bool,
    noises: tuple[float, ...] = NOISES,
    sizes: tuple[int, ...] = SIZES,
) -> tuple[str, list[ClusteredAccount], dict[str, Any]]:
    """The database of the clustered worlds (loaded once, then reused): its URL, its
    accounts, and what was measured while loading."""
    worlds = plan(noises, sizes)
    url = with_database(server_url, database)
    wanted = {"seed": SEED, "noises": list(noises), "sizes": list(sizes), "exact_max": exact_max}
    meta = None if fresh else await stored_meta(url, "clustered")
    if meta is not None and all(meta.get(k) == v for k, v in wanted.items()):
        print(f"reusing database {database} (loaded {meta['loaded_at']})")
        await migrated(url)
        return url, worlds, meta
    await recreate(server_url, database)
    meta = {**wanted, **await _load(url, worlds, exact_max)}
    await store_meta(url, meta, "clustered")
    return url, worlds, meta


async def _load(url: str, worlds: list[ClusteredAccount], exact_max: int) -> dict[str, Any]:
    engine = make_engine(url, statement_timeout_ms=0)
    try:
        await migrate(engine)
        await create_accounts(engine, [w.account for w in worlds])
        cosines = await _copy(url, worlds)
        started = time.perf_counter()
        async with engine.begin() as conn:
            await ensure_model_index(conn, IDENTITY)
        shared_s = time.perf_counter() - started
        async with engine.begin() as conn:
            built = await ensure_large_account_indexes(conn, exact_max)
    finally:
        await engine.dispose()
    return {
        "loaded_at": now_utc().isoformat(),
        "same_topic_cosine": cosines,
        "shared_index_s": round(shared_s, 1),
        "account_index_s": {str(b.account_id): round(b.seconds, 1) for b in built},
    }


async def _copy(url: str, worlds: list[ClusteredAccount]) -> dict[str, float]:
    raw = await asyncpg.connect(libpq(url))
    await register_vector(raw)
    cosines = {}
    try:
        for n, world in enumerate(tqdm(worlds, desc="clustered worlds", leave=False)):
            sessions, chunks, cosine = generate(world, n)
            await copy_rows(raw, sessions, chunks)
            cosines[world.account.name] = round(cosine, 3)
        await raw.execute("VACUUM ANALYZE session_chunks")
        await raw.execute("VACUUM ANALYZE runtime_sessions")
    finally:
        await raw.close()
    return cosines
