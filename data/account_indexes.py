"""One partial HNSW index per large account and model: the approximate path's index.

A shared per-model index filtered by account loses rows (or time) when the account is a
small share of the table; an index whose predicate names the account holds only the
rows a lookup may return, so an iterative scan finds them at once."""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from data import ef_fits
from data.engine import lift_statement_budget
from data.model_identity import ModelIdentity
from data.model_indexes import (
    comparable_count,
    comparable_predicate,
    hnsw_index_ddl,
    prepare_build,
)


@dataclass(frozen=True, slots=True)
class BuiltIndex:
    account_id: UUID
    identity: ModelIdentity
    index_name: str
    chunks: int
    seconds: float
    ef_search: int | None = None  # fitted on it (data/ef_fits.py); None: the configured one


def account_index_name(account_id: UUID, identity: ModelIdentity) -> str:
    digest = hashlib.sha1(f"{account_id}|{identity}".encode()).hexdigest()[:16]  # noqa: S324
    return "session_chunks_hnsw_a_" + digest


def account_predicate(account_id: UUID, identity: ModelIdentity, alias: str = "") -> str:
    """The index's WHERE clause, the account inlined as a literal: a query repeats it verbatim,
    so even a generic plan of a prepared statement can prove it and use the index."""
    p = f"{alias}." if alias else ""
    literal = f"'{UUID(str(account_id))}'::uuid"
    return f"{p}account_id = {literal} AND {comparable_predicate(identity, alias)}"


# The registered index of (:account_id, :identity), joined to the catalog so that only an
# index PostgreSQL has finished building (indisvalid) counts.
VALID_ACCOUNT_INDEX = (
    "SELECT r.index_name FROM account_model_indexes r "
    "JOIN pg_class i ON i.relname = r.index_name "
    "JOIN pg_index x ON x.indexrelid = i.oid AND x.indisvalid "
    "WHERE r.account_id = :account_id AND r.model_identity = :identity"
)


def rebuild_lock_key(index_name: str) -> str:
    """The advisory lock (hashtext of this key) a concurrent rebuild of the index holds."""
    return f"own index rebuild {index_name}"


async def _rebuilding(conn: AsyncConnection, account_id: UUID, model: str) -> bool:
    """Whether another session is building the account's index concurrently right now
    (ensure_account_index would otherwise drop its half-built index)."""
    name = account_index_name(account_id, ModelIdentity.parse(model))
    taken = await conn.execute(
        text("SELECT pg_try_advisory_xact_lock(hashtext(:k))"), {"k": rebuild_lock_key(name)}
    )
    return not taken.scalar_one()


async def valid_account_index(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity
) -> str | None:
    """The name of the account's index for the model when it exists and is ready to use."""
    return (
        await conn.execute(
            text(VALID_ACCOUNT_INDEX), {"account_id": account_id, "identity": str(identity)}
        )
    ).scalar()


async def ensure_account_index(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, fit: bool = True
) -> BuiltIndex | None:
    """Build and register the account's index for the model unless a valid one exists (None
    then); one registered but missing, or left invalid by a concurrent build that failed, is
    built again. The build runs outside the request budget (prepare_build), at any size.
    With `fit`, its ef_search is fitted in the same transaction (data/ef_fits.py); a caller
    whose transaction holds the table for others (an import) fits after its commit instead."""
    name = account_index_name(account_id, identity)
    if await valid_account_index(conn, account_id, identity) is not None:
        return None
    await conn.execute(text(f"DROP INDEX IF EXISTS {name}"))  # a failed concurrent build's
    predicate = account_predicate(account_id, identity)
    chunks = await comparable_count(conn, predicate)
    await prepare_build(conn, chunks, identity.dimensions)
    started = time.perf_counter()
    await conn.execute(text(hnsw_index_ddl(name, identity, predicate)))
    seconds = time.perf_counter() - started
    await register(conn, account_id, identity, chunks)
    if not fit:
        return BuiltIndex(account_id, identity, name, chunks, seconds)
    fitted = await fit_own_index(conn, account_id, identity)
    return BuiltIndex(account_id, identity, name, chunks, seconds, fitted.ef_search)


async def fit_own_index(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity
) -> ef_fits.EfFit:
    """Fit the ef_search of the account's own index of the model (valid), in the caller's
    transaction, and register it (data/ef_fits.py)."""
    return await ef_fits.fit(
        conn, account_id, identity, account_predicate(account_id, identity, "c")
    )


async def register(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, chunks: int
) -> None:
    """Register the account's index of the model (its rows are then written out of the
    shared index), before or after it is built; a fit of an earlier build is dropped."""
    await conn.execute(
        text(
            "INSERT INTO account_model_indexes "
            "(account_id, model_identity, index_name, chunks_at_build) "
            "VALUES (:account_id, :identity, :name, :chunks) "
            "ON CONFLICT (account_id, model_identity) DO UPDATE "
            "SET chunks_at_build = EXCLUDED.chunks_at_build, built_at = now(), "
            "ef_search = NULL, ef_fit = NULL"
        ),
        {
            "account_id": account_id,
            "identity": str(identity),
            "name": account_index_name(account_id, identity),
            "chunks": chunks,
        },
    )


async def ensure_large_account_indexes(
    conn: AsyncConnection,
    min_chunks: int,
    account_ids: list[UUID] | None = None,
    deferred: frozenset[tuple[UUID, str]] = frozenset(),
    fit: bool = True,
) -> list[BuiltIndex]:
    """Build an index for every (account, model) with more than min_chunks comparable chunks
    that has no valid one (none registered, or registered and not built); limited to
    account_ids when given, and leaving out the `deferred` ones (account, model identity),
    whose index is rebuilt concurrently after the transaction; `fit` as ensure_account_index."""
    await lift_statement_budget(conn)
    rows = await conn.execute(
        text(
            "SELECT c.account_id, c.embedding_model FROM session_chunks c "
            "WHERE c.redaction_state = 'clear' AND c.embedding_state = 'embedded' "
            "AND (CAST(:accounts AS uuid[]) IS NULL OR c.account_id = ANY(:accounts)) "
            "AND NOT EXISTS (SELECT 1 FROM account_model_indexes r "
            "JOIN pg_class i ON i.relname = r.index_name "
            "JOIN pg_index x ON x.indexrelid = i.oid AND x.indisvalid "
            "WHERE r.account_id = c.account_id AND r.model_identity = c.embedding_model) "
            "GROUP BY c.account_id, c.embedding_model HAVING count(*) > :min_chunks "
            "ORDER BY c.account_id, c.embedding_model"
        ),
        {"accounts": account_ids, "min_chunks": min_chunks},
    )
    built = []
    for account_id, model in rows.all():
        if (account_id, model) in deferred or await _rebuilding(conn, account_id, model):
            continue
        made = await ensure_account_index(conn, account_id, ModelIdentity.parse(model), fit)
        if made is not None:
            built.append(made)
    return built
