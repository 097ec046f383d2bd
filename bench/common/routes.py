"""The route the product's plan gives an account's first statement, for the benchmarks that
run that statement alone (a tuning's exact-scan size forces a path)."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data.account_snapshot import read_snapshot
from data.comparison import Route
from resolvers.comparison.plans import account_plan, route
from resolvers.rules.lookup_plan import Caller
from resolvers.tuning import Tuning


async def planned_route(conn: AsyncConnection, account_id: UUID, tuning: Tuning) -> Route:
    """The comparison's route on the account under `tuning`, from a snapshot read now."""
    snapshot = await read_snapshot(conn, account_id, tuning.exact_scan_max_chunks)
    return route(account_plan(Caller.COMPARISON, tuning, snapshot, account_id), snapshot)
