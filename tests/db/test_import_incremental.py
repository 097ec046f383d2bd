"""Files into an account that has (or with the file gets) its own index: its rows stay out
of the model's shared index; a later file's rows are the own index's tail, looked up exactly
beside it until a merge builds the index again over them (by the indexer, the command, or
the import with the setting); an index built before tails existed (no watermark) takes the
rows into its graph, or, with the setting, is rebuilt in one pass after the transaction; a
failed file leaves the index as it was, and an own index registered but not ready sends the
account to the exact path (never timed)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import import_rows
from data.account_indexes import (
    IndexShape,
    account_index_name,
    account_predicate,
    ensure_large_account_indexes,
    merged_name,
    valid_own_index,
)
from data.account_snapshot import Snapshots
from data.model_identity import ModelIdentity
from data.model_indexes import hnsw_index_ddl, shared_predicate
from data.own_index_rebuilds import REBUILD_SHARE
from data.own_index_tails import Tail, merge_due, tails
from resolvers.tuning import Tuning
from tests.support.comparisons import compare
from tests.support.transfer_files import write_file
from tests.support.world import MODEL, World, blend, direction
from transfer.importing import import_file

IDENTITY = ModelIdentity.parse(MODEL)
MIN_CHUNKS = 100  # the exact-scan size these tests import with
SERVED = Tuning(exact_scan_max_chunks=MIN_CHUNKS)
EXACT = Tuning(exact_scan_max_chunks=10**8)


def sessions(world: World, account: str, count: int, first: int, per_session: int = 10) -> None:
    """`count` sessions of `per_session` chunks, on topics in turn (four of them)."""
    for s in range(first, first + count):
        session = world.session(account, f"session {s}")
        for i in range(per_session):
            vector = blend(direction(s % 4), direction(10_000 + s * 100 + i), 0.35)
            world.chunk(session, vector, index=i)


async def imported_in_files(
    engine: AsyncEngine,
    tmp_path: Path,
    files: list[int],
    rebuild: bool = True,
    before_tails: bool = False,
) -> tuple[str, list[list[str]]]:
    """One account whose sessions come in files of these many sessions (10 chunks each), each
    imported with the exact-scan size MIN_CHUNKS (and `rebuild`, the setting
    SIMILAR_SESSIONS_IMPORT_REBUILDS_OWN_INDEX); with `before_tails`, the own index the
    first file builds made one built before tails existed. The account and each file's
    index lines."""
    world = World()
    account, _ = world.account()
    indexes, first = [], 0
    for n, count in enumerate(files):
        sessions(world, account, count, first)
        first += count
        path = write_file(tmp_path, world.jsonl(), f"part{n}.jsonl")
        world.lines.clear()
        indexes.append((await import_file(engine, path, MIN_CHUNKS, rebuild=rebuild)).indexes)
        if before_tails and n == 0:
            await built_before_tails(engine, account)
    return account, indexes


async def in_shared_index(engine: AsyncEngine, account: str) -> object:
    """How many of the account's chunks the model's shared index holds."""
    return await scalar(
        engine,
        "SELECT count(*) FROM session_chunks WHERE account_id = :a AND in_shared_index",
        a=account,
    )


async def scalar(engine: AsyncEngine, sql: str, **params: object) -> object:
    async with engine.connect() as conn:
        return (await conn.execute(sa.text(sql), params)).scalar()


async def own_index_valid(engine: AsyncEngine, account: str, name: str | None = None) -> bool:
    valid = await scalar(
        engine,
        "SELECT x.indisvalid FROM pg_class i JOIN pg_index x ON x.indexrelid = i.oid "
        "WHERE i.relname = :n",
        n=name or account_index_name(uuid.UUID(account), IDENTITY),
    )
    return valid is True


async def tail_of(engine: AsyncEngine, account: str) -> Tail:
    async with engine.connect() as conn:
        (tail,) = await tails(conn, MIN_CHUNKS, [uuid.UUID(account)])
    return tail


async def built_before_tails(engine: AsyncEngine, account: str) -> None:
    """The account's own index as migration 0012 found it: no watermark in its predicate or
    its registry row, so it holds every row of the account."""
    account_id = uuid.UUID(account)
    name = account_index_name(account_id, IDENTITY)
    async with engine.begin() as conn:
        await conn.execute(sa.text(f"DROP INDEX {name}"))
        await conn.execute(
            sa.text(hnsw_index_ddl(name, IDENTITY, account_predicate(account_id, IDENTITY)))
        )
        await conn.execute(
            sa.text("UPDATE account_model_indexes SET watermark = NULL WHERE account_id = :a"),
            {"a": account_id},
        )


async def legacy_in_files(
    engine: AsyncEngine, tmp_path: Path, files: list[int], rebuild: bool = True
) -> tuple[str, list[list[str]]]:
    """imported_in_files, the first file's index made one built before tails existed."""
    return await imported_in_files(engine, tmp_path, files, rebuild, before_tails=True)


async def first_session(engine: AsyncEngine, account: str) -> str:
    return str(
        await scalar(
            engine,
            "SELECT id FROM runtime_sessions WHERE account_id = :a AND title = 'session 0'",
            a=account,
        )
    )


async def stale_mark(engine: AsyncEngine, account_id: uuid.UUID, mark: int | None) -> Snapshots:
    """A process's snapshots holding the account's as read now, but for the own index's
    watermark: `mark` (a stale one)."""
    snapshots = Snapshots(ttl_s=3600)
    async with engine.connect() as conn:
        known = await snapshots.of(conn, account_id, SERVED.exact_scan_max_chunks)
    stale = replace(known.of(str(IDENTITY)), shape=IndexShape(mark=mark))
    snapshots.put(account_id, replace(known, indexes={**known.indexes, str(IDENTITY): stale}))
    return snapshots


async def served_equals_exact(
    engine: AsyncEngine, account: str, snapshots: Snapshots | None = None
) -> str:
    """The served comparison of the account's first session (with the process's `snapshots`
    of the accounts, when given) equals the exact path's; its path."""
    session = await first_session(engine, account)
    served = await compare(engine, account, session, SERVED, snapshots, limit=20)
    exact = await compare(engine, account, session, EXACT, limit=20)
    assert [(n.session.id, n.score) for n in served.results] == [
        (n.session.id, n.score) for n in exact.results
    ]
    return str(served.lookup_path)


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


async def test_an_index_built_before_tails_is_built_again_with_a_watermark_by_every(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account, _ = await legacy_in_files(engine, tmp_path, [15])
    assert not (await tail_of(engine, account)).marked
    assert await merge_due(engine, MIN_CHUNKS) == []
    assert [m.chunks for m in await merge_due(engine, MIN_CHUNKS, every=True)] == [150]
    assert (await tail_of(engine, account)).marked
    assert await served_equals_exact(engine, account) == "account_index"


async def test_a_file_bringing_many_rows_rebuilds_an_index_built_before_tails_after_it(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account, indexes = await legacy_in_files(engine, tmp_path, [15, 10])  # 100 of 250 new
    assert REBUILD_SHARE <= 100 / 250
    assert indexes == [
        [str(IDENTITY), f"{account} {IDENTITY}"],
        [f"{account} {IDENTITY} (rebuilt)"],
    ]
    assert await own_index_valid(engine, account)
    assert await in_shared_index(engine, account) == 0
    assert await served_equals_exact(engine, account) == "account_index"


async def test_without_the_setting_many_rows_go_into_an_index_built_before_tails(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """The default: no drop (it would lock the table against every account's reads until the
    file commits); the rows go into the account's own graph only, not the shared one."""
    account, indexes = await legacy_in_files(engine, tmp_path, [15, 10], rebuild=False)
    assert indexes[1] == []
    assert await own_index_valid(engine, account)
    assert await in_shared_index(engine, account) == 0
    assert await served_equals_exact(engine, account) == "account_index"


async def fitted_at(engine: AsyncEngine, account: str) -> object:
    """When the account's own index had its ef_search fitted (data/ef_fits.py)."""
    return await scalar(
        engine,
        "SELECT ef_fit ->> 'fitted_at' FROM account_model_indexes WHERE account_id = :a",
        a=account,
    )


@pytest.mark.parametrize("rebuild", [False, True])
async def test_a_file_bringing_many_rows_fits_the_ef_search_again(
    engine: AsyncEngine, tmp_path: Path, rebuild: bool
) -> None:
    """Inserted into or rebuilt, an index built before tails that a file grows by a fifth is
    measured again on its rows; a file bringing fewer leaves its fit as it was."""
    account, _ = await legacy_in_files(engine, tmp_path, [15], rebuild=rebuild)
    first = await fitted_at(engine, account)
    assert first is not None
    world = World()
    sessions(world, account, 2, 15)  # 20 of 170 new: under a fifth
    few = await import_file(
        engine, write_file(tmp_path, world.jsonl()), MIN_CHUNKS, rebuild=rebuild
    )
    assert await fitted_at(engine, account) == first and "fit" not in few.seconds
    world = World()
    sessions(world, account, 10, 17)  # 100 of 270 new
    many = await import_file(
        engine, write_file(tmp_path, world.jsonl()), MIN_CHUNKS, rebuild=rebuild
    )
    again = await fitted_at(engine, account)
    assert again is not None and str(again) > str(first)
    assert ("rebuild" in many.seconds) is rebuild and ("fit" in many.seconds) is not rebuild
    assert await served_equals_exact(engine, account) == "account_index"


async def test_a_file_bringing_few_rows_goes_into_an_index_built_before_tails(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account, indexes = await legacy_in_files(engine, tmp_path, [20, 2])  # 20 of 220 new
    assert REBUILD_SHARE > 20 / 220 and indexes[1] == []
    assert await own_index_valid(engine, account)
    assert await served_equals_exact(engine, account) == "account_index"


async def test_a_failed_file_leaves_the_own_index_as_it_was(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account, _ = await legacy_in_files(engine, tmp_path, [15])
    upsert = import_rows.upsert_staged
    name = account_index_name(uuid.UUID(account), IDENTITY)
    dropped = []

    async def failing(conn: AsyncConnection, kind: str) -> int:
        if kind == "chunk":  # the own index is dropped for its rebuild by now
            found = await conn.execute(sa.text("SELECT to_regclass(:n)"), {"n": name})
            dropped.append(found.scalar() is None)
            raise RuntimeError("the disk went away")
        return await upsert(conn, kind)

    monkeypatch.setattr(import_rows, "upsert_staged", failing)
    world = World()
    sessions(world, account, 10, 15)
    with pytest.raises(RuntimeError, match="disk"):
        await import_file(engine, write_file(tmp_path, world.jsonl()), MIN_CHUNKS, rebuild=True)
    assert dropped == [True]
    chunks = await scalar(
        engine, "SELECT count(*) FROM session_chunks WHERE account_id = :a", a=account
    )
    assert chunks == 150
    assert await own_index_valid(engine, account)
    assert await served_equals_exact(engine, account) == "account_index"


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


async def test_a_drop_that_cannot_have_the_table_leaves_the_rows_to_the_index_as_it_is(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account, _ = await legacy_in_files(engine, tmp_path, [15])
    world = World()
    sessions(world, account, 10, 15)
    path = write_file(tmp_path, world.jsonl(), "many.jsonl")
    async with engine.connect() as reader:  # a long read of the table holds up the drop
        await reader.execute(sa.text("SELECT count(*) FROM session_chunks"))
        imported = await asyncio.wait_for(import_file(engine, path, MIN_CHUNKS, rebuild=True), 60)
        await reader.rollback()
    assert imported.indexes == []  # no rebuild: the rows went into the index one by one
    assert await own_index_valid(engine, account)
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
