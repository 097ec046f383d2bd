"""The indexer's merges of own indexes' tails in the background (merge_due's `background`):
a due tail waits until its index has rested MERGE_REST times its build's seconds, an
operator's merge does not, and a merge in the background builds by one process, its
connection's settings put back after it, and a merge cancelled ends cancelled."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from data.engine import make_engine
from data.own_index_rebuilds import maintenance
from data.own_index_tails import MERGE_REST, merge_due, tails
from tests.db.test_own_index_tails import indexed_world
from tests.support.crowded import IDENTITY
from tests.support.tails import into_tail


async def registered(engine: AsyncEngine, account: str) -> tuple[float | None, float]:
    """The index's build seconds and how long it has been up."""
    async with engine.connect() as conn:
        row = await conn.execute(
            sa.text(
                "SELECT build_seconds, extract(epoch FROM clock_timestamp() - built_at) "
                "FROM account_model_indexes WHERE account_id = :a AND model_identity = :m"
            ),
            {"a": account, "m": str(IDENTITY)},
        )
        seconds, up = row.one()
    return seconds, float(up)


async def built_seconds_ago(engine: AsyncEngine, account: str, build_s: float, up_s: float) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "UPDATE account_model_indexes SET build_seconds = :b, "
                "built_at = clock_timestamp() - make_interval(secs => :u) WHERE account_id = :a"
            ),
            {"a": account, "b": build_s, "u": up_s},
        )


async def test_a_due_tail_waits_in_the_background_until_its_index_has_rested(
    engine: AsyncEngine,
) -> None:
    account, _, _ = await indexed_world(engine)
    seconds, up = await registered(engine, account)
    assert seconds is not None and 0 < seconds < 60 and 0 <= up < 60  # the build, timed
    await into_tail(engine, account)
    await built_seconds_ago(engine, account, build_s=100.0, up_s=MERGE_REST * 100.0 - 30)
    async with engine.connect() as conn:
        (tail,) = await tails(conn, 0, [uuid.UUID(account)])
    assert tail.due and not tail.rested and 25 < tail.rests_s <= 30
    assert await merge_due(engine, 0, [uuid.UUID(account)], background=True) == []
    await built_seconds_ago(engine, account, build_s=100.0, up_s=MERGE_REST * 100.0 + 1)
    [made] = await merge_due(engine, 0, [uuid.UUID(account)], background=True)
    assert made.chunks == 72
    seconds, up = await registered(engine, account)
    assert seconds == made.seconds and up < 60  # the merge's own build, timed afresh


async def staged_beside(engine: AsyncEngine, account: str, identity: str) -> None:
    """A lexical fit of `identity` served to the account, and another staged to replace it
    (data/next_fits.py)."""
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO lexical_fits (account_id, model_identity, sessions, weights, "
                "next_identity, next_sessions, next_weights, next_fitted_at) "
                "VALUES (:a, :m, 1, '\\x00', 'local:lexical-8.next@8', 1, '\\x00', now())"
            ),
            {"a": account, "m": identity},
        )


@pytest.mark.parametrize("served", [True, False])
async def test_a_tail_is_left_to_the_swap_of_a_fit_staged_to_replace_its_index(
    engine: AsyncEngine, served: bool
) -> None:
    """While a staged fit is to replace the fit an own index is of, the background leaves
    its due tail (the swap registers the new fit's index) until the tail is as large as the
    index. A fit staged to replace another model's index holds nothing."""
    account, _, _ = await indexed_world(engine)
    moved = await into_tail(engine, account)
    await built_seconds_ago(engine, account, build_s=1.0, up_s=MERGE_REST * 1.0 + 1)
    await staged_beside(engine, account, str(IDENTITY) if served else "local:lexical-8.old@8")
    async with engine.connect() as conn:
        (tail,) = await tails(conn, 0, [uuid.UUID(account)])
    assert tail.due and tail.rested and tail.rows == moved < tail.indexed
    assert tail.replaced is served and tail.held_for_swap is served
    merged = await merge_due(engine, 0, [uuid.UUID(account)], background=True)
    assert len(merged) == (0 if served else 1)
    if served:  # the tail grows as large as the index: merged even so
        await into_tail(engine, account, every=1)
        async with engine.connect() as conn:
            (tail,) = await tails(conn, 0, [uuid.UUID(account)])
        assert tail.replaced and tail.rows == tail.indexed and not tail.held_for_swap
        assert len(await merge_due(engine, 0, [uuid.UUID(account)], background=True)) == 1


async def test_an_operators_merge_takes_a_due_tail_at_once(engine: AsyncEngine) -> None:
    account, _, _ = await indexed_world(engine)
    await into_tail(engine, account)
    await built_seconds_ago(engine, account, build_s=100.0, up_s=0.0)
    assert len(await merge_due(engine, 0, [uuid.UUID(account)])) == 1


async def test_a_merge_in_the_background_builds_by_one_process(
    engine: AsyncEngine, database_url: str
) -> None:
    """The build runs with no parallel maintenance workers, and the pooled connection it ran
    on has the server's setting again after it."""
    account, _, _ = await indexed_world(engine)
    await into_tail(engine, account)
    one = make_engine(database_url, pool_size=1)
    said: list[str] = []

    def heard(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        said.append(f"{statement} {params}")

    event.listen(one.sync_engine, "before_cursor_execute", heard)
    try:
        async with one.connect() as conn:
            server = await conn.scalar(sa.text("SHOW max_parallel_maintenance_workers"))
        assert len(await merge_due(one, 0, [uuid.UUID(account)], background=True)) == 1
        async with one.connect() as conn:  # the same connection, back from the pool
            after = await conn.scalar(sa.text("SHOW max_parallel_maintenance_workers"))
    finally:
        await one.dispose()
    assert after == server
    build = next(n for n, s in enumerate(said) if s.startswith("CREATE INDEX CONCURRENTLY"))
    set_at = [n for n, s in enumerate(said) if "max_parallel_maintenance_workers" in s]
    assert any(n < build and "'0'" in said[n] for n in set_at), said[:build]


async def test_a_merge_cancelled_mid_build_ends_cancelled_and_lets_its_lock_go(
    engine: AsyncEngine,
) -> None:
    """A merge cancelled while its statement runs (the indexer stopped) ends with the
    cancellation, not with an error of the connection the cancellation closed, and the index's
    lock is free for the next build."""
    lock = f"test-{uuid.uuid4()}"
    started = asyncio.Event()

    async def build() -> None:
        async with maintenance(engine, lock) as conn:
            started.set()
            await conn.execute(sa.text("SELECT pg_sleep(30)"))

    task = asyncio.ensure_future(build())
    await asyncio.wait_for(started.wait(), 10)
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with engine.connect() as conn:
        for _ in range(100):  # the closed connection's backend ends within moments
            if await conn.scalar(sa.text("SELECT pg_try_advisory_lock(hashtext(:k))"), {"k": lock}):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the cancelled merge's lock was never let go")
        await conn.execute(sa.text("SELECT pg_advisory_unlock(hashtext(:k))"), {"k": lock})
