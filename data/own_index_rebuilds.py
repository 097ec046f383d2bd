"""An account's own index kept in one pass when a file brings it many rows (issue #29).

pgvector inserts a row into an HNSW graph on disk one at a time: at m = 16 and
ef_construction 200, about 5 ms a row here, where a build in memory costs about 1 ms a row
of the whole graph. So before a file's chunks are written, the accounts it takes past the
exact-scan size have their own index registered (their rows then stay out of the shared
index, and the index is built after them in one pass, in the file's transaction), and an
account whose existing own index the file adds at least REBUILD_SHARE of its rows to has
that index dropped, to be built again after the transaction commits, concurrently (the
account's comparisons take the exact path until it is valid). The drop holds an ACCESS
EXCLUSIVE lock on session_chunks until the file's commit, so every read of every account
waits meanwhile: it is asked for only by SIMILAR_SESSIONS_IMPORT_REBUILDS_OWN_INDEX, for a
maintenance window."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import ef_fits
from data.account_indexes import (
    BuiltIndex,
    account_index_name,
    account_predicate,
    fit_own_index,
    rebuild_lock_key,
    register,
    valid_account_index,
)
from data.model_identity import ModelIdentity
from data.model_indexes import build_memory, comparable_count, hnsw_index_ddl

# A file adding at least this share of an account's comparable rows of a model rebuilds its
# own index instead of inserting into it: one pass over all rows (about 1 ms a row) against
# the new rows one by one (about 5 ms each), measured with bench.importing.
REBUILD_SHARE = 0.2
# How long the drop may wait for the table (it waits for every statement reading it, and
# holds up those after it): past this the file's rows go into the index one by one.
DROP_LOCK_TIMEOUT_MS = 2000
LOCK_NOT_AVAILABLE = "55P03"


@dataclass(frozen=True, slots=True)
class OwnIndexPlan:
    """The own indexes a file's transaction dropped, to build again after it commits."""

    rebuilt: tuple[tuple[UUID, ModelIdentity], ...] = ()
    # own indexes the file brings REBUILD_SHARE of their rows or more to, inserted into: their
    # ef_search is fitted again after the commit (data/ef_fits.py)
    grown: tuple[tuple[UUID, ModelIdentity], ...] = ()

    @property
    def deferred(self) -> frozenset[tuple[UUID, str]]:
        """(account, model identity) of each, as ensure_large_account_indexes leaves out."""
        return frozenset((account_id, str(identity)) for account_id, identity in self.rebuilt)


async def plan_own_indexes(
    conn: AsyncConnection,
    min_chunks: int,
    incoming: list[tuple[UUID, str, int, int]],
    rebuild: bool,
) -> OwnIndexPlan:
    """Before the chunks of `incoming` (account, model, new comparable rows, rows it has)
    are written: register the own index of each the file takes past min_chunks (its rows
    stay out of the shared index; ensure_large_account_indexes builds it after them); with
    `rebuild`, drop the own index each gets REBUILD_SHARE of its rows or more from the file."""
    rebuilt, grown = [], []
    for account_id, model, new, existing in incoming:
        if existing + new <= min_chunks:
            continue  # the exact path's: no own index to keep
        identity = ModelIdentity.parse(model)
        if await valid_account_index(conn, account_id, identity) is None:
            await register(conn, account_id, identity, existing + new)
        elif new >= REBUILD_SHARE * (existing + new):
            if rebuild and await _dropped(conn, account_index_name(account_id, identity)):
                rebuilt.append((account_id, identity))
            else:
                grown.append((account_id, identity))
    return OwnIndexPlan(tuple(rebuilt), tuple(grown))


async def _dropped(conn: AsyncConnection, name: str) -> bool:
    """Drop the index in the transaction (its lock on the table lasts until the commit),
    unless the table cannot be had within DROP_LOCK_TIMEOUT_MS."""
    previous = (await conn.execute(text("SELECT current_setting('lock_timeout')"))).scalar_one()
    savepoint = await conn.begin_nested()
    try:
        await _lock_timeout(conn, str(DROP_LOCK_TIMEOUT_MS))
        await conn.execute(text(f"DROP INDEX {name}"))
        await _lock_timeout(conn, previous)
    except DBAPIError as exc:
        await savepoint.rollback()
        if getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
            raise
        return False
    await savepoint.commit()
    return True


async def _lock_timeout(conn: AsyncConnection, value: str) -> None:
    await conn.execute(text("SELECT set_config('lock_timeout', :v, true)"), {"v": value})


async def rebuild_concurrently(
    engine: AsyncEngine, account_id: UUID, identity: ModelIdentity
) -> BuiltIndex | None:
    """Build the account's own index again with CREATE INDEX CONCURRENTLY, outside any
    transaction; None when a valid one exists (another process built it meanwhile)."""
    name = account_index_name(account_id, identity)
    predicate = account_predicate(account_id, identity)
    async with engine.connect() as pooled:
        conn = await pooled.execution_options(isolation_level="AUTOCOMMIT")
        key = {"k": rebuild_lock_key(name)}
        await conn.execute(text("SET statement_timeout = 0"))  # the lock may wait for a build
        await conn.execute(text("SELECT pg_advisory_lock(hashtext(:k))"), key)
        try:
            if await valid_account_index(conn, account_id, identity) is not None:
                return None
            chunks = await comparable_count(conn, predicate)
            await conn.execute(
                text(
                    "SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes("
                    "current_setting('maintenance_work_mem')), :memory) / 1024 || 'kB', false)"
                ),
                {"memory": build_memory(chunks, identity.dimensions)},
            )
            await conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))  # invalid
            started = time.perf_counter()
            await conn.execute(text(hnsw_index_ddl(name, identity, predicate, concurrently=True)))
            seconds = time.perf_counter() - started
            await register(conn, account_id, identity, chunks)
        finally:
            await conn.execute(text("RESET statement_timeout"))
            await conn.execute(text("RESET maintenance_work_mem"))
            await conn.execute(text("SELECT pg_advisory_unlock(hashtext(:k))"), key)
    fitted = await fit_again(engine, account_id, identity)
    ef_search = None if fitted is None else fitted.ef_search
    return BuiltIndex(account_id, identity, name, chunks, seconds, ef_search)


async def fit_again(
    engine: AsyncEngine, account_id: UUID, identity: ModelIdentity
) -> ef_fits.EfFit | None:
    """Fit the ef_search of the account's own index of the model again, in a transaction of
    its own (after a build concurrently, or a file that grew it); None without a valid one."""
    async with engine.begin() as conn:
        if await valid_account_index(conn, account_id, identity) is None:
            return None
        return await fit_own_index(conn, account_id, identity)


Fitted = tuple[UUID, ModelIdentity, ef_fits.EfFit]


async def fit_all(
    engine: AsyncEngine,
    unfitted_only: bool = True,
    on_fit: Callable[[Fitted], None] | None = None,
) -> list[Fitted]:
    """Fit every registered own index (only those without a fit unless told otherwise): for
    indexes built before fits existed (`similar-sessions fit-indexes`); `on_fit` hears of
    each as it is fitted."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT account_id, model_identity FROM account_model_indexes "
                "WHERE NOT CAST(:unfitted AS boolean) OR ef_fit IS NULL "
                "ORDER BY account_id, model_identity"
            ),
            {"unfitted": unfitted_only},
        )
        registered = rows.all()
    fitted = []
    for account_id, model in registered:
        identity = ModelIdentity.parse(model)
        made = await fit_again(engine, account_id, identity)
        if made is not None:
            fitted.append((account_id, identity, made))
            if on_fit is not None:
                on_fit(fitted[-1])
    return fitted
