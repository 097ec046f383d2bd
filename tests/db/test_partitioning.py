"""The Citus layout tried locally: session_chunks hash-partitioned by account_id; a query of
one account touches one partition, with the account as a literal or a prepared parameter."""

from __future__ import annotations

import re

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.model_indexes import comparable_predicate
from tests.support.crowded import IDENTITY, crowded_world

PARTITIONS = 8
QUERY = (
    "SELECT id FROM chunks_by_account c WHERE c.account_id = {a} AND {p} "
    "ORDER BY (c.embedding::vector(384)) <=> (SELECT embedding::vector(384) "
    "FROM chunks_by_account WHERE account_id = {a} LIMIT 1), c.id LIMIT 25"
)


async def test_a_query_of_one_account_prunes_to_one_partition(engine: AsyncEngine) -> None:
    account, _, _ = await crowded_world(engine)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "CREATE TABLE chunks_by_account (LIKE session_chunks INCLUDING DEFAULTS, "
                "PRIMARY KEY (account_id, id)) PARTITION BY HASH (account_id)"
            )
        )
        for r in range(PARTITIONS):
            await conn.execute(
                sa.text(
                    f"CREATE TABLE chunks_by_account_{r} PARTITION OF chunks_by_account "
                    f"FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {r})"
                )
            )
        await conn.execute(sa.text("INSERT INTO chunks_by_account SELECT * FROM session_chunks"))
        filled = (
            await conn.execute(sa.text("SELECT count(DISTINCT tableoid) FROM chunks_by_account"))
        ).scalar_one()
        assert filled > 1, "the accounts landed in one partition: the test proves nothing"
        literal = f"'{account}'::uuid"
        query = QUERY.format(a=literal, p=comparable_predicate(IDENTITY, "c"))
        plan = "\n".join(r[0] for r in await conn.execute(sa.text(f"EXPLAIN (COSTS OFF) {query}")))
        scanned = set(re.findall(r"chunks_by_account_\d+", plan))
        assert len(scanned) == 1, plan

        generic = QUERY.format(a="$1", p=comparable_predicate(IDENTITY, "c"))
        await conn.execute(sa.text(f"PREPARE by_account(uuid) AS {generic}"))
        await conn.execute(sa.text("SET LOCAL plan_cache_mode = force_generic_plan"))
        analysed = "\n".join(
            r[0]
            for r in await conn.execute(
                sa.text(
                    "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                    f"EXECUTE by_account({literal})"
                )
            )
        )
        assert f"Subplans Removed: {PARTITIONS - 1}" in analysed, analysed
        rows = [r[0] for r in await conn.execute(sa.text(f"EXECUTE by_account({literal})"))]
        assert len(rows) == 25
