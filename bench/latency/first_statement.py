"""The comparison's first statement caught as the driver sent it, and run again under
EXPLAIN (ANALYZE, BUFFERS) cold (a new backend, the buffers emptied) and warm, for the
cold-account benchmark (bench/latency/cold.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from bench.latency.buffers import evict_buffers
from bench.latency.real_vectors import Measured, World
from bench.latency.report import Report
from data import comparison
from data.engine import make_engine

_capturing: ContextVar[bool] = ContextVar("bench_cold_capturing", default=False)


@contextmanager
def first_statements() -> Iterator[list[tuple[str, Any]]]:
    """The first statements (the comparison's, data.comparison.look_up) the block runs, as the
    driver received them: their text and parameters."""
    captured: list[tuple[str, Any]] = []
    original = comparison.look_up

    async def look_up(*args: Any, **kw: Any) -> Any:
        token = _capturing.set(True)
        try:
            return await original(*args, **kw)
        finally:
            _capturing.reset(token)

    def listen(_c: Any, _cur: Any, statement: str, parameters: Any, *_: Any) -> None:
        if _capturing.get() and "payload" in statement:
            captured.append((statement, parameters))

    comparison.look_up = look_up
    event.listen(sa.engine.Engine, "before_cursor_execute", listen)
    try:
        yield captured
    finally:
        event.remove(sa.engine.Engine, "before_cursor_execute", listen)
        comparison.look_up = original


async def explained(
    engine: AsyncEngine, world: World, report: Report, fig: Measured, statement: tuple[str, Any]
) -> dict[str, dict[str, Any]]:
    """The first statement under EXPLAIN (ANALYZE, BUFFERS) on a new backend after the
    buffers were emptied, then again on the same backend: planning and execution ms, and
    shared pages hit and read (misses), in planning and in execution."""
    text, parameters = statement
    ef_search = fig.ef_search.split()[0]
    out = {}
    await evict_buffers(engine)
    settings = report.tuning.comparison_settings
    other = make_engine(world.url, pool_size=1, comparison=settings)
    try:
        async with other.connect() as conn:
            await conn.execute(  # as the comparison searches: at the account's fit
                sa.text("SELECT set_config('hnsw.ef_search', :ef, false)"), {"ef": ef_search}
            )
            for name in ("cold", "warm"):
                rows = await conn.exec_driver_sql(
                    "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + text, parameters
                )
                plan = rows.scalar_one()
                top = (plan if isinstance(plan, list) else json.loads(plan))[0]
                node, planning = top["Plan"], top.get("Planning", {})
                out[name] = {
                    "planning_ms": top["Planning Time"],
                    "execution_ms": top["Execution Time"],
                    "planning_hit": planning.get("Shared Hit Blocks", 0),
                    "planning_read": planning.get("Shared Read Blocks", 0),
                    "hit": node.get("Shared Hit Blocks", 0),
                    "read": node.get("Shared Read Blocks", 0),
                }
    finally:
        await other.dispose()
    return out
