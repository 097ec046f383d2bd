"""Which HNSW index kind, measured side by side (issue #39): pgvector's full-precision
`vector` index (the product's today), a `halfvec` expression index (half the bytes per
distance), and a `binary_quantize` expression index (one bit a dimension), the last two
re-ranked in full precision, on one table of clustered vectors:

    python -m bench.latency.index_kinds [--size 100000] [--probes 200] [--kinds vector,halfvec]
        [--out FILE]

A fresh database `ss_index_kinds` holds `size` chunks in sessions of 5 to 40, each session
on one topic (its centre plus noise 0.9: same-topic cosines near 0.55, the clustered world
of bench/latency/clustered.py), sessions of one topic spread across the table. Each probe is
a chunk, its lookup its 25 nearest of other sessions (the filter HNSW applies after its
scan), as the product's: iterative scan (relaxed order) at ef_search 400, 100 candidates
(400 for the binary index, whose distances are coarse) re-ranked by the exact cosine. Per
kind: build time, index size, chunk recall@25 and session recall@10 against an exact scan,
a lookup's p50 and p95, and 400 lookups in a row (the lookups of a page of 50 sessions of 8
probes). Never part of the test run."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from bench.common.databases import libpq, recreate
from bench.common.paths import result, size_name
from bench.common.synthetic import DIMS, unit_rows
from config.settings import Settings
from data.server import resolve_url

NOISE = 0.9
CHUNKS_PER_TOPIC = 83
PER_PROBE, OVERFETCH, EF_SEARCH, PAGE_LOOKUPS = 25, 100, 400, 400
SEED = 39


@dataclass(frozen=True, slots=True)
class Kind:
    key: str  # its name on the command line
    name: str
    index: str  # the CREATE INDEX's method and operator class over an expression
    order: str  # the scan's ORDER BY, the probe's vector as $1
    candidates: int  # rows the scan reads before the exact re-rank


KINDS = (
    Kind(
        "vector",
        "vector (today)",
        "hnsw (embedding vector_cosine_ops)",
        "embedding <=> $1",
        OVERFETCH,
    ),
    Kind(
        "halfvec",
        "halfvec",
        f"hnsw ((embedding::halfvec({DIMS})) halfvec_cosine_ops)",
        f"embedding::halfvec({DIMS}) <=> $1::halfvec({DIMS})",
        OVERFETCH,
    ),
    Kind(
        "binary",
        "binary_quantize",
        f"hnsw ((binary_quantize(embedding)::bit({DIMS})) bit_hamming_ops)",
        f"binary_quantize(embedding)::bit({DIMS}) <~> binary_quantize($1::vector({DIMS}))",
        4 * OVERFETCH,
    ),
)


def world(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, each row's session): sessions of 5 to 40 chunks, each on one topic."""
    topics = max(1, round(size / CHUNKS_PER_TOPIC))
    centres = unit_rows(rng, topics)
    sessions, rows, n = [], [], 0
    while n < size:
        length = min(int(rng.integers(5, 41)), size - n)
        topic = int(rng.integers(topics))
        noise = rng.standard_normal((length, DIMS)).astype(np.float32) * NOISE / np.sqrt(DIMS)
        part = centres[topic] + noise
        rows.append(part / np.linalg.norm(part, axis=1, keepdims=True))
        sessions += [len(rows) - 1] * length
        n += length
    return np.concatenate(rows).astype(np.float32), np.asarray(sessions)


async def load(conn: asyncpg.Connection, vectors: np.ndarray, sessions: np.ndarray) -> None:
    await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    await register_vector(conn)
    await conn.execute(
        f"CREATE TABLE kinds (id int PRIMARY KEY, session int NOT NULL, "
        f"embedding vector({DIMS}) NOT NULL)"
    )
    order = np.random.default_rng(SEED).permutation(len(vectors))  # topics spread out
    records = ((int(i), int(sessions[i]), vectors[i]) for i in order)
    await conn.copy_records_to_table(
        "kinds", records=records, columns=["id", "session", "embedding"]
    )
    await conn.execute("ALTER TABLE kinds ALTER COLUMN embedding SET STORAGE MAIN")
    await conn.execute("VACUUM ANALYZE kinds")


async def exact(conn: asyncpg.Connection, vector: np.ndarray, session: int) -> list[int]:
    rows = await conn.fetch(
        "SELECT id FROM kinds WHERE session <> $2 ORDER BY (embedding <=> $1) + 0, id LIMIT $3",
        vector,
        session,
        PER_PROBE,
    )
    return [r["id"] for r in rows]


async def approximate(
    conn: asyncpg.Connection, kind: Kind, vector: np.ndarray, session: int
) -> list[int]:
    rows = await conn.fetch(
        f"SELECT id FROM (SELECT id, embedding FROM kinds WHERE session <> $2 "
        f"ORDER BY {kind.order} LIMIT $3) c ORDER BY embedding <=> $1, id LIMIT $4",
        vector,
        session,
        kind.candidates,
        PER_PROBE,
    )
    return [r["id"] for r in rows]


def session_order(ids: Sequence[int], sessions: np.ndarray) -> list[int]:
    """The sessions of a lookup's rows, nearest first, each once."""
    return list(dict.fromkeys(int(sessions[i]) for i in ids))


async def measure_kind(
    conn: asyncpg.Connection,
    kind: Kind,
    probes: Sequence[int],
    vectors: np.ndarray,
    sessions: np.ndarray,
    truths: dict[int, list[int]],
) -> dict[str, str]:
    started = time.perf_counter()
    await conn.execute(
        f"CREATE INDEX kinds_idx ON kinds USING {kind.index} WITH (m = 16, ef_construction = 200)"
    )
    built_s = time.perf_counter() - started
    size = await conn.fetchval("SELECT pg_size_pretty(pg_relation_size('kinds_idx'))")
    await conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
    await conn.execute("SET hnsw.iterative_scan = relaxed_order")
    await conn.execute("SET enable_seqscan = off")
    for p in probes[:20]:  # warm: the index read once from disk before timing
        await approximate(conn, kind, vectors[p], int(sessions[p]))
    took, chunk_recall, session_recall = [], [], []
    for p in probes:
        started = time.perf_counter()
        found = await approximate(conn, kind, vectors[p], int(sessions[p]))
        took.append((time.perf_counter() - started) * 1000)
        truth = truths[p]
        chunk_recall.append(len(set(found) & set(truth)) / len(truth))
        wanted = session_order(truth, sessions)[:10]
        got = set(session_order(found, sessions)[:10])
        session_recall.append(sum(s in got for s in wanted) / len(wanted))
    page = [probes[n % len(probes)] for n in range(PAGE_LOOKUPS)]
    started = time.perf_counter()
    for p in page:
        await approximate(conn, kind, vectors[p], int(sessions[p]))
    page_ms = (time.perf_counter() - started) * 1000
    await conn.execute("RESET enable_seqscan")
    await conn.execute("DROP INDEX kinds_idx")
    return {
        "kind": kind.name,
        "build": f"{built_s:.0f} s",
        "size": size,
        "chunk recall@25": f"{statistics.mean(chunk_recall):.3f}",
        "session recall@10": f"{statistics.mean(session_recall):.3f}",
        "p50": f"{statistics.median(took):.1f} ms",
        "p95": f"{np.percentile(took, 95):.1f} ms",
        f"{PAGE_LOOKUPS} lookups": f"{page_ms:.0f} ms",
    }


async def run(size: int, probes_n: int, kinds: Sequence[Kind] = KINDS) -> list[dict[str, str]]:
    settings = Settings.from_env()
    url = await recreate(resolve_url(settings.database_url, settings.data_dir), "ss_index_kinds")
    rng = np.random.default_rng(SEED)
    vectors, sessions = world(size, rng)
    conn = await asyncpg.connect(libpq(url))
    try:
        started = time.perf_counter()
        await load(conn, vectors, sessions)
        print(f"{size} chunks loaded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        probes = [int(p) for p in rng.choice(size, probes_n, replace=False)]
        truths = {p: await exact(conn, vectors[p], int(sessions[p])) for p in probes}
        rows = []
        for kind in kinds:
            rows.append(await measure_kind(conn, kind, probes, vectors, sessions, truths))
            print(rows[-1], file=sys.stderr)
        return rows
    finally:
        await conn.close()


def table(rows: list[dict[str, str]]) -> str:
    heads = list(rows[0])
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(row[h] for h in heads) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.latency.index_kinds", description=__doc__
    )
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--kinds", default=",".join(k.key for k in KINDS))
    parser.add_argument("--out", help="bench/results/index-kinds-<size>.md (100k, 1m)")
    opts = parser.parse_args(argv)
    asked = opts.kinds.split(",")
    kinds = [k for k in KINDS if k.key in asked]
    if len(kinds) != len(asked):
        parser.error(f"--kinds: each of {[k.key for k in KINDS]}")
    rows = asyncio.run(run(opts.size, opts.probes, kinds))
    text = (
        f"# HNSW index kinds at {opts.size:,} chunks\n\n"
        f"`python -m bench.latency.index_kinds --size {opts.size} --probes {opts.probes} "
        f"--kinds {opts.kinds}` "
        "(see its docstring). One run, side by side, on the shared 2-core machine.\n\n"
        + table(rows)
        + "\n"
    )
    print(text)
    out = opts.out or result("index-kinds", size_name(opts.size))
    with open(out, "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
