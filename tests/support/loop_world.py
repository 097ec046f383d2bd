"""A loop session's world for the tests of the approximate paths: ordinary sessions beside a
session that repeats one turn many times, comparisons of it on each path, and what the exact
passes checked."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import comparison
from data.account_indexes import ensure_account_index
from data.lookups import Inventory
from data.own_index_rebuilds import rebuild_concurrently
from data.repeats import mark_repeats
from resolvers.arguments import SimilarArgs
from resolvers.comparison.check_costs import CheckCosts
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.results import SimilarResult
from resolvers.comparison.state import NOT_NARROWED
from resolvers.tuning import Tuning
from tests.support.comparisons import compare
from tests.support.crowded import IDENTITY
from tests.support.loops import SPREAD, ordinary_sessions, repeat_session, topic
from tests.support.world import World, direction, unit

APPROXIMATE = Tuning(exact_scan_max_chunks=100)


EXACT = Tuning(exact_scan_max_chunks=1_000_000)


async def loop_world(
    engine: AsyncEngine,
    copies: int,
    marked: bool = False,
    ordinary: int = 12,
    aged: bool = False,
) -> tuple[str, list[str]]:
    """`ordinary` sessions of 8 chunks on three topics and a loop session of `copies` identical
    chunks on the first topic; the account gets its own index. The copies are written behind
    the indexer's back: unmarked, in the graph as themselves, unless `marked` (as the indexer
    leaves them, data/repeats.py). `aged`: the loop's first chunk occurred 40 days ago, every
    other chunk 10 days ago."""
    world = World()
    account, _ = world.account()
    sessions = ordinary_sessions(world, account, ordinary)
    loop = world.session(account, "stuck in a loop", day=20)
    turn = unit(topic(0) + 0.5 * direction(499) / SPREAD)
    world.chunk(loop, turn, index=0, content="Running the tests again.")
    await world.write(engine)
    await repeat_session(engine, loop, copies)
    if aged:
        async with engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "UPDATE session_chunks SET occurred_at = now() - CASE WHEN "
                    "runtime_session_id = :loop AND chunk_index = 0 THEN interval '40 days' "
                    "ELSE interval '10 days' END WHERE account_id = :a"
                ),
                {"loop": loop, "a": account},
            )
    if marked:  # as the indexer's pass does, in a transaction of its own before the build
        async with engine.begin() as conn:
            await mark_repeats(conn, uuid.UUID(account))
    async with engine.begin() as conn:
        # the copies are written behind the import's back: their statistics, as autovacuum
        # would leave them, so that the planner takes the own index as it would in service
        await conn.execute(sa.text("ANALYZE session_chunks"))
        if not marked:
            await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    if marked:
        # built concurrently, as a merge builds it: a build inside a transaction indexes the
        # copies' unmarked first versions too while any older snapshot (autovacuum's) may
        # still see them
        await rebuild_concurrently(engine, uuid.UUID(account), IDENTITY)
    return account, [*sessions, loop]


async def compared(
    engine: AsyncEngine, account: str, session: str, tuning: Tuning
) -> SimilarResult:
    return await compare(engine, account, session, tuning, limit=20, max_matches_per_session=5)


def listed(result: SimilarResult) -> list[tuple[uuid.UUID, float, int]]:
    return [(n.session.id, round(n.score, 9), n.matched_chunk_count) for n in result.results]


def checks_exactly(kwargs: dict[str, Any]) -> bool:
    """Whether a first statement's keywords are an exact check's: its exact lookups scan."""
    return not kwargs["route"].pooled


def record_checks(monkeypatch: pytest.MonkeyPatch, slow_key: int | None = None) -> list[set[int]]:
    """The keys of the comparisons each exact pass checks, pass by pass; a pass that checks
    `slow_key` first spends 2 s of the budget's real time (more than these tests give it)."""
    real = comparison.look_up
    checked: list[set[int]] = []

    async def recorded(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        if checks_exactly(kwargs):
            checked.append({ask.key for ask in args[1] if ask.again})  # args[1]: the asks
            if slow_key in checked[-1]:
                await conn.execute(sa.text("SELECT pg_sleep(2)"))
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", recorded)
    return checked


async def compare_page(
    engine: AsyncEngine, account: str, sessions: list[str], tuning: Tuning, checks: CheckCosts
) -> list[SimilarResult]:
    """The sessions compared in one batch, as a GraphQL page asks them (20, 5 matches each)."""
    args = SimilarArgs(limit=20, max_matches_per_session=5)
    async with comparison.reading(engine) as conn:
        results = await compare_sessions(
            conn,
            uuid.UUID(account),
            [(uuid.UUID(s), args, NOT_NARROWED) for s in sessions],
            tuning,
            checks=checks,
        )
    found = [r for r in results if r is not None]
    assert len(found) == len(sessions)
    return found


async def compare_remembering(
    engine: AsyncEngine, account: str, session: str, tuning: Tuning, checks: CheckCosts
) -> SimilarResult:
    """One comparison with `checks` as the process's memory of what checks cost."""
    async with comparison.reading(engine) as conn:
        [result] = await compare_sessions(
            conn,
            uuid.UUID(account),
            [(uuid.UUID(session), SimilarArgs(), NOT_NARROWED)],
            tuning,
            checks=checks,
        )
    assert result is not None
    return result


class RecordedChecks(CheckCosts):
    """CheckCosts that keeps how many lookups each check that ran covered."""

    def __init__(self) -> None:
        super().__init__()
        self.checked: list[int] = []

    def learn(
        self, account_id: uuid.UUID, lookups: int, cost_ms: float, finished: bool = True
    ) -> None:
        self.checked.append(lookups)
        super().learn(account_id, lookups, cost_ms, finished)


def shared_lookups(inventory: Inventory) -> dict[int, int]:
    """Each probe whose lookup another probe of the comparison (same vector) answers."""
    return {p.number: p.lookup for p in inventory.probes if p.lookup != p.number}
