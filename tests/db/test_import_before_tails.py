"""Files into an account whose own index was built before tails existed (no watermark): it
takes a file's rows into its graph, or, with the setting, is rebuilt in one pass after the
transaction (its ef_search fitted again); `every` builds it again with a watermark; a failed
file, or a drop that cannot have the table, leaves the index as it was."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import import_rows
from data.account_indexes import (
    account_index_name,
)
from data.own_index_rebuilds import REBUILD_SHARE
from data.own_index_tails import merge_due
from tests.support.own_index_files import (
    IDENTITY,
    MIN_CHUNKS,
    fitted_at,
    in_shared_index,
    legacy_in_files,
    own_index_valid,
    scalar,
    served_equals_exact,
    sessions,
    tail_of,
)
from tests.support.transfer_files import write_file
from tests.support.world import World
from transfer.importing import import_file


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
