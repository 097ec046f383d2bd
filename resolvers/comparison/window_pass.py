"""Many sessions of one account compared at once with the same arguments, exactly, in one
pass: what the failure modes ask of a window's sessions.

The first statement plans every comparison as similarSessions plans it (inventories, the
comparison model, the probes) and looks nothing up; the pool of chunks the arguments accept
is read once; every (probe, chunk) pair is ranked in memory to find each probe's candidates
(resolvers/rules/nearest.py); pgvector measures those exactly; each probe keeps its nearest
`per_probe` at or above its model's floor, ties by chunk id, as the exact path's lookup keeps
them. Then rank and assemble as every comparison does: the answers are similarSessions' own
on the exact path, at a fraction of its cost for hundreds of sessions."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from uuid import UUID

import numpy as np
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data.errors import ComparisonTimedOut
from data.lookups import Hit, Lookup, LookupPath
from data.model_catalog import ModelCatalog
from data.model_identity import ModelIdentity
from data.window_pool import PoolFilter, chunk_vectors, exact_distances, pool_vectors
from resolvers.arguments import SimilarArgs
from resolvers.comparison.answer import assemble, elapsed_ms
from resolvers.comparison.looking import after_timeout, first_look
from resolvers.comparison.phases import cutoff, plan, rank
from resolvers.comparison.results import SimilarResult
from resolvers.comparison.state import Batch
from resolvers.rules.nearest import candidates
from resolvers.tuning import Tuning

log = structlog.get_logger(__name__)


async def compare_exactly(
    conn: AsyncConnection,
    account_id: UUID,
    ids: Sequence[UUID],
    args: SimilarArgs,
    tuning: Tuning,
    catalog: ModelCatalog,
    now: datetime,
) -> list[SimilarResult | None]:
    """Each session compared with `args` as similarSessions compares it on the exact path,
    its window ending at `now`, within the failure modes' budget; one result per id, in id
    order (None for a session the account does not have)."""
    started = time.perf_counter()
    batch = plan(account_id, [(i, args) for i in ids], now)
    settings = replace(tuning.comparison_settings, timeout_ms=tuning.failure_modes_timeout_ms)
    where = PoolFilter(cutoff(args, now), args.statuses, args.source_types, args.started_before)
    try:
        with sql.within_budget():
            models = await catalog.models(conn, account_id)
            await sql.ensure_configured(conn, settings)
            planned = await _planned(conn, batch, models, tuning)
            if any(p.path is LookupPath.UNSERVED for p in planned.paths.values()):
                catalog.forget(account_id)  # a model appeared since it was read
                models = await catalog.models(conn, account_id)
                planned = await _planned(conn, batch, models, tuning)
            batch = planned
            for identity in models:
                batch = await _looked_up(conn, batch, identity, where, tuning)
    except ComparisonTimedOut:
        log.warning("similar_sessions_timed_out", budget_ms=settings.timeout_ms)
        batch = await after_timeout(conn, batch)
    batch = await asyncio.to_thread(rank, batch)
    results = await assemble(conn, batch, tuning, started)
    log.info(
        "similar_sessions_exactly",
        account_id=str(account_id),
        sessions=len(ids),
        probes=sum(len(c.probes) for c in batch.comparisons),
        timed_out=batch.timed_out,
        elapsed_ms=elapsed_ms(started),
    )
    return results


async def _planned(
    conn: AsyncConnection, batch: Batch, models: Sequence[ModelIdentity], tuning: Tuning
) -> Batch:
    """The first statement with no probe looked up (every ask's `again` empty): each
    comparison's inventory and probes, the setting and the models' paths (exact)."""
    bare = batch.with_comparisons(
        replace(c, ask=replace(c.ask, again=())) for c in batch.comparisons
    )
    looked = await first_look(conn, bare, models, tuning, exact=True)
    pairs = zip(looked.comparisons, batch.comparisons, strict=True)
    return looked.with_comparisons(replace(c, ask=asked.ask) for c, asked in pairs)


async def _looked_up(
    conn: AsyncConnection, batch: Batch, identity: ModelIdentity, where: PoolFilter, tuning: Tuning
) -> Batch:
    """Every probe of the model's comparisons answered with its nearest pool chunks."""
    model = str(identity)
    asked = [(n, c) for n, c in enumerate(batch.comparisons) if c.model == model and c.probes]
    if not asked:
        return batch
    pool = await pool_vectors(conn, batch.account_id, identity, where)
    probes = [(n, p) for n, c in asked for p in c.probes]
    vectors = await chunk_vectors(conn, batch.account_id, identity, [p.chunk_id for _, p in probes])
    codes = {s: k for k, s in enumerate(dict.fromkeys(pool.sessions))}
    owners = np.array(
        [codes.get(batch.comparisons[n].ask.session_id, -1) for n, _ in probes], dtype=np.int64
    )
    pool_codes = np.array([codes[s] for s in pool.sessions], dtype=np.int64)
    limits = tuning.limits
    floor = tuning.limits_for([identity]).floor_for(model)
    found = await asyncio.to_thread(
        candidates, vectors, owners, pool.vectors, pool_codes, limits.per_probe, floor
    )
    pairs = [(k, int(row)) for k, rows in enumerate(found) for row in rows]
    distances = await exact_distances(
        conn,
        batch.account_id,
        identity,
        [probes[k][1].chunk_id for k, _ in pairs],
        [pool.ids[row] for _, row in pairs],
    )
    nearest: list[list[tuple[float, UUID, UUID]]] = [[] for _ in probes]
    for (k, row), distance in zip(pairs, distances, strict=True):
        if distance == distance and 1 - distance >= floor:  # NaN is never a hit
            nearest[k].append((distance, pool.ids[row], pool.sessions[row]))
    answers: dict[tuple[int, int], Lookup] = {}
    for k, (n, probe) in enumerate(probes):
        kept = sorted(nearest[k])[: limits.per_probe]
        hits = tuple(Hit(probe.number, chunk, session, 1 - d) for d, chunk, session in kept)
        answers[(n, probe.number)] = Lookup(hits)
    comparisons = []
    for n, c in enumerate(batch.comparisons):
        if c.found is None or c.model != model:
            comparisons.append(c)
            continue
        shown = tuple(replace(p, answer=answers[(n, p.number)]) for p in c.probes)
        comparisons.append(replace(c, found=replace(c.found, probes=shown)))
    return batch.with_comparisons(iter(comparisons))
