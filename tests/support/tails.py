"""An own index's tail made in a test: rows numbered as written after the index's build."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine


async def into_tail(engine: AsyncEngine, account: str, every: int = 3) -> int:
    """Number every `every`-th row of the account (in id order, so as many as its rows
    allow, whatever ids they drew) as written after its own index's build, as a later
    file's rows are: out of the graph, into the tail. Returns how many."""
    async with engine.begin() as conn:
        moved = await conn.execute(
            sa.text(
                "UPDATE session_chunks SET written_seq = nextval('session_chunks_written_seq') "
                "WHERE account_id = :a AND id IN (SELECT id FROM (SELECT id, row_number() "
                "OVER (ORDER BY id) AS n FROM session_chunks WHERE account_id = :a) AS o "
                "WHERE o.n % :every = 0)"
            ),
            {"a": account, "every": every},
        )
    return int(moved.rowcount)
