"""The index side of the benchmark: plans under repeated prepared executions, and recall
against ef_search and over-fetch."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.load import IDENTITY
from bench.measure import (
    FLOOR,
    PER_PROBE,
    Probe,
    exact,
    p50,
    path_of,
    probes_of,
    recalls,
    served,
    timed,
)
from bench.report import Report
from data.engine import make_engine
from resolvers.lookup_path import LookupPath
from resolvers.tuning import Tuning


class PlanSections(Report):
    """Sections of the report about the approximate index: plans and search width."""

    async def stability(self, url: str, account: Any, sessions: list[uuid.UUID]) -> None:
        """Latency of the first execution on a fresh connection against executions 11-30 on
        it (asyncpg prepares and caches the statement), and the plan after them."""
        fresh = make_engine(url, pool_size=1, statement_timeout_ms=120_000)
        try:
            probe = await probes_of(fresh, account.id, sessions[0])
            path = await path_of(fresh, account.id, self.tuning)
            runs = [
                (await timed(lambda: served(fresh, probe, path, self.tuning)))[0] for _ in range(30)
            ]
            async with fresh.begin() as conn:
                await conn.execute(sa.text("SET LOCAL plan_cache_mode = force_generic_plan"))
                plan = await self.explain(conn, probe, path)
        finally:
            await fresh.dispose()
        self.say("## Plans under prepared statements")
        self.say()
        self.say(
            f"Largest account, {path.value} path, one connection: first execution "
            f"{runs[0]:.1f} ms, executions 11-30 p50 {p50(runs[10:]):.1f} ms "
            f"(ratio {p50(runs[10:]) / runs[0]:.2f}). Plan of the statement even when "
            f"forced generic: `{plan}`."
        )
        self.say()
        ratio = p50(runs[10:]) / runs[0]
        self.target(
            "p50 after 10 prepared executions within 1.2x of the first",
            f"{ratio:.2f}",
            ratio <= 1.2,
        )

    async def explain(self, conn: Any, probe: Probe, path: LookupPath) -> str:
        import json

        from data.comparison import Ask
        from data.comparison_sql import first_statement

        sql = first_statement([IDENTITY], probe.account, filtered=False)
        params = {
            "account_id": probe.account,
            "asks": json.dumps([Ask(0, probe.session).as_json()]),
            "branch_models": [str(IDENTITY)],
            "retry": None,
            "exact": False,
            "cap": 0 if path.approximate else 100_000_000,
            "own_index": path is LookupPath.ACCOUNT_INDEX,
            "per_probe": PER_PROBE,
            "floor": FLOOR,
            "overfetch": self.tuning.overfetch,
        }
        rows = await conn.execute(sa.text("EXPLAIN (COSTS OFF) " + sql), params)
        lines = [r[0].strip() for r in rows]
        scans = [ln for ln in lines if "Index Scan" in ln or "Seq Scan" in ln]
        return "; ".join(s.replace("->", "").strip() for s in scans)

    async def ef_sweep(self, engine: AsyncEngine, account: Any, sessions: list[uuid.UUID]) -> None:
        self.say("## ef_search and over-fetch on the largest account (account_index path)")
        self.say()
        self.say("| ef_search | over-fetch | chunk recall@25 | session recall@10 | SQL p50 |")
        self.say("|---|---|---|---|---|")
        probes = [await probes_of(engine, account.id, s) for s in self.sample(sessions, 12)]
        probes = [p for p in probes if p.chunks]
        truths = [await exact(engine, p) for p in probes]
        for ef, over in ((40, 40), (100, 100), (200, 100), (400, 100), (1000, 100)):
            tuning = Tuning(ef_search=ef, overfetch=over)
            chunk, sess, times = [], [], []
            for _ in range(2):
                for p, truth in zip(probes, truths, strict=True):
                    ms, got = await timed(
                        lambda p=p, t=tuning: served(engine, p, LookupPath.ACCOUNT_INDEX, t)
                    )
                    times.append(ms)
                    per_probe, session = recalls(got, truth)
                    chunk += per_probe
                    sess.append(session)
            self.say(
                f"| {ef} | {over} | {np.mean(chunk):.3f} | {np.mean(sess):.3f} | {p50(times):.1f} |"
            )
        self.say()
        self.say("The shared model index (the fallback before an account's own index exists):")
        self.say()
        chunk, sess, times = [], [], []
        for p, truth in zip(probes, truths, strict=True):
            ms, got = await timed(lambda p=p: served(engine, p, LookupPath.INDEX, self.tuning))
            times.append(ms)
            per_probe, session = recalls(got, truth)
            chunk += per_probe
            sess.append(session)
        self.say(
            f"- shared index, ef_search {self.tuning.ef_search}: chunk recall@25 "
            f"{np.mean(chunk):.3f}, session recall@10 {np.mean(sess):.3f}, "
            f"SQL p50 {p50(times):.1f} ms"
        )
        self.say()
