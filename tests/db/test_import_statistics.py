"""An import refreshes the statistics of the tables it changed by as many rows as autovacuum
waits for (data/import_rows.stale_tables), right after its commit: the account's first
comparisons and the fit plan with them, not a minute later. A small file into a large table
leaves them to autovacuum, and so does a table another transaction holds: the import never
waits for it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.transfer_files import write_file
from tests.support.world import World, blend, direction
from transfer.importing import import_file


def account_file(world: World, tmp_path: Path, name: str, sessions: int, per_session: int) -> Path:
    account, _ = world.account(name)
    for s in range(sessions):
        session = world.session(account, f"{name} session {s}")
        for i in range(per_session):
            world.chunk(session, blend(direction(s % 4), direction(100 * s + i), 0.3), index=i)
    path = write_file(tmp_path, world.jsonl(), f"{name}.jsonl")
    world.lines.clear()
    return path


async def counted(engine: AsyncEngine, table: str) -> float:
    """The rows the table's statistics last counted (pg_class.reltuples; -1 never counted)."""
    async with engine.connect() as conn:
        return float(
            (
                await conn.execute(
                    sa.text("SELECT reltuples FROM pg_class WHERE oid = CAST(:t AS regclass)"),
                    {"t": table},
                )
            ).scalar_one()
        )


async def test_a_large_file_is_analyzed_after_its_commit(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    world = World()
    imported = await import_file(engine, account_file(world, tmp_path, "acme", 12, 10))
    assert set(imported.analyzed) == {"runtime_sessions", "session_chunks"}
    assert await counted(engine, "session_chunks") == 120
    assert await counted(engine, "runtime_sessions") == 12
    async with engine.connect() as conn:
        columns = (
            await conn.execute(
                sa.text("SELECT count(*) FROM pg_stats WHERE tablename = 'session_chunks'")
            )
        ).scalar_one()
    assert columns > 0


async def test_a_small_file_into_a_large_table_is_left_to_autovacuum(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    world = World()
    await import_file(engine, account_file(world, tmp_path, "acme", 12, 10))
    # 20 chunks into 120: under autovacuum's 50 + 12; a never-counted table is always analyzed
    imported = await import_file(engine, account_file(world, tmp_path, "globex", 2, 10))
    assert "session_chunks" not in imported.analyzed
    assert await counted(engine, "session_chunks") == 120


async def last_analyzed(engine: AsyncEngine) -> dict[str, object]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT relname, last_analyze FROM pg_stat_user_tables "
                "WHERE relname IN ('session_chunks', 'runtime_sessions')"
            )
        )
        return {row.relname: row.last_analyze for row in rows}


async def test_a_table_another_transaction_holds_is_skipped_not_waited_for(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """A concurrent index build holds the table's SHARE UPDATE EXCLUSIVE lock for minutes, as
    ANALYZE would; the import commits and goes on (SKIP_LOCKED), autovacuum analyzes later."""
    world = World()
    await import_file(engine, account_file(world, tmp_path, "acme", 1, 2))  # the model known
    before = await last_analyzed(engine)
    path = account_file(world, tmp_path, "globex", 12, 10)
    async with engine.connect() as holder:
        await holder.execute(sa.text("BEGIN"))
        await holder.execute(sa.text("LOCK TABLE session_chunks IN SHARE UPDATE EXCLUSIVE MODE"))
        imported = await asyncio.wait_for(import_file(engine, path), timeout=60)
        await holder.execute(sa.text("ROLLBACK"))
    assert imported.lines["chunk"] == 120
    assert "session_chunks" in imported.analyzed  # asked for (120 rows into 2)
    after = await last_analyzed(engine)
    assert after["session_chunks"] == before["session_chunks"]  # and skipped: held elsewhere
