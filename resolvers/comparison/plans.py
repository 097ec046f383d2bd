"""A caller's lookup plan on an account (resolvers/rules/lookup_plan.py), from what the
process knows of the account: the ef_search fitted on its own indexes (the model catalog,
read with its models) and whether its comparisons are routed exact (the check costs)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data.model_catalog import ModelCatalog
from data.model_identity import ModelIdentity
from resolvers.comparison.check_costs import CheckCosts
from resolvers.rules.lookup_plan import APPLIES, Account, Caller, LookupPlan, plan
from resolvers.tuning import Tuning


async def account_plan(
    conn: AsyncConnection,
    caller: Caller,
    tuning: Tuning,
    catalog: ModelCatalog,
    account_id: UUID,
    models: Sequence[ModelIdentity],
    checks: CheckCosts | None = None,
) -> LookupPlan:
    """The caller's plan on the account, reading only what the caller takes of it."""
    applies = APPLIES[caller]
    fitted = None
    if applies.fitted and tuning.ef_search_fitted:
        fitted = await catalog.ef_search(conn, account_id, models)
    routed = applies.routed and checks is not None and checks.routes_exact(account_id)
    return plan(caller, tuning, Account(fitted, routed))
