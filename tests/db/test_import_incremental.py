"""Files into an account that has (or with the file gets) its own index: its rows stay out
of the model's shared index; a later file's rows are the own index's tail, looked up exactly
beside it until a merge builds the index again over them (by the indexer, the command, or
the import with the setting); an own index registered but not ready sends the account to the
exact path (never timed), and so does a process's snapshot read before the index was made.
An index built before tails existed: tests/db/test_import_before_tails.py."""

from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import (
    IndexShape,
    account_index_name,
    ensure_large_account_indexes,
    merged_name,
    valid_own_index,
)
from data.account_snapshot import Snapshots
from data.model_indexes import shared_predicate
from data.own_index_tails import Tail, merge_due
from resolvers.tuning import Tuning
from tests.support.comparisons import compare
from tests.support.own_index_files import (
    EXACT,
    IDENTITY,
    MIN_CHUNKS,
    SERVED,
    first_session,
    fitted_at,
    imported_in_files,
    in_shared_index,
    own_index_valid,
    scalar,
    served_equals_exact,
    sessions,
    tail_of,
)
from tests.support.transfer_files import write_file
from tests.support.world import World
from transfer.importing import import_file


async def stale_mark(engine: AsyncEngine, account_id: uuid.UUID, mark: int | None) -> Snapshots:
    """A process's snapshots holding the account's as read now, but for the own index's
    watermark: `mark` (a stale one)."""
    snapshots = Snapshots(ttl_s=3600)
    async with engine.connect() as conn:
        known = await snapshots.of(conn, account_id, SERVED.exact_scan_max_chunks)
    stale = replace(known.of(str(IDENTITY)), shape=IndexShape(mark=mark))
    snapshots.put(account_id, replace(known, indexes={**known.indexes, str(IDENTITY): stale}))
    return snapshots


async def test_an_account_past_the_size_keeps_its_rows_out_of_the_shared_index(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    world = World()
    large, _ = world.account("large")
    small, _ = world.account("small")
    sessions(world, large, 15, 0)  # 150 chunks: past MIN_CHUNKS with this file
    sessions(world, small, 3, 100)
    imported = await import_file(engine, write_file(tmp_path, world.jsonl()), MIN_CHUNKS)
    assert imported.indexes == [str(IDENTITY), f"{large} {IDENTITY}"]
    shared = await scalar(
        engine,
        f"SELECT array_agg(DISTINCT account_id::text) FROM session_chunks "
        f"WHERE {shared_predicate(IDENTITY)}",
    )
    assert shared == [small]
    assert await own_index_valid(engine, large)
    assert await served_equals_exact(engine, large) == "account_index"


async def test_a_later_files_rows_are_the_own_index_tail_looked_up_exactly_beside_it(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account, indexes = await imported_in_files(engine, tmp_path, [15, 10], rebuild=False)
    assert indexes[1] == []  # nothing built: the 100 rows are not in the graph
    tail = await tail_of(engine, account)
    assert (tail.rows, tail.indexed, tail.marked) == (100, 150, True)
    async with engine.connect() as conn:
        own = await valid_own_index(conn, uuid.UUID(account), IDENTITY)
    assert own is not None and own.watermark is not None
    in_graph = await scalar(
        engine,
        "SELECT count(*) FROM session_chunks c "
        f"WHERE {own.predicate(uuid.UUID(account), IDENTITY, 'c')}",
    )
    assert in_graph == 150
    assert await in_shared_index(engine, account) == 0
    assert await served_equals_exact(engine, account) == "account_index"


async def test_a_due_tail_is_merged_under_the_other_name_and_the_old_index_dropped(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account, _ = await imported_in_files(engine, tmp_path, [15, 11], rebuild=False)
    account_id, first = uuid.UUID(account), account_index_name(uuid.UUID(account), IDENTITY)
    async with engine.connect() as conn:
        before = await valid_own_index(conn, account_id, IDENTITY)
    assert before is not None and before.name == first and before.watermark is not None
    heard: list[Tail] = []
    merged = await merge_due(engine, MIN_CHUNKS, on_merge=lambda tail, _: heard.append(tail))
    other = merged_name(first, account_id, IDENTITY)
    assert [(m.index_name, m.chunks) for m in merged] == [(other, 260)]
    assert [t.rows for t in heard] == [110]  # past MIN_CHUNKS: due
    assert await fitted_at(engine, account) is not None  # the new index's fit
    assert not await own_index_valid(engine, account, first)  # dropped
    assert (await tail_of(engine, account)).rows == 0
    assert await served_equals_exact(engine, account) == "account_index"
    assert (
        await served_equals_exact(
            engine, account, await stale_mark(engine, account_id, before.watermark)
        )
        == "account_index"
    )
    world = World()
    sessions(world, account, 11, 26)
    await import_file(engine, write_file(tmp_path, world.jsonl(), "third.jsonl"), MIN_CHUNKS)
    again = await merge_due(engine, MIN_CHUNKS)
    assert [m.index_name for m in again] == [first]  # and back
    assert await served_equals_exact(engine, account) == "account_index"


async def test_with_the_setting_the_import_merges_a_due_tail_after_its_commit(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account, indexes = await imported_in_files(engine, tmp_path, [15, 11], rebuild=True)
    assert indexes[1] == [f"{account} {IDENTITY} (merged)"]
    assert (await tail_of(engine, account)).rows == 0
    assert await served_equals_exact(engine, account) == "account_index"


async def test_a_tail_not_yet_due_waits_and_a_merge_of_every_tail_takes_it(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account, indexes = await imported_in_files(engine, tmp_path, [20, 2], rebuild=True)
    assert indexes[1] == []
    tail = await tail_of(engine, account)
    assert tail.rows == 20 and not tail.due  # 20 <= MIN_CHUNKS
    assert await merge_due(engine, MIN_CHUNKS) == []
    assert await served_equals_exact(engine, account) == "account_index"
    assert [m.chunks for m in await merge_due(engine, MIN_CHUNKS, every=True)] == [220]
    assert (await tail_of(engine, account)).rows == 0


async def test_an_own_index_registered_but_not_built_is_the_exact_path_until_rebuilt(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account, _ = await imported_in_files(engine, tmp_path, [15])
    async with engine.begin() as conn:  # as after a concurrent rebuild that never finished
        await conn.execute(
            sa.text(f"DROP INDEX {account_index_name(uuid.UUID(account), IDENTITY)}")
        )
    assert await served_equals_exact(engine, account) == "exact"
    async with engine.begin() as conn:
        built = await ensure_large_account_indexes(conn, MIN_CHUNKS)
    assert [b.account_id for b in built] == [uuid.UUID(account)]
    assert await served_equals_exact(engine, account) == "account_index"


async def test_a_snapshot_read_before_an_import_built_the_own_index_answers_exactly(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """A process read the account (150 chunks, past the exact scan's size, no own index:
    the shared index) before an import took it past the own-index size; the import's rows
    are out of the shared index. The statement answers that process on the exact path,
    every list as the exact path's (on the shared index, 22 of these 25 lists lacked
    neighbours from the second file)."""
    world = World()
    account, _ = world.account()
    sessions(world, account, 15, 0)
    await import_file(engine, write_file(tmp_path, world.jsonl(), "first.jsonl"), 200)
    world.lines.clear()
    served, snapshots = Tuning(exact_scan_max_chunks=10), Snapshots(ttl_s=3600)
    first = await first_session(engine, account)
    assert (await compare(engine, account, first, served, snapshots)).lookup_path == "index"
    sessions(world, account, 10, 15)
    imported = await import_file(engine, write_file(tmp_path, world.jsonl(), "second.jsonl"), 200)
    assert imported.indexes == [f"{account} {IDENTITY}"]
    assert await in_shared_index(engine, account) == 150
    ids = await scalar(
        engine, "SELECT array_agg(id::text) FROM runtime_sessions WHERE account_id = :a", a=account
    )
    assert isinstance(ids, list) and len(ids) == 25
    for session in ids:
        stale = await compare(engine, account, session, served, snapshots, limit=20)
        exact = await compare(engine, account, session, EXACT, limit=20)
        assert stale.lookup_path == "exact"
        assert [(n.session.id, n.score) for n in stale.results] == [
            (n.session.id, n.score) for n in exact.results
        ]
