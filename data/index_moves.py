"""Indexes moved to the kind built now (data/model_indexes.BUILT_KIND) without downtime:
`similar-sessions move-indexes`, once after an upgrade from indexes of another kind.

Each index is built again beside the old one, concurrently (the old one serves meanwhile),
registered with its kind, and the old one dropped MOVE_GRACE_S later, once every process
has read the new kind (a process orders by the kind it read, and an index of another kind
cannot serve that order). A shared index takes its kind's name; an own index is merged
(data/own_index_rebuilds.py), its tail with it. An index built before migration 0016 holds a
loop's repeats in its graph and is built again the same way (a shared one of the built kind
beside itself, then renamed). An index that fails to build is left
invalid and unregistered, the old one serving; the command can be run again."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import rebuild_lock_key
from data.model_identity import ModelIdentity
from data.model_indexes import (
    BUILT_KIND,
    IndexKind,
    beside,
    build_concurrently,
    index_name,
    shared_predicate,
)
from data.own_index_rebuilds import MOVE_GRACE_S, maintenance, merge_concurrently


@dataclass(frozen=True, slots=True)
class ToMove:
    """An index of another kind than BUILT_KIND: the account's own, or the model's shared
    one (account_id None), registered under `name`."""

    identity: ModelIdentity
    account_id: UUID | None
    kind: IndexKind
    name: str


@dataclass(frozen=True, slots=True)
class Moved:
    """One index built again as BUILT_KIND."""

    was: ToMove
    index_name: str  # its new name
    chunks: int
    seconds: float


# An index built before migration 0016 (registered as `r`), whose graph still holds a loop's
# repeats (data/repeats.py): its predicate does not leave them out.
_HOLDS_REPEATS = (
    "EXISTS (SELECT 1 FROM pg_class i JOIN pg_index x ON x.indexrelid = i.oid "
    "WHERE i.relname = r.index_name "
    "AND pg_get_expr(x.indpred, x.indrelid) NOT LIKE '%repeat_of IS NULL%')"
)


async def to_move(engine: AsyncEngine) -> list[ToMove]:
    """Every index of another kind than BUILT_KIND, and every index that holds repeats
    (`_HOLDS_REPEATS`; an own one built again as a merge builds it): the shared ones
    first."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT model_identity, NULL::uuid, index_kind, index_name FROM embedding_models r "
                f"WHERE index_kind <> :kind OR {_HOLDS_REPEATS} UNION ALL "
                "SELECT model_identity, account_id, index_kind, index_name "
                f"FROM account_model_indexes r WHERE index_kind <> :kind OR {_HOLDS_REPEATS} "
                "ORDER BY 2 NULLS FIRST, 1"
            ),
            {"kind": BUILT_KIND.value},
        )
        return [
            ToMove(ModelIdentity.parse(model), account_id, IndexKind(kind), name)
            for model, account_id, kind, name in rows.all()
        ]


async def move(engine: AsyncEngine, index: ToMove, grace_s: float = MOVE_GRACE_S) -> Moved | None:
    """The index built again as BUILT_KIND, concurrently, beside the old one, which is
    dropped grace_s after the new one is registered; None for an own index registered but
    not built (its build makes it BUILT_KIND)."""
    if index.account_id is None:
        return await _move_shared(engine, index, grace_s)
    made = await merge_concurrently(engine, index.account_id, index.identity, grace_s)
    return None if made is None else Moved(index, made.index_name, made.chunks, made.seconds)


async def move_indexes(engine: AsyncEngine, grace_s: float = MOVE_GRACE_S) -> list[Moved]:
    """Every index of another kind than BUILT_KIND moved, one after the other."""
    moved = [await move(engine, index, grace_s) for index in await to_move(engine)]
    return [m for m in moved if m is not None]


async def _move_shared(engine: AsyncEngine, index: ToMove, grace_s: float) -> Moved:
    """The model's shared index built again as BUILT_KIND under its kind's name, beside the
    old one, concurrently; registered; the old one dropped grace_s later. One of that kind
    already (it holds repeats) is built beside itself under another name, then takes its
    name once the old one is dropped (nothing to register, no kind for a process to read)."""
    identity = index.identity
    name = index_name(identity, BUILT_KIND)
    building = beside(name) if index.name == name else name
    async with maintenance(engine, rebuild_lock_key(name)) as conn:
        await conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {building}"))  # a failed one
        chunks, seconds = await build_concurrently(
            conn, building, identity, shared_predicate(identity)
        )
        if building != name:
            await conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}"))
            # a SHARE UPDATE EXCLUSIVE lock: reads and writes go on
            await conn.execute(text(f"ALTER INDEX {building} RENAME TO {name}"))
            return Moved(index, name, chunks, seconds)
        await conn.execute(
            text(
                "UPDATE embedding_models SET index_name = :name, index_kind = :kind "
                "WHERE model_identity = :identity"
            ),
            {"name": name, "kind": BUILT_KIND.value, "identity": str(identity)},
        )
        # every process reads the new kind within the grace (its snapshots expire)
        await asyncio.sleep(grace_s)
        await conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}"))
    return Moved(index, name, chunks, seconds)
