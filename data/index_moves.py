"""Indexes moved to the kind built now (data/model_indexes.BUILT_KIND) without downtime:
`similar-sessions move-indexes`, once after an upgrade from indexes of another kind.

Each index is built again beside the old one, concurrently (the old one serves meanwhile),
registered with its kind, and the old one dropped MOVE_GRACE_S later, once every process
has read the new kind (a process orders by the kind it read, and an index of another kind
cannot serve that order). A shared index takes its kind's name; an own index is merged
(data/own_index_rebuilds.py), its tail with it. An index that fails to build is left
invalid and unregistered, the old one serving; the command can be run again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import MARKS, rebuild_lock_key
from data.model_identity import ModelIdentity
from data.model_indexes import (
    BUILT_KIND,
    IndexKind,
    build_concurrently,
    index_name,
    shared_predicate,
)
from data.own_index_rebuilds import MOVE_GRACE_S, maintenance, merge_concurrently


@dataclass(frozen=True, slots=True)
class Moved:
    """One index built again as BUILT_KIND: the account's own, or the model's shared one."""

    identity: ModelIdentity
    account_id: UUID | None  # None: the shared index
    kind: IndexKind  # the kind it had
    index_name: str  # its new name
    chunks: int
    seconds: float


async def move_indexes(
    engine: AsyncEngine,
    grace_s: float = MOVE_GRACE_S,
    on_move: Callable[[Moved], None] | None = None,
) -> list[Moved]:
    """Every shared and own index of another kind than BUILT_KIND, built again as it, one
    after the other; `on_move` hears of each."""
    async with engine.connect() as conn:
        shared = (
            await conn.execute(
                text(
                    "SELECT model_identity, index_kind, index_name FROM embedding_models "
                    "WHERE index_kind <> :kind ORDER BY model_identity"
                ),
                {"kind": BUILT_KIND.value},
            )
        ).all()
        own = (
            await conn.execute(
                text(
                    "SELECT account_id, model_identity, index_kind FROM account_model_indexes "
                    "WHERE index_kind <> :kind ORDER BY account_id, model_identity"
                ),
                {"kind": BUILT_KIND.value},
            )
        ).all()
    moved = []
    for model, kind, old in shared:
        moved.append(
            await _move_shared(engine, ModelIdentity.parse(model), IndexKind(kind), old, grace_s)
        )
        if on_move is not None:
            on_move(moved[-1])
    for account_id, model, kind in own:
        identity = ModelIdentity.parse(model)
        made = await merge_concurrently(engine, account_id, identity, grace_s)
        if made is None:  # registered, not built: it is built as BUILT_KIND
            continue
        moved.append(
            Moved(identity, account_id, IndexKind(kind), made.index_name, made.chunks, made.seconds)
        )
        if on_move is not None:
            on_move(moved[-1])
    return moved


async def _move_shared(
    engine: AsyncEngine, identity: ModelIdentity, kind: IndexKind, old: str, grace_s: float
) -> Moved:
    """The model's shared index built again as BUILT_KIND under its kind's name, beside the
    old one, concurrently; registered; the old one dropped grace_s later."""
    name = index_name(identity, BUILT_KIND)
    async with maintenance(engine, rebuild_lock_key(name)) as conn:
        await conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))  # a failed one
        chunks, seconds = await build_concurrently(conn, name, identity, shared_predicate(identity))
        await conn.execute(
            text(
                "UPDATE embedding_models SET index_name = :name, index_kind = :kind "
                "WHERE model_identity = :identity"
            ),
            {"name": name, "kind": BUILT_KIND.value, "identity": str(identity)},
        )
        MARKS.clear()  # this process reads the new kind at once; the others within the grace
        await asyncio.sleep(grace_s)
        await conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {old}"))
    return Moved(identity, None, kind, name, chunks, seconds)
