"""The cold account measured in process (a new engine, catalog, check costs and marks, the
buffers emptied): each comparison's time by phase, the exact checks it ran, and what a new
connection and the model catalog's first read cost (bench/latency/cold.py reports them)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from bench.common.timing import clocked
from bench.latency.accounts import InProcess
from bench.latency.buffers import PARTS, evict_buffers, in_buffers
from bench.latency.first_statement import explained, first_statements
from bench.latency.phase_times import Tally, tallied, traced
from bench.latency.real_vectors import Measured, World, compare
from bench.latency.report import Report
from data.account_snapshot import Snapshots, read_snapshot
from data.engine import make_engine
from resolvers.arguments import SimilarArgs
from resolvers.comparison.state import NOT_NARROWED

WARM_ROUNDS = 2  # the warm figure: each session asked this many more times


@dataclass
class InProcessCold:
    """The comparisons in process, cold then warm, and the pieces of a cold one."""

    cold: list[Tally] = field(default_factory=list)
    warm: list[Tally] = field(default_factory=list)
    cold_misses: dict[str, int] = field(default_factory=dict)
    warm_misses: dict[str, int] = field(default_factory=dict)
    connect_ms: list[float] = field(default_factory=list)  # a new engine's first connection
    pooled_ms: list[float] = field(default_factory=list)  # a pooled connection's checkout
    catalog_cold_ms: list[float] = field(default_factory=list)  # models + fit, buffers emptied
    catalog_ms: list[float] = field(default_factory=list)  # the same read again, buffers warm
    explained: dict[str, dict[str, Any]] = field(default_factory=dict)


async def in_process(
    report: Report, world: World, engine: AsyncEngine, fig: Measured
) -> InProcessCold:
    out = InProcessCold()
    settings = report.tuning.comparison_settings
    account = fig.account.id
    await evict_buffers(engine)
    fresh = InProcess(make_engine(world.url, pool_size=2, comparison=settings), Snapshots())
    try:
        with traced(), first_statements() as captured:
            before = await in_buffers(engine)
            for s in fig.picked:
                out.cold.append((await tallied(_one(fresh, account, s, report)))[0])
            middle = await in_buffers(engine)
            for _ in range(WARM_ROUNDS):
                for s in fig.picked:
                    out.warm.append((await tallied(_one(fresh, account, s, report)))[0])
            after = await in_buffers(engine)
        out.cold_misses = {p: middle.get(p, 0) - before.get(p, 0) for p in PARTS}
        out.warm_misses = {p: after.get(p, 0) - middle.get(p, 0) for p in PARTS}
        for _ in range(3):
            async with fresh.engine.connect() as conn:  # pooled: connected above
                pass
            ms, _ = await clocked(_checkout(fresh.engine))
            out.pooled_ms.append(ms)
    finally:
        await fresh.engine.dispose()
    for _ in range(3):
        other = make_engine(world.url, pool_size=1, comparison=settings)
        try:
            ms, _ = await clocked(_checkout(other))
            out.connect_ms.append(ms)
            await evict_buffers(engine)
            async with other.connect() as conn:
                for times in (out.catalog_cold_ms, out.catalog_ms):
                    started = time.perf_counter()
                    await read_snapshot(conn, account, report.tuning.exact_scan_max_chunks)
                    times.append((time.perf_counter() - started) * 1000)
        finally:
            await other.dispose()
    if captured:
        out.explained = await explained(engine, world, report, fig, captured[0])
    return out


async def _one(fresh: InProcess, account: uuid.UUID, s: uuid.UUID, report: Report) -> None:
    await compare(fresh, account, [(s, SimilarArgs(limit=10), NOT_NARROWED)], report.tuning)


async def _checkout(engine: AsyncEngine) -> None:
    async with engine.connect():
        pass
