"""The comparison's lookups: the first statement for a whole batch, and the same statement
again for some probes of some comparisons (a model the snapshot had not seen, a wider search,
an exact check), each answer folded into the comparisons' records."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import TypeVar
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data.account_snapshot import AccountSnapshot, Snapshots
from data.lookups import Inventory, ModelPath
from data.sessions import SessionRow, sessions_by_id
from resolvers.comparison.plans import route
from resolvers.comparison.state import Batch, Comparison
from resolvers.rules.calibration import NO_FLOOR, passage_floors
from resolvers.rules.lookup_plan import LookupPlan
from values.lookups import LookupPath

# The probes of a comparison to look up again (none: the comparison is not asked again).
Pick = Callable[[Comparison], frozenset[int]]
Looked = TypeVar("Looked")


async def served(
    conn: AsyncConnection,
    snapshots: Snapshots,
    snapshot: AccountSnapshot,
    account_id: UUID,
    looked: Looked,
    paths: Iterable[ModelPath],
    again: Callable[[AccountSnapshot], Awaitable[Looked]],
) -> tuple[Looked, AccountSnapshot | None]:
    """A statement's answer when every model it met had a branch in it; else (a model
    appeared since the snapshot was read) the account read again and `again` asked with the
    snapshot it now has, once: that answer and that snapshot (None: not asked again)."""
    if not any(p.path is LookupPath.UNSERVED for p in paths):
        return looked, None
    snapshots.forget(account_id)
    newer = await snapshots.of(conn, account_id, snapshot.counted_to)
    return await again(newer), newer


async def first_look(
    conn: AsyncConnection,
    batch: Batch,
    snapshot: AccountSnapshot,
    plan: LookupPlan,
    look: bool = True,
) -> Batch:
    """Every comparison of the batch in one statement, as the plan says: its session,
    inventory, probes and their lookups, the account's setting and each model's path. Not to
    `look`, the plan alone: no probe is looked up (every ask names none `again`)."""
    asks = [c.ask if look else replace(c.ask, again=()) for c in batch.comparisons]
    models = snapshot.models
    limits = plan.limits(floors=passage_floors(models))
    looked = await sql.look_up(
        conn, batch.account_id, asks, models, limits, route=route(plan, snapshot)
    )
    found = zip(batch.comparisons, looked.inventories, strict=True)
    comparisons = tuple(replace(c, found=inventory) for c, inventory in found)
    return replace(batch, comparisons=comparisons, setting=looked.setting, paths=looked.paths)


async def look_again(
    conn: AsyncConnection,
    batch: Batch,
    snapshot: AccountSnapshot,
    plan: LookupPlan,
    pick: Pick,
) -> Batch:
    """The picked probes looked up again as the plan says (an exact check's plan: by an exact
    pass), in one statement; their answers replace the ones they had, and the paths their
    models took now are kept (a check's path is not the comparison's)."""
    picked = [(c, pick(c)) for c in batch.comparisons]
    asks = [replace(c.ask, again=tuple(sorted(n))) for c, n in picked if n]
    if not asks:
        return batch
    checking = not plan.pooled  # a check scans; a wider retry or an unserved model pools
    models = snapshot.models
    limits = plan.limits(floors=passage_floors(models))
    looked = await sql.look_up(
        conn, batch.account_id, asks, models, limits, route=route(plan, snapshot)
    )
    again = iter(looked.inventories)
    comparisons = (c.answered(n, next(again), checking) if n else c for c, n in picked)
    batch = batch.with_comparisons(comparisons)
    return batch if checking else replace(batch, paths=batch.paths | looked.paths)


async def look_nearest(
    conn: AsyncConnection,
    batch: Batch,
    snapshot: AccountSnapshot,
    plan: LookupPlan,
    searching_at: int,
) -> Batch:
    """For the comparisons that found no hit (and offer the nearest), their probes' nearest
    passages without a floor, as the nearest passages' plan says, at its ef_search (set only
    if the connection is `searching_at` another; their plan takes their caller's): one
    statement, only when there are such comparisons."""
    hitless = [
        c
        for c in batch.found
        if c.model is not None and not c.has_hits and c.narrowing.offer_nearest
    ]
    if not hitless:
        return batch
    if plan.ef_search != searching_at:
        await sql.widen_search(conn, plan.ef_search)
    limits = plan.limits(floor=NO_FLOOR)
    asks = [c.ask for c in hitless]
    looked = await sql.look_up(
        conn, batch.account_id, asks, snapshot.models, limits, route=route(plan, snapshot)
    )
    nearest = {
        c.ask.key: tuple(h for p in found.probes for h in p.answer.hits)
        for c, found in zip(hitless, looked.inventories, strict=True)
        if found is not None
    }
    return batch.with_comparisons(
        replace(c, nearest_hits=nearest.get(c.ask.key, ())) for c in batch.comparisons
    )


async def after_timeout(conn: AsyncConnection, batch: Batch) -> Batch:
    """The aborted transaction is rolled back; which asked sessions exist is read again, so
    a missing one still answers as missing and a found one knows nothing but its session."""
    await conn.rollback()
    ids = [c.ask.session_id for c in batch.comparisons]
    existing = await sessions_by_id(conn, batch.account_id, ids)
    comparisons = tuple(
        replace(c, found=_bare(existing.get(c.ask.session_id))) for c in batch.comparisons
    )
    return replace(batch, comparisons=comparisons, paths={}, timed_out=True)


def _bare(session: SessionRow | None) -> Inventory | None:
    return None if session is None else Inventory(session, {}, 0)
