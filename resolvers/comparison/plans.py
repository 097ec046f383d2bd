"""A caller's lookup plan on an account (resolvers/rules/lookup_plan.py), from what the
process knows of the account: its snapshot (data/account_snapshot.py: its models, their
sizes, own indexes and fits) and whether its comparisons are routed exact (the check costs);
and the route its statements take the plan by."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data.account_snapshot import AccountSnapshot, Snapshots
from data.lookups import ModelPath
from data.vector_slots import Space, VectorSlot
from resolvers.comparison.check_costs import CheckCosts
from resolvers.rules.lookup_plan import (
    APPLIES,
    Account,
    Caller,
    LookupPlan,
    ModelFacts,
    counted_to,
    plan,
)
from resolvers.tuning import Tuning
from values.lookups import LookupPath


async def snapshot_of(
    conn: AsyncConnection, snapshots: Snapshots, account_id: UUID, tuning: Tuning
) -> AccountSnapshot:
    """The account's snapshot, its chunks counted far enough for the exact scan's size."""
    return await snapshots.of(conn, account_id, counted_to(tuning))


def account_plan(
    caller: Caller,
    tuning: Tuning,
    snapshot: AccountSnapshot,
    account_id: UUID,
    checks: CheckCosts | None = None,
    caller_ef_search: int | None = None,
) -> LookupPlan:
    """The caller's plan on the account, from what the caller takes of it (a caller on its
    caller's connection: at `caller_ef_search`)."""
    applies = APPLIES[caller]
    fitted = None
    if applies.fitted and tuning.ef_search_fitted:
        fitted = snapshot.ef_search(snapshot.models)
    routed = applies.routed and checks is not None and checks.routes_exact(account_id)
    known = {str(m): snapshot.of(str(m)) for m in snapshot.models}
    facts = {m: ModelFacts(k.comparable, k.ready, k.registered) for m, k in known.items()}
    return plan(caller, tuning, Account(fitted, routed, facts, caller_ef_search))


def route(planned: LookupPlan, snapshot: AccountSnapshot) -> sql.Route:
    """What the statements take of the plan: each model's path (with its size, for the
    trace), the shapes of the account's indexes, exact lookups pooled or scanning."""
    paths = {
        str(m): ModelPath(planned.path_of(str(m)), snapshot.of(str(m)).comparable)
        for m in snapshot.models
    }
    return sql.Route(paths, snapshot.marks, planned.pooled)


def text_route(planned: LookupPlan, snapshot: AccountSnapshot, space: Space) -> sql.Route:
    """The route of a search text's one lookup in the space: the plan's path in the primary
    slot; the dense slot has no HNSW index, its lookups take the exact path."""
    if space.slot is VectorSlot.PRIMARY:
        return route(planned, snapshot)
    return sql.Route({str(space.identity): ModelPath(LookupPath.EXACT, 0)}, {}, planned.pooled)
