"""Where a vector is stored and what an exact scan pays for it:

    python -m bench.latency.vector_storage [--database ss_quality_coding_agents]

On a database `bench.quality` left behind (real sessions: passages beside their vectors),
the largest account's exact scan of one probe (its 25 nearest by a sequential scan), timed
with session_chunks.embedding stored EXTERNAL (pgvector's default) and MAIN (migration
0007), the table rewritten by VACUUM FULL before each. Leaves the column MAIN. Never part
of the test run."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import asyncpg

from bench.common.databases import libpq, with_database
from config.settings import Settings
from data.server import resolve_url

SCAN = (
    "SELECT id FROM session_chunks WHERE account_id = $1 AND embedding_model = $2 "
    "AND embedding_state = 'embedded' AND redaction_state = 'clear' "
    "ORDER BY (embedding::vector({d}) <=> $3::vector({d})) + 0, id LIMIT 25"
)


async def layout(conn: asyncpg.Connection, storage: str) -> str:
    await conn.execute(f"ALTER TABLE session_chunks ALTER COLUMN embedding SET STORAGE {storage}")
    await conn.execute("VACUUM FULL session_chunks")
    sizes = await conn.fetchrow(
        "SELECT pg_size_pretty(pg_relation_size(oid)) AS heap, "
        "pg_size_pretty(pg_relation_size(reltoastrelid)) AS toast "
        "FROM pg_class WHERE relname = 'session_chunks'"
    )
    return f"heap {sizes['heap']}, TOAST {sizes['toast']}"


async def scan_ms(conn: asyncpg.Connection, rounds: int = 25) -> tuple[float, int]:
    account, model, n = await conn.fetchrow(
        "SELECT account_id, embedding_model, count(*) FROM session_chunks "
        "WHERE embedding_state = 'embedded' GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 1"
    )
    probe = await conn.fetchval(
        "SELECT embedding::text FROM session_chunks WHERE account_id = $1 "
        "AND embedding_model = $2 AND embedding_state = 'embedded' ORDER BY id LIMIT 1",
        account,
        model,
    )
    query = SCAN.format(d=int(model.rsplit("@", 1)[1]))
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        await conn.fetch(query, account, model, probe)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), n


async def compare(database: str) -> None:
    """The exact scan under each storage of the vector column, printed one line each."""
    settings = Settings.from_env()
    server = resolve_url(settings.database_url, settings.data_dir)
    conn = await asyncpg.connect(libpq(with_database(server, database)))
    try:
        await conn.execute("SET jit = off")
        for storage in ("EXTERNAL", "MAIN"):
            sizes = await layout(conn, storage)
            ms, n = await scan_ms(conn)
            print(f"{storage:8} {sizes}: exact scan of one probe over {n} chunks, p50 {ms:.1f} ms")
    finally:
        await conn.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database", default="ss_quality_coding_agents")
    asyncio.run(compare(parser.parse_args(argv).database))


if __name__ == "__main__":
    main()
