"""The storage side of the benchmark: index size and build time with vector and halfvec,
and hash partitioning by account_id (the Citus layout, locally)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.latency.corpus import IDENTITY, Account
from bench.latency.measure import PER_PROBE, exact, probes_of
from bench.latency.report import Report
from data.account_indexes import account_predicate, valid_account_index
from data.model_indexes import HNSW_EF_CONSTRUCTION, HNSW_M, comparable_predicate, prepare_build


async def storage(
    report: Report,
    engine: AsyncEngine,
    account: Account,
    sessions: list[uuid.UUID],
    meta: dict[str, Any],
) -> None:
    report.say("## Index size and build time, vector and halfvec (largest account)")
    report.say()
    predicate = account_predicate(account.id, IDENTITY)
    async with engine.connect() as conn:
        name = await valid_account_index(conn, account.id, IDENTITY)
        rows = (
            await conn.execute(sa.text(f"SELECT count(*) FROM session_chunks WHERE {predicate}"))
        ).scalar_one()
        vec_size = (
            await conn.execute(
                sa.text("SELECT pg_relation_size(CAST(:n AS regclass))"), {"n": name}
            )
        ).scalar_one()
        shared = (
            await conn.execute(
                sa.text("SELECT index_name FROM embedding_models WHERE model_identity = :m"),
                {"m": str(IDENTITY)},
            )
        ).scalar_one()
        shared_size, shared_rows = (
            await conn.execute(
                sa.text(
                    "SELECT pg_relation_size(CAST(:n AS regclass)), (SELECT count(*) FROM "
                    f"session_chunks WHERE {comparable_predicate(IDENTITY)})"
                ),
                {"n": shared},
            )
        ).one()
    half = "bench_halfvec_probe_idx"
    async with engine.begin() as conn:
        await conn.execute(sa.text(f"DROP INDEX IF EXISTS {half}"))
        await prepare_build(conn, rows, 384)  # the product's budget for a build
        t0 = time.perf_counter()
        await conn.execute(
            sa.text(
                f"CREATE INDEX {half} ON session_chunks USING hnsw "
                "((embedding::halfvec(384)) halfvec_cosine_ops) "
                f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
                f"WHERE {predicate}"
            )
        )
        half_s = time.perf_counter() - t0
        half_size = (await conn.execute(sa.text(f"SELECT pg_relation_size('{half}')"))).scalar_one()
    recall = await halfvec_recall(report, engine, account, sessions, predicate)
    async with engine.begin() as conn:
        await conn.execute(sa.text(f"DROP INDEX IF EXISTS {half}"))
    built = meta["account_index_s"].get(str(account.id), float("nan"))
    report.say("| index | rows | size | bytes per vector | build time | chunk recall@25 |")
    report.say("|---|---|---|---|---|---|")
    report.say(
        f"| own, vector(384) | {rows} | {vec_size / 2**20:.1f} MiB | {vec_size / rows:.0f} "
        f"| {built} s | see above |"
    )
    report.say(
        f"| own, halfvec(384) | {rows} | {half_size / 2**20:.1f} MiB | {half_size / rows:.0f} "
        f"| {half_s:.1f} s | {recall:.3f} |"
    )
    report.say(
        f"| shared model index, vector(384) | {shared_rows} | {shared_size / 2**20:.1f} MiB "
        f"| {shared_size / shared_rows:.0f} | {meta['shared_index_s']} s | see above |"
    )
    report.say()


async def halfvec_recall(
    report: Report, engine: AsyncEngine, account: Account, sessions: list[uuid.UUID], predicate: str
) -> float:
    sql = f"""
    SELECT chunk_id FROM (SELECT c.id AS chunk_id, (c.embedding::halfvec(384)) <=> q.v AS d
      FROM session_chunks c, (SELECT embedding::halfvec(384) AS v, runtime_session_id AS s
        FROM session_chunks WHERE account_id = :a AND id = :probe) q
      WHERE {
        predicate.replace("account_id", "c.account_id")
        .replace(" embedding", " c.embedding")
        .replace(" redaction", " c.redaction")
    }
        AND c.runtime_session_id <> q.s
      ORDER BY (c.embedding::halfvec(384)) <=> q.v LIMIT :over) a
    ORDER BY d, chunk_id LIMIT {PER_PROBE}"""
    values = []
    for s in report.sample(sessions, 6):
        p = await probes_of(engine, account.id, s)
        truth = await exact(engine, p)
        for n, chunk in enumerate(p.chunks):
            want = {h.chunk_id for h in truth if h.probe == n}
            if not want:
                continue
            async with engine.begin() as conn:
                await conn.execute(
                    sa.text(
                        "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                        "set_config('hnsw.ef_search', :ef, true)"
                    ),
                    {"ef": str(report.tuning.ef_search)},
                )
                got = {
                    r[0]
                    for r in await conn.execute(
                        sa.text(sql),
                        {"a": account.id, "probe": chunk, "over": report.tuning.overfetch},
                    )
                }
            values.append(len(want & got) / len(want))
    return float(np.mean(values))


async def partitions(report: Report, engine: AsyncEngine, accounts: list[uuid.UUID]) -> None:
    """The same rows in a table hash-partitioned by account_id: a query of one account
    touches one partition, with a literal and as a generic prepared plan."""
    report.say("## Hash partitioning by account_id (the Citus layout, locally)")
    report.say()
    async with engine.begin() as conn:
        await conn.execute(sa.text("DROP TABLE IF EXISTS bench_chunks_by_account"))
        await conn.execute(
            sa.text(
                "CREATE TABLE bench_chunks_by_account (LIKE session_chunks INCLUDING DEFAULTS, "
                "PRIMARY KEY (account_id, id)) PARTITION BY HASH (account_id)"
            )
        )
        for r in range(8):
            await conn.execute(
                sa.text(
                    f"CREATE TABLE bench_chunks_by_account_{r} PARTITION OF "
                    f"bench_chunks_by_account FOR VALUES WITH (MODULUS 8, REMAINDER {r})"
                )
            )
        await conn.execute(
            sa.text(
                "INSERT INTO bench_chunks_by_account SELECT * FROM session_chunks "
                "WHERE account_id = ANY(:a)"
            ),
            {"a": accounts},
        )
        await conn.execute(sa.text("ANALYZE bench_chunks_by_account"))
        query = (
            "SELECT id FROM bench_chunks_by_account c WHERE c.account_id = {a} "
            f"AND {comparable_predicate(IDENTITY, 'c')} ORDER BY (c.embedding::vector(384)) "
            "<=> (SELECT embedding::vector(384) FROM bench_chunks_by_account WHERE "
            "account_id = {a} LIMIT 1) LIMIT 25"
        )
        literal = f"'{accounts[0]}'::uuid"
        plan = [
            r[0]
            for r in await conn.execute(sa.text("EXPLAIN (COSTS OFF) " + query.format(a=literal)))
        ]
        await conn.execute(sa.text("PREPARE by_account(uuid) AS " + query.format(a="$1")))
        await conn.execute(sa.text("SET LOCAL plan_cache_mode = force_generic_plan"))
        generic = [
            r[0]
            for r in await conn.execute(
                sa.text(
                    "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                    f"EXECUTE by_account({literal})"
                )
            )
        ]
        await conn.execute(sa.text("DEALLOCATE by_account"))
        await conn.execute(sa.text("DROP TABLE bench_chunks_by_account"))
    touched = sorted(
        {w for ln in plan for w in ln.split() if w.startswith("bench_chunks_by_account_")}
    )
    removed = [ln.strip() for ln in generic if "Subplans Removed" in ln]
    report.say(
        f"8 hash partitions, {len(accounts)} accounts copied in. Plan with the account as a "
        f"literal scans {len(touched)} partition(s) ({', '.join(touched)}); the generic "
        f"prepared plan prunes at execution: {'; '.join(removed) or 'no pruning line'}."
    )
    report.say()
