"""An account's sessions imported file by file, with the exact-scan size its own index is
made at, and what the own-index tests read of it (tests/db/test_import_incremental.py,
tests/db/test_import_before_tails.py)."""

from __future__ import annotations

import uuid
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import account_index_name, account_predicate
from data.account_snapshot import Snapshots
from data.model_identity import ModelIdentity
from data.model_indexes import hnsw_index_ddl
from data.own_index_tails import Tail, tails
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


async def fitted_at(engine: AsyncEngine, account: str) -> object:
    """When the account's own index had its ef_search fitted (data/ef_fits.py)."""
    return await scalar(
        engine,
        "SELECT ef_fit ->> 'fitted_at' FROM account_model_indexes WHERE account_id = :a",
        a=account,
    )
