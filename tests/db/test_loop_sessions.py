"""A session that repeats one turn many times (identical vectors) on the approximate paths:
the served lists equal the exact answer, and are never empty where it has neighbours."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import comparison
from data.engine import make_engine
from data.lookups import Ask
from resolvers.comparison import phases
from resolvers.rules.ranking import SIMILAR_PROBE_CHUNKS
from tests.support.comparisons import transaction_queries
from tests.support.crowded import IDENTITY
from tests.support.loop_world import (
    APPROXIMATE,
    EXACT,
    RecordedChecks,
    compare_remembering,
    compared,
    listed,
    loop_world,
    shared_lookups,
)
from values.lookups import Limits


async def test_a_loop_near_other_sessions_leaves_their_lists_exact(engine: AsyncEngine) -> None:
    """The loop's copies tie at one distance: which of them are a probe's 25 nearest is settled
    by chunk id, which the approximate scan's few hundred rows cannot do alone."""
    account, sessions = await loop_world(engine, copies=1500)
    for session in sessions:
        served = await compared(engine, account, session, APPROXIMATE)
        exact = await compared(engine, account, session, EXACT)
        assert (served.lookup_path, exact.lookup_path) == ("account_index", "exact")
        assert served.results or not exact.results, f"session {session} came back empty"
        assert listed(served) == listed(exact), f"session {session} differs from exact"
        assert served.degraded.reasons == exact.degraded.reasons


async def test_a_loop_session_is_never_left_empty(engine: AsyncEngine) -> None:
    """A probe of the loop sees its own copies first (they are nearest of all, and filtered
    out): thousands of identical vectors form a part of the graph with no way out, and a scan
    that starts there finds nothing else."""
    account, sessions = await loop_world(engine, copies=5000)
    loop = sessions[-1]
    served = await compared(engine, account, loop, APPROXIMATE)
    exact = await compared(engine, account, loop, EXACT)
    assert served.lookup_path == "account_index"
    assert exact.results and served.results, "the loop session came back empty"
    assert listed(served) == listed(exact)


async def test_a_check_or_a_wider_search_on_the_comparisons_pool_begins_a_transaction(
    engine: AsyncEngine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comparison runs without a transaction (`reading`). A check (a savepoint, its budget
    set for the statement after) and a wider search (ef_search set for the statement after)
    each begin one when it comes first, and the pool takes the connection back as it was."""
    account, sessions = await loop_world(engine, copies=1500)
    loop = sessions[-1]
    exact = await compared(engine, account, loop, EXACT)
    async with engine.begin() as conn:
        # the own index's scan, which alone comes back short: with the statistics, a planner
        # sorts this small account's rows instead (exact, nothing to widen)
        await conn.execute(
            sa.text(
                "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET enable_sort = off', "
                "current_database()); END $$"
            )
        )
    comparisons = make_engine(database_url, pool_size=1, comparison=APPROXIMATE.comparison_settings)
    steps: list[str] = []
    real_widen, real_check = comparison.widen_search, comparison.own_budget

    async def widen_and_show(conn: AsyncConnection, ef_search: int) -> None:
        await real_widen(conn, ef_search)
        shown = (await conn.execute(sa.text("SHOW hnsw.ef_search"))).scalar_one()
        steps.append(f"widened to {shown}")

    def check(conn: AsyncConnection, budget_ms: int) -> Any:
        steps.append("checked")
        return real_check(conn, budget_ms)

    nearest_at: list[str] = []  # hnsw.ef_search when the nearest passages are asked
    real_nearest = phases.look_nearest

    async def nearest_and_show(conn: AsyncConnection, *args: Any) -> Any:
        nearest_at.append((await conn.execute(sa.text("SHOW hnsw.ef_search"))).scalar_one())
        return await real_nearest(conn, *args)

    monkeypatch.setattr(comparison, "widen_search", widen_and_show)
    monkeypatch.setattr(phases, "look_nearest", nearest_and_show)
    monkeypatch.setattr(comparison, "own_budget", check)
    never_widened = replace(APPROXIMATE, ef_search_retry=APPROXIMATE.ef_search)
    never_checked = replace(APPROXIMATE, verify_timeout_ms=0)
    try:
        with transaction_queries(comparisons) as sent:
            checked = await compared(comparisons, account, loop, never_widened)
            assert steps == ["checked"]
            assert sent == ["BEGIN", "ROLLBACK"]
            steps.clear()
            widened = await compared(comparisons, account, loop, never_checked)
            assert steps == [f"widened to {APPROXIMATE.ef_search_retry}"]
            # the wider search was the retry's alone: the nearest passages search at the
            # plan's ef_search, as in the comparison that did not widen
            assert nearest_at[-1] == nearest_at[0] != str(APPROXIMATE.ef_search_retry)
            sent.clear()
            await compared(comparisons, account, sessions[0], never_checked)
            assert sent == []  # the pool's one connection, back in autocommit
    finally:
        await comparisons.dispose()
    assert "similar_approximate_unverified" not in checked.degraded.reasons
    assert listed(checked) == listed(exact)
    # each answer names the work it took: the probes checked exactly, or asked again wider
    probes = len(checked.probes)
    assert (checked.lookup_path, checked.checked_probes, checked.widened_probes) == (
        "account_index",
        probes,
        0,
    )
    assert (widened.checked_probes, widened.widened_probes) == (0, probes)
    assert (exact.lookup_path, exact.checked_probes, exact.widened_probes) == ("exact", 0, 0)


async def test_a_loops_identical_probes_are_looked_up_once(engine: AsyncEngine) -> None:
    """The loop's eight probes have one vector: one lookup answers all of them (its exact
    check too, which an account of any size can then afford eight times more often), and each
    probe gets the rows it would have found on its own."""
    account, sessions = await loop_world(engine, copies=1500)
    loop = sessions[-1]
    ask = Ask(0, uuid.UUID(loop))
    limits = Limits(25, 0.35, 100, 1_000_000, SIMILAR_PROBE_CHUNKS)
    async with engine.connect() as conn:
        looked = await comparison.look_up(conn, uuid.UUID(account), [ask], [IDENTITY], limits)
    inventory = looked.inventories[0]
    assert inventory is not None
    assert len(inventory.probes) == 8
    assert shared_lookups(inventory) == {n: 0 for n in range(1, 8)}
    by_probe = [
        sorted((h.chunk_id, h.similarity) for h in inventory.probes[n].answer.hits)
        for n in range(8)
    ]
    assert by_probe[0] and all(rows == by_probe[0] for rows in by_probe)

    checks = RecordedChecks()
    served = await compare_remembering(engine, account, loop, APPROXIMATE, checks)
    exact = await compared(engine, account, loop, EXACT)
    assert checks.checked == [1], "the check covered one lookup per distinct vector"
    assert listed(served) == listed(exact)


async def test_probes_with_different_vectors_keep_their_own_lookups(engine: AsyncEngine) -> None:
    account, sessions = await loop_world(engine, copies=200)
    ask = Ask(0, uuid.UUID(sessions[0]))
    limits = Limits(25, 0.35, 100, 1_000_000, SIMILAR_PROBE_CHUNKS)
    async with engine.connect() as conn:
        looked = await comparison.look_up(conn, uuid.UUID(account), [ask], [IDENTITY], limits)
    inventory = looked.inventories[0]
    assert inventory is not None
    assert inventory.probes and shared_lookups(inventory) == {}
