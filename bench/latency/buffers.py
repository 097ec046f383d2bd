"""PostgreSQL's shared buffers as the cold-account benchmark reads them: emptied, counted by
what the pages belong to (the chunks' table, the account's own index, the table's other
indexes), and whether an autovacuum worker is running meanwhile."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

# The account's pages in shared_buffers, by what they belong to: the chunks' table (its
# TOAST too), the account's own HNSW index, and the table's other indexes.
IN_BUFFERS = """
SELECT CASE WHEN c.relname = 'session_chunks' OR c.oid = t.reltoastrelid
            OR c.oid = (SELECT indexrelid FROM pg_index WHERE indrelid = t.reltoastrelid LIMIT 1)
            THEN 'table' WHEN c.relname LIKE 'session_chunks_hnsw_a_%' THEN 'own index'
            ELSE 'other indexes' END AS part, count(*)
FROM pg_buffercache b
JOIN pg_class c ON b.relfilenode = pg_relation_filenode(c.oid)
JOIN pg_class t ON t.relname = 'session_chunks'
WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND (c.oid = t.oid OR c.oid = t.reltoastrelid
       OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (t.oid, t.reltoastrelid)))
GROUP BY 1
"""
PARTS = ("table", "own index", "other indexes")


async def evict_buffers(engine: AsyncEngine) -> None:
    """Every page out of PostgreSQL's shared buffers (the whole server's; dirty ones written
    first)."""
    async with engine.connect() as conn:
        await conn.execute(sa.text("SELECT pg_buffercache_evict_all()"))


async def in_buffers(engine: AsyncEngine) -> dict[str, int]:
    async with engine.connect() as conn:
        rows = (await conn.execute(sa.text(IN_BUFFERS))).all()
    return {part: int(n) for part, n in rows}


async def autovacuuming(engine: AsyncEngine) -> bool:
    async with engine.connect() as conn:
        running = await conn.execute(
            sa.text(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker' "
                "AND datname = current_database()"
            )
        )
        return bool(running.scalar_one())
