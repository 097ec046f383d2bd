"""One partial HNSW index per large account and model: the approximate path's index.

A shared per-model index filtered by account loses rows (or time) when the account is a
small share of the table; an index whose predicate names the account holds only the
rows a lookup may return, so an iterative scan finds them at once.

An index holds the account's rows written up to its watermark (`written_seq`, migration
0012; the predicate names it): the rows written after its build, its tail, are not
inserted into its graph one by one (about 5 ms a row at m = 16, ef_construction 200), but
looked up exactly beside it, until a merge (data/own_index_rebuilds.py) builds the index
again in one pass over all of them, under the other of its two names, and drops the old.
An index registered before migration 0012 has no watermark and holds every row."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from data import ef_fits
from data.engine import lift_statement_budget
from data.model_identity import ModelIdentity
from data.model_indexes import (
    BUILT_KIND,
    IndexKind,
    comparable_count,
    comparable_predicate,
    hnsw_index_ddl,
    not_a_repeat,
    prepare_build,
)

# How long a process reads an account's indexes from its memory at most (its snapshot,
# data/account_snapshot.py, SIMILAR_SESSIONS_ACCOUNT_SNAPSHOT_TTL_S) before it reads them
# again: a move to another kind keeps the old index this long (and a margin).
INDEX_TTL_S = 60.0


@dataclass(frozen=True, slots=True)
class BuiltIndex:
    account_id: UUID
    identity: ModelIdentity
    index_name: str
    chunks: int
    seconds: float
    ef_search: int | None = None  # fitted on it (data/ef_fits.py); None: the configured one


def account_index_name(account_id: UUID, identity: ModelIdentity) -> str:
    """The index's first name (a merge builds it again under the other, `merged_name`)."""
    digest = hashlib.sha1(f"{account_id}|{identity}".encode()).hexdigest()[:16]  # noqa: S324
    return "session_chunks_hnsw_a_" + digest


def merged_name(current: str, account_id: UUID, identity: ModelIdentity) -> str:
    """The name a merge builds the index under: the other of its two."""
    first = account_index_name(account_id, identity)
    return first + "_m" if current == first else first


def account_predicate(
    account_id: UUID,
    identity: ModelIdentity,
    alias: str = "",
    watermark: int | None = None,
    repeats: bool = False,
) -> str:
    """The index's WHERE clause, the account (and the watermark) inlined as literals: a query
    repeats it verbatim, so even a generic plan of a prepared statement can prove it and use
    the index. A row without a number (written before migration 0012) is below every mark.
    No repeat is in the index; with `repeats`, the rows its lookups answer with
    (model_indexes.not_a_repeat)."""
    p = f"{alias}." if alias else ""
    literal = f"'{UUID(str(account_id))}'::uuid"
    own = f"{p}account_id = {literal} AND {comparable_predicate(identity, alias)}"
    if watermark is not None:
        own += f" AND coalesce({p}written_seq, 0) <= {int(watermark)}::bigint"
    return own + not_a_repeat(alias, repeats)


def tail_predicate(identity: ModelIdentity, watermark: int, alias: str = "c") -> str:
    """The account's (:account_id) comparable rows written after the watermark: the index's
    tail, looked up exactly (session_chunks_written_idx finds them)."""
    p = f"{alias}." if alias else ""
    return (
        f"{p}account_id = :account_id AND {p}written_seq > {int(watermark)}::bigint "
        f"AND {comparable_predicate(identity, alias)}"
    )


# The number the last written row took: an index built now (the table held against writers)
# holds every row up to it.
WRITTEN_SO_FAR = "SELECT coalesce(pg_sequence_last_value('session_chunks_written_seq'), 0)"


async def written_so_far(conn: AsyncConnection) -> int:
    return int((await conn.execute(text(WRITTEN_SO_FAR))).scalar_one())


@dataclass(frozen=True, slots=True)
class IndexShape:
    """What a statement's text names of the indexes of one model an account is looked up
    in: its own index's watermark (None: no own index, or one built before migration 0012,
    which holds every row) and kind, and the shared index's kind. An index not registered
    when they were read can only be built later, as BUILT_KIND."""

    shared_kind: IndexKind = BUILT_KIND
    own_kind: IndexKind = BUILT_KIND
    mark: int | None = None


# Per model identity: the shared index's kind, and the account's own index's watermark, kind,
# fitted ef_search (NULL kind: no own index) and whether PostgreSQL has finished building it.
ACCOUNT_INDEXES = (
    "SELECT model_identity, m.index_kind, r.index_kind, r.watermark, r.ef_search, "
    "EXISTS (SELECT 1 FROM pg_class i JOIN pg_index x ON x.indexrelid = i.oid "
    "AND x.indisvalid WHERE i.relname = r.index_name) "
    "FROM embedding_models m FULL JOIN "
    "(SELECT * FROM account_model_indexes WHERE account_id = :account_id) r "
    "USING (model_identity)"
)


def shapes(rows: Iterable[Sequence[Any]]) -> dict[str, IndexShape]:
    """The shapes by model identity, from ACCOUNT_INDEXES' rows."""
    return {
        model: IndexShape(
            IndexKind(shared or BUILT_KIND),
            IndexKind(own or BUILT_KIND),
            None if mark is None else int(mark),
        )
        for model, shared, own, mark, *_ in rows
    }


def valid_registered(account: str, model: str) -> str:
    """FROM and WHERE of the registered own index (`r`) of the account and model (SQL
    expressions), joined to the catalog so that only an index PostgreSQL has finished
    building (indisvalid) counts: every statement asking for a ready own index uses it."""
    return (
        "account_model_indexes r JOIN pg_class i ON i.relname = r.index_name "
        "JOIN pg_index x ON x.indexrelid = i.oid AND x.indisvalid "
        f"WHERE r.account_id = {account} AND r.model_identity = {model}"
    )


VALID_ACCOUNT_INDEX = "SELECT r.index_name, r.watermark, r.index_kind FROM " + valid_registered(
    ":account_id", ":identity"
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


@dataclass(frozen=True, slots=True)
class OwnIndex:
    """A registered own index PostgreSQL has finished building."""

    name: str
    watermark: int | None  # None: built before migration 0012, it holds every row
    kind: IndexKind

    def predicate(self, account_id: UUID, identity: ModelIdentity, alias: str = "") -> str:
        return account_predicate(account_id, identity, alias, self.watermark)


async def valid_own_index(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity
) -> OwnIndex | None:
    """The account's index for the model when it exists and is ready to use."""
    row = (
        await conn.execute(
            text(VALID_ACCOUNT_INDEX), {"account_id": account_id, "identity": str(identity)}
        )
    ).first()
    if row is None:
        return None
    return OwnIndex(row[0], None if row[1] is None else int(row[1]), IndexKind(row[2]))


async def valid_account_index(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity
) -> str | None:
    """The name of the account's index for the model when it exists and is ready to use."""
    own = await valid_own_index(conn, account_id, identity)
    return None if own is None else own.name


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
    for stale in (name, merged_name(name, account_id, identity)):  # a failed build's
        await conn.execute(text(f"DROP INDEX IF EXISTS {stale}"))
    # writers held off until the commit (the build takes this lock anyway): every row
    # numbered up to the mark is written, every later one will be numbered past it
    await conn.execute(text("LOCK TABLE session_chunks IN SHARE MODE"))
    watermark = await written_so_far(conn)
    predicate = account_predicate(account_id, identity, watermark=watermark)
    chunks = await comparable_count(conn, predicate)
    await prepare_build(conn, chunks, identity.dimensions)
    started = time.perf_counter()
    await conn.execute(text(hnsw_index_ddl(name, identity, predicate, kind=BUILT_KIND)))
    seconds = time.perf_counter() - started
    await register(conn, account_id, identity, chunks, watermark, kind=BUILT_KIND, seconds=seconds)
    if not fit:
        return BuiltIndex(account_id, identity, name, chunks, seconds)
    fitted = await fit_own_index(conn, account_id, identity)
    return BuiltIndex(account_id, identity, name, chunks, seconds, fitted.ef_search)


async def fit_own_index(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity
) -> ef_fits.EfFit:
    """Fit the ef_search of the account's own index of the model (valid), in the caller's
    transaction, and register it (data/ef_fits.py)."""
    own = await valid_own_index(conn, account_id, identity)
    if own is None:
        predicate, kind = account_predicate(account_id, identity, "c"), BUILT_KIND
    else:
        predicate, kind = own.predicate(account_id, identity, "c"), own.kind
    return await ef_fits.fit(conn, account_id, identity, predicate, kind)


async def register(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    chunks: int,
    watermark: int | None = None,
    name: str | None = None,
    kind: IndexKind = BUILT_KIND,
    seconds: float | None = None,
) -> None:
    """Register the account's index of the model (its rows are then written out of the
    shared index), before or after it is built, with its watermark (None: not built yet, or
    built holding every row), name (its first one unless given), kind and the seconds its
    build took (None: not built yet, or not timed); a fit of an earlier build is dropped.
    Its time of build is the clock's, not the transaction's start."""
    await conn.execute(
        text(
            "INSERT INTO account_model_indexes (account_id, model_identity, index_name, "
            "chunks_at_build, watermark, index_kind, built_at, build_seconds) "
            "VALUES (:account_id, :identity, :name, :chunks, :watermark, :kind, "
            "clock_timestamp(), :seconds) "
            "ON CONFLICT (account_id, model_identity) DO UPDATE "
            "SET chunks_at_build = EXCLUDED.chunks_at_build, built_at = EXCLUDED.built_at, "
            "index_name = EXCLUDED.index_name, watermark = EXCLUDED.watermark, "
            "index_kind = EXCLUDED.index_kind, build_seconds = EXCLUDED.build_seconds, "
            "ef_search = NULL, ef_fit = NULL"
        ),
        {
            "account_id": account_id,
            "identity": str(identity),
            "name": name or account_index_name(account_id, identity),
            "chunks": chunks,
            "watermark": watermark,
            "kind": kind.value,
            "seconds": seconds,
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
    built = []
    for account_id, model in await without_own_index(conn, min_chunks, account_ids):
        if (account_id, model) in deferred or await _rebuilding(conn, account_id, model):
            continue
        made = await ensure_account_index(conn, account_id, ModelIdentity.parse(model), fit)
        if made is not None:
            built.append(made)
    return built


async def without_own_index(
    conn: AsyncConnection,
    min_chunks: int,
    account_ids: list[UUID] | None = None,
    most_waiting: int | None = None,
) -> list[tuple[UUID, str]]:
    """Each (account, model identity) with more than min_chunks comparable chunks and no
    valid own index (of these accounts, when given); with `most_waiting`, only of accounts
    with at most as many chunks waiting to be embedded."""
    rows = await conn.execute(
        text(
            "SELECT c.account_id, c.embedding_model FROM session_chunks c "
            "WHERE c.redaction_state = 'clear' AND c.embedding_state = 'embedded' "
            "AND (CAST(:accounts AS uuid[]) IS NULL OR c.account_id = ANY(:accounts)) "
            "AND NOT EXISTS (SELECT 1 FROM "
            + valid_registered("c.account_id", "c.embedding_model")
            + ") "
            "GROUP BY c.account_id, c.embedding_model HAVING count(*) > :min_chunks "
            "AND (CAST(:most AS integer) IS NULL OR (SELECT count(*) FROM session_chunks w "
            "  WHERE w.account_id = c.account_id AND w.embedding_state = 'pending') <= :most) "
            "ORDER BY c.account_id, c.embedding_model"
        ),
        {"accounts": account_ids, "min_chunks": min_chunks, "most": most_waiting},
    )
    return [(account_id, model) for account_id, model in rows.all()]
