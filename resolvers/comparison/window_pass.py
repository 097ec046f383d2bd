"""Many sessions of one account compared at once with the same arguments, exactly, in one
pass: what the failure modes ask of a window's sessions.

The first statement plans every comparison as similarSessions plans it (inventories, the
comparison model, the probes) and looks nothing up; the pool of chunks the arguments accept
is read once; every (probe, chunk) pair is ranked in memory to find each probe's candidates
(resolvers/rules/nearest.py); pgvector measures those exactly; each probe keeps its nearest
`per_probe` at or above its model's floor, ties by chunk id, by the exact lookup's own terms
(data/exact_lookup.py). Then rank and assemble as every comparison does: the answers are
similarSessions' own on the exact path, at a fraction of its cost for hundreds of sessions."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID

import numpy as np
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection
from threadpoolctl import threadpool_limits

from data import comparison as sql
from data.account_snapshot import AccountSnapshot, Snapshots
from data.errors import ComparisonTimedOut
from data.exact_lookup import kept
from data.lookups import Lookup, Probe
from data.model_identity import ModelIdentity
from data.window_pool import (
    PoolFilter,
    Vectors,
    chunk_vectors,
    exact_distances,
    pool_vectors,
)
from resolvers.arguments import SimilarArgs
from resolvers.comparison.answer import assemble, elapsed_ms, in_slices
from resolvers.comparison.looking import after_timeout, first_look, served
from resolvers.comparison.phases import batch_of, cutoff, ranked
from resolvers.comparison.plans import snapshot_of
from resolvers.comparison.results import SimilarResult
from resolvers.comparison.state import Batch, Comparison, Narrowing
from resolvers.rules.calibration import passage_floors
from resolvers.rules.lookup_plan import Caller, LookupPlan, plan
from resolvers.rules.nearest import candidates
from resolvers.tuning import Tuning

log = structlog.get_logger(__name__)


async def compare_exactly(
    conn: AsyncConnection,
    account_id: UUID,
    ids: Sequence[UUID],
    args: SimilarArgs,
    narrowing: Narrowing,
    tuning: Tuning,
    snapshots: Snapshots,
    now: datetime,
) -> list[SimilarResult | None]:
    """Each session compared with `args` (and `narrowing`) as similarSessions compares it on the
    exact path, its window ending at `now`, within the failure modes' budget; one result per
    id, in id order (None for a session the account does not have)."""
    started = time.perf_counter()
    batch = batch_of(account_id, [(i, args, narrowing) for i in ids], now)
    exactly = plan(Caller.FAILURE_MODES, tuning)
    settings = exactly.settings
    where = PoolFilter(
        cutoff(args, now), args.statuses, args.source_types, narrowing.started_before
    )
    try:
        with sql.within_budget():
            snapshot: AccountSnapshot = await snapshot_of(conn, snapshots, account_id, tuning)
            await sql.ensure_configured(conn, settings)
            planned = await first_look(conn, batch, snapshot, exactly, look=False)

            async def unserved(newer: AccountSnapshot) -> Batch:
                return await first_look(conn, batch, newer, exactly, look=False)

            batch, newer = await served(
                conn, snapshots, snapshot, account_id, planned, planned.paths.values(), unserved
            )
            snapshot = snapshot if newer is None else newer
            for identity in snapshot.models:
                batch = await _looked_up(conn, batch, identity, where, exactly)
    except ComparisonTimedOut:
        log.warning("similar_sessions_timed_out", budget_ms=settings.timeout_ms)
        batch = await after_timeout(conn, batch)
    batch = batch.with_comparisons(iter(await in_slices(ranked, batch.comparisons)))
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


# (probe's place in the pass, pool row): a candidate pair.
Pair = tuple[int, int]
Probes = list[tuple[int, Probe]]  # (comparison's place in the batch, its probe)


async def _looked_up(
    conn: AsyncConnection,
    batch: Batch,
    identity: ModelIdentity,
    where: PoolFilter,
    exactly: LookupPlan,
) -> Batch:
    """Every probe of the model's comparisons answered with its nearest pool chunks. The
    ranking in memory and the folding of hundreds of thousands of rows run in a worker
    thread: the event loop keeps serving other requests meanwhile."""
    model = str(identity)
    probes = [(n, p) for n, c in enumerate(batch.comparisons) if c.model == model for p in c.probes]
    if not probes:
        return batch
    pool = await pool_vectors(conn, batch.account_id, identity, where)
    vectors = await chunk_vectors(conn, batch.account_id, identity, [p.chunk_id for _, p in probes])
    limits = exactly.limits(floors=passage_floors([identity]))
    per_probe, floor = limits.per_probe, limits.floor_for(model)
    owners = [batch.comparisons[n].ask.session_id for n, _ in probes]
    pairs = await asyncio.to_thread(_pairs, owners, vectors, pool, per_probe, floor)
    distances: list[float | None] = []
    if pairs:
        # The probes' chunks after the pool's: every pair names two places in one list.
        ids = [*pool.ids, *(p.chunk_id for _, p in probes)]
        places = [(len(pool.ids) + k, row) for k, row in pairs]
        distances = await exact_distances(conn, batch.account_id, identity, ids, places)
    found = _Found(probes, pool, pairs, distances, per_probe, floor)
    starts = await asyncio.to_thread(_pair_starts, found)
    first: dict[int, int] = {}  # each comparison's first probe: its probes are consecutive
    for k, (n, _) in enumerate(probes):
        first.setdefault(n, k)

    def answered(item: tuple[int, Comparison]) -> Comparison:
        n, c = item
        if c.found is None or c.model != model or n not in first:
            return c
        shown = tuple(
            replace(p, answer=_lookup(found, first[n] + i, starts)) for i, p in enumerate(c.probes)
        )
        return replace(c, found=replace(c.found, probes=shown))

    numbered = list(enumerate(batch.comparisons))
    return batch.with_comparisons(iter(await in_slices(answered, numbered)))


@dataclass(frozen=True, slots=True)
class _Found:
    """What the pass found for one model's probes: their candidate pairs and the exact
    distance of each."""

    probes: Probes
    pool: Vectors
    pairs: list[Pair]
    distances: list[float | None]  # None: the chunk was removed since the pool was read
    per_probe: int
    floor: float


def _pairs(
    owners: Sequence[UUID], vectors: np.ndarray, pool: Vectors, per_probe: int, floor: float
) -> list[Pair]:
    """The candidate pairs of every probe (`owners`: each probe's session), in probe order."""
    codes = {s: k for k, s in enumerate(dict.fromkeys(pool.sessions))}
    probe_codes = np.array([codes.get(s, -1) for s in owners], dtype=np.int64)
    pool_codes = np.array([codes[s] for s in pool.sessions], dtype=np.int64)
    # One BLAS thread: the other core stays with the database and the other accounts'
    # requests (two made the pass a few hundred milliseconds quicker and another account's
    # requests twice as slow meanwhile, bench.latency.failure_modes).
    with threadpool_limits(limits=1, user_api="blas"):
        found = candidates(vectors, probe_codes, pool.vectors, pool_codes, per_probe, floor)
    return [(k, int(row)) for k, rows in enumerate(found) for row in rows]


def _pair_starts(found: _Found) -> np.ndarray:
    """Where each probe's pairs start in `found.pairs` (one more: where they end)."""
    probes = np.fromiter((k for k, _ in found.pairs), dtype=np.int64, count=len(found.pairs))
    return np.searchsorted(probes, np.arange(len(found.probes) + 1))


def _lookup(found: _Found, k: int, starts: np.ndarray) -> Lookup:
    """Probe k's hits among its measured candidates, kept as the exact lookup keeps them."""
    pool, number = found.pool, found.probes[k][1].number
    measured = []
    for place in range(int(starts[k]), int(starts[k + 1])):
        row = found.pairs[place][1]
        measured.append((found.distances[place], pool.ids[row], pool.sessions[row]))
    return Lookup(kept(number, measured, found.floor, found.per_probe))
