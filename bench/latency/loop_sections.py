"""The loop-session sections of the report: served lists against the exact path's, for the
small loop accounts over several builds of their index, and for a loop in the table."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.timing import clocked, p50
from bench.latency.corpus import Account
from bench.latency.loops import SCENARIOS, load_scenarios, rebuild_own_index
from bench.latency.measure import exact, path_of, probes_of, recalls, served
from bench.latency.report import Report
from data.engine import make_engine
from resolvers.arguments import SimilarArgs
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.results import SimilarResult
from resolvers.comparison.state import NOT_NARROWED
from resolvers.tuning import Tuning

UNVERIFIED = "similar_approximate_unverified"


@dataclass
class LoopFigures:
    sessions: int = 0
    exact_lists: int = 0  # first page (limit 10) equal to the exact path's, session by session
    empty: int = 0  # empty where the exact path has neighbours
    unverified: int = 0
    chunk_recall: list[float] = field(default_factory=list)
    session_recall: list[float] = field(default_factory=list)
    served_ms: list[float] = field(default_factory=list)
    exact_ms: list[float] = field(default_factory=list)
    per_build: list[int] = field(default_factory=list)

    def row(self, label: str, tuning: str) -> str:
        recall = np.array(self.chunk_recall or [1.0])
        builds = ", ".join(str(n) for n in self.per_build)
        return (
            f"| {label} | {tuning} | {self.exact_lists} of {self.sessions} ({builds}) "
            f"| {self.empty} | {self.unverified} | {recall.mean():.3f} (min {recall.min():.2f}) "
            f"| {np.mean(self.session_recall or [1.0]):.3f} | {p50(self.served_ms):.1f} "
            f"| {p50(self.exact_ms):.1f} | {p50(self.served_ms) / p50(self.exact_ms):.2f} |"
        )


async def _compare(
    engine: AsyncEngine, account: uuid.UUID, session: uuid.UUID, tuning: Tuning
) -> SimilarResult:
    async with engine.begin() as conn:
        [result] = await compare_sessions(
            conn, account, [(session, SimilarArgs(limit=10), NOT_NARROWED)], tuning
        )
    assert result is not None
    return result


def tunings(tuning: Tuning) -> list[tuple[str, Tuning]]:
    """The tuning under test without its exact check of unsure lookups, then with it."""
    unchecked = [("no exact check (as before)", replace(tuning, verify_timeout_ms=0))]
    if tuning.verify_timeout_ms == 0:
        return unchecked
    return [*unchecked, (f"exact check within {tuning.verify_timeout_ms} ms", tuning)]


async def measure_sessions(
    engine: AsyncEngine,
    account: uuid.UUID,
    sessions: list[uuid.UUID],
    tuning: Tuning,
    fig: LoopFigures,
) -> None:
    exact_tuning = replace(tuning, exact_scan_max_chunks=10**9)
    path = await path_of(engine, account, tuning)
    before = fig.exact_lists
    for session in sessions:
        ms, got = await clocked(_compare(engine, account, session, tuning))
        exact_ms, want = await clocked(_compare(engine, account, session, exact_tuning))
        fig.sessions += 1
        fig.served_ms.append(ms)
        fig.exact_ms.append(exact_ms)
        ids = [n.session.id for n in got.results]
        fig.exact_lists += ids == [n.session.id for n in want.results]
        fig.empty += not got.results and bool(want.results)
        fig.unverified += UNVERIFIED in got.degraded.reasons
        probe = await probes_of(engine, account, session)
        per_probe, session_recall = recalls(
            await served(engine, probe, path, tuning), await exact(engine, probe)
        )
        fig.chunk_recall += per_probe
        fig.session_recall.append(session_recall)
    fig.per_build.append(fig.exact_lists - before)


def header(report: Report) -> None:
    report.say(
        "| account | lookups | sessions whose list equals the exact one (per build) "
        "| empty where exact has neighbours | unverified | chunk recall@25 | session recall@10 "
        "| served p50 ms | exact path p50 ms | served / exact |"
    )
    report.say("|---|---|---|---|---|---|---|---|---|---|")


async def loop_scenarios(
    report: Report, server_url: str, builds: int, database: str = "bench_loops"
) -> None:
    report.say("## Loop sessions: small accounts, several builds of their own index")
    report.say()
    url, accounts = await load_scenarios(server_url, database)
    engine = make_engine(url, pool_size=2, statement_timeout_ms=120_000)
    try:
        figures = {
            (s.name, label): LoopFigures() for s in SCENARIOS for label, _ in tunings(report.tuning)
        }
        for scenario in SCENARIOS:
            account = accounts[scenario.name]
            sessions = await sessions_of_account(engine, account)
            for _ in range(builds):
                await rebuild_own_index(engine, account)
                for label, tuning in tunings(report.tuning):
                    await measure_sessions(
                        engine, account, sessions, tuning, figures[scenario.name, label]
                    )
        header(report)
        for (name, label), fig in figures.items():
            report.say(fig.row(name, label))
    finally:
        await engine.dispose()
    report.say()
    report.say(
        f"Each account's own HNSW index built {builds} times (a build is random); every "
        "session compared on each build, served (account_index path) against the product's "
        "exact path, first page of 10; chunk recall against the one-pass exact scan. "
        "A loop repeats one vector; the near-duplicates add noise of norm 0.05 to it (cosine "
        "0.9975 between them), the similar turns 0.2 (cosine 0.96)."
    )
    report.say()


async def sessions_of_account(engine: AsyncEngine, account: uuid.UUID) -> list[uuid.UUID]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT id FROM runtime_sessions WHERE account_id = :a ORDER BY title"),
            {"a": account},
        )
        return [r[0] for r in rows]


async def loop_in_table(
    report: Report,
    engine: AsyncEngine,
    account: Account,
    meta: dict[str, Any],
    sessions: list[uuid.UUID],
) -> None:
    report.say(f"## A loop session of {meta['chunks']:,} chunks in the largest account")
    report.say()
    loop = uuid.UUID(meta["session"])
    near = uuid.UUID(meta["near_session"])
    others = [s for s in report.sample(sessions, 12) if s not in (loop, near)]
    picked = [loop, near, *others]
    header(report)
    for label, tuning in tunings(report.tuning):
        fig = LoopFigures()
        await measure_sessions(engine, account.id, picked, tuning, fig)
        report.say(fig.row(f"{account.name} + loop", label))
    report.say()
    report.say(
        f"The loop session repeats one turn near the first chunk of session {str(near)[:8]}; "
        f"measured: the loop session, that session, and {len(others)} others of the account "
        f"(written in {meta['insert_s']} s past the own index's mark, then merged into it when "
        "due, as the indexer's pass does)."
    )
    report.say()
