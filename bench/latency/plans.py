"""The index side of the benchmark: plans under repeated prepared executions, and recall
against ef_search and over-fetch."""

from __future__ import annotations

import json
import uuid

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bench.common.timing import clocked, p50
from bench.latency.corpus import IDENTITY, Account
from bench.latency.measure import (
    FLOOR,
    PER_PROBE,
    Probe,
    exact,
    path_of,
    probes_of,
    recalls,
    served,
)
from bench.latency.report import Report
from data.comparison_sql import first_statement
from data.engine import make_engine
from data.lookups import Ask
from resolvers.rules import ranking
from resolvers.rules.lookup_path import LookupPath
from resolvers.tuning import Tuning
from values.lookups import Hit


async def stability(report: Report, url: str, account: Account, sessions: list[uuid.UUID]) -> None:
    """Latency of the first execution on a fresh connection against executions 11-30 on
    it (asyncpg prepares and caches the statement), and the plan after them."""
    fresh = make_engine(url, pool_size=1, statement_timeout_ms=120_000)
    try:
        probe = await probes_of(fresh, account.id, sessions[0])
        path = await path_of(fresh, account.id, report.tuning)
        runs = [(await clocked(served(fresh, probe, path, report.tuning)))[0] for _ in range(30)]
        async with fresh.begin() as conn:
            await conn.execute(sa.text("SET LOCAL plan_cache_mode = force_generic_plan"))
            plan = await explain(conn, probe, path, report.tuning)
    finally:
        await fresh.dispose()
    report.say("## Plans under prepared statements")
    report.say()
    report.say(
        f"Largest account, {path.value} path, one connection: first execution "
        f"{runs[0]:.1f} ms, executions 11-30 p50 {p50(runs[10:]):.1f} ms "
        f"(ratio {p50(runs[10:]) / runs[0]:.2f}). Plan of the statement even when "
        f"forced generic: `{plan}`."
    )
    report.say()
    ratio = p50(runs[10:]) / runs[0]
    report.target(
        "p50 after 10 prepared executions within 1.2x of the first",
        f"{ratio:.2f}",
        ratio <= 1.2,
    )


async def explain(conn: AsyncConnection, probe: Probe, path: LookupPath, tuning: Tuning) -> str:
    """The scans in the plan of the comparison's first statement for the probe's session."""
    sql = first_statement([IDENTITY], probe.account, filtered=False)
    params = {
        "account_id": probe.account,
        "asks": json.dumps([Ask(0, probe.session).as_json()]),
        "branch_models": [str(IDENTITY)],
        "probes": ranking.SIMILAR_PROBE_CHUNKS,
        "exact": False,
        "cap": 0 if path.approximate else 100_000_000,
        "own_index": path is LookupPath.ACCOUNT_INDEX,
        "per_probe": PER_PROBE,
        "floor_0": FLOOR,
        "overfetch": tuning.overfetch,
    }
    rows = await conn.execute(sa.text("EXPLAIN (COSTS OFF) " + sql), params)
    lines = [r[0].strip() for r in rows]
    scans = [ln for ln in lines if "Index Scan" in ln or "Seq Scan" in ln]
    return "; ".join(s.replace("->", "").strip() for s in scans)


async def ef_sweep(
    report: Report, engine: AsyncEngine, account: Account, sessions: list[uuid.UUID]
) -> None:
    report.say("## ef_search and over-fetch on the largest account (account_index path)")
    report.say()
    report.say("| ef_search | over-fetch | chunk recall@25 | session recall@10 | SQL p50 |")
    report.say("|---|---|---|---|---|")
    probes = [await probes_of(engine, account.id, s) for s in report.sample(sessions, 12)]
    probes = [p for p in probes if p.chunks]
    truths = [await exact(engine, p) for p in probes]
    for ef, over in ((40, 40), (100, 100), (200, 100), (400, 100), (1000, 100)):
        tuning = Tuning(ef_search=ef, overfetch=over)
        chunk, sess, times = await lookups(
            engine, probes, truths, LookupPath.ACCOUNT_INDEX, tuning, 2
        )
        report.say(
            f"| {ef} | {over} | {np.mean(chunk):.3f} | {np.mean(sess):.3f} | {p50(times):.1f} |"
        )
    report.say()
    report.say("The shared model index (the fallback before an account's own index exists):")
    report.say()
    chunk, sess, times = await lookups(engine, probes, truths, LookupPath.INDEX, report.tuning)
    report.say(
        f"- shared index, ef_search {report.tuning.ef_search}: chunk recall@25 "
        f"{np.mean(chunk):.3f}, session recall@10 {np.mean(sess):.3f}, "
        f"SQL p50 {p50(times):.1f} ms"
    )
    report.say()


async def lookups(
    engine: AsyncEngine,
    probes: list[Probe],
    truths: list[list[Hit]],
    path: LookupPath,
    tuning: Tuning,
    rounds: int = 1,
) -> tuple[list[float], list[float], list[float]]:
    """(chunk recall of each probe, session recall of each session, SQL ms of each lookup)
    of the probes' served lookups on the path, against their exact answers."""
    chunk: list[float] = []
    sessions: list[float] = []
    times: list[float] = []
    for _ in range(rounds):
        for p, truth in zip(probes, truths, strict=True):
            ms, got = await clocked(served(engine, p, path, tuning))
            times.append(ms)
            per_probe, session = recalls(got, truth)
            chunk += per_probe
            sessions.append(session)
    return chunk, sessions, times
