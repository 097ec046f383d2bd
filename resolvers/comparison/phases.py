"""The comparison of a batch of sessions of one account, in phases over its records
(state.py): the batch; its lookup plan (rules/lookup_plan.py); look up (the first statement:
sessions, inventories, probes, paths and every probe's lookup, looking.py), widen the short
approximate lookups, check those that cannot vouch (verify.py); rank; assemble (the second
statement and the answers, answer.py). Each phase is a span (resolvers/telemetry.py).
Two statements whatever the batch size, unless an approximate lookup comes back short or
cannot vouch for its answer."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data.account_snapshot import AccountSnapshot, Snapshots
from data.errors import ComparisonTimedOut
from data.lookups import Ask
from resolvers.arguments import SimilarArgs
from resolvers.comparison.answer import assemble, elapsed_ms
from resolvers.comparison.check_costs import CheckCosts
from resolvers.comparison.looking import (
    after_timeout,
    first_look,
    look_again,
    look_nearest,
    served,
)
from resolvers.comparison.plans import account_plan, snapshot_of
from resolvers.comparison.results import SimilarResult
from resolvers.comparison.state import Batch, Comparison, Narrowing
from resolvers.comparison.verify import doubtful, say_doubts, verify
from resolvers.rules import ranking
from resolvers.rules.calibration import ProbeKind, calibration
from resolvers.rules.lookup_path import reached_floor
from resolvers.rules.lookup_plan import Caller, LookupPlan
from resolvers.telemetry import phase
from resolvers.tuning import Tuning
from values.lookups import LookupPath

log = structlog.get_logger(__name__)
# A session to compare, with the API's arguments and what the failure modes ask beyond them.
SimilarKey = tuple[UUID, SimilarArgs, Narrowing]


async def compare_sessions(
    conn: AsyncConnection,
    account_id: UUID,
    keys: Sequence[SimilarKey],
    tuning: Tuning,
    snapshots: Snapshots | None = None,
    checks: CheckCosts | None = None,
    now: datetime | None = None,
) -> list[SimilarResult | None]:
    """One result per key, in key order; None for a session this account does not have.
    `snapshots` and `checks` are the process's (a fresh one each when not given); windows
    end at `now` (the wall clock when not given)."""
    started = time.perf_counter()
    batch = batch_of(account_id, keys, now or datetime.now(UTC))
    batch = await look_up(conn, batch, tuning, snapshots or Snapshots(), checks or CheckCosts())
    with phase("ranking"):
        batch = rank(batch)
    with phase("details"):
        results = await assemble(conn, batch, tuning, started)
    log.info(
        "similar_sessions",
        account_id=str(account_id),
        sessions=len(keys),
        probes=sum(len(c.probes) for c in batch.comparisons),
        hits=sum(1 for c in batch.comparisons for _ in c.hits()),
        paths={model: p.path.value for model, p in batch.paths.items()},
        comparable_chunks={model: p.comparable for model, p in batch.paths.items()},
        exact_scan_max_chunks=None if batch.plan is None else batch.plan.exact_scan_max_chunks,
        routed_exact=batch.plan is not None and batch.plan.routed,
        timed_out=batch.timed_out,
        unverified=sum(c.unverified for c in batch.comparisons),
        elapsed_ms=elapsed_ms(started),
    )
    return results


def batch_of(account_id: UUID, keys: Sequence[SimilarKey], now: datetime) -> Batch:
    """One comparison per asked key, with its window's start."""
    comparisons = tuple(
        Comparison(ask_of(n, session_id, args, now, narrowing), args, narrowing)
        for n, (session_id, args, narrowing) in enumerate(keys)
    )
    return Batch(account_id, comparisons)


async def look_up(
    conn: AsyncConnection, batch: Batch, tuning: Tuning, snapshots: Snapshots, checks: CheckCosts
) -> Batch:
    """The first statement, within the comparison's time budget; the probes an approximate
    lookup answered short are asked again, once, with a wider search, and those whose lookup
    still cannot vouch for its answer are checked by an exact pass."""
    started = time.perf_counter()
    account_id = batch.account_id
    try:
        with sql.within_budget():
            snapshot: AccountSnapshot = await snapshot_of(conn, snapshots, account_id, tuning)
            planned = account_plan(Caller.COMPARISON, tuning, snapshot, account_id, checks)
            await sql.ensure_configured(conn, planned.settings)
            with phase("lookups", planned):
                batch = await first_look(conn, replace(batch, plan=planned), snapshot, planned)
                say_doubts(batch, planned)

            async def unserved(newer: AccountSnapshot) -> Batch:
                again = account_plan(Caller.COMPARISON, tuning, newer, account_id, checks)
                return await look_again(conn, batch, newer, again, _unserved(batch))

            batch, newer = await served(
                conn, snapshots, snapshot, account_id, batch, batch.paths.values(), unserved
            )
            if newer is not None:
                snapshot = newer
                planned = account_plan(Caller.COMPARISON, tuning, snapshot, account_id, checks)
            widen = _worth_widening(batch, planned, checks)
            short = sum(len(widen(c)) for c in batch.comparisons)
            if short and planned.widen_ef_search is not None:
                with phase("widened", planned):
                    await sql.widen_search(conn, planned.widen_ef_search)
                    batch = await look_again(conn, batch, snapshot, planned, widen)
                    # what follows (the nearest passages) searches at the plan's again
                    await sql.search_at(conn, planned.ef_search)
                log.info("similar_sessions_widened", probes=short)
            if any(doubtful(c, batch, planned) for c in batch.comparisons):
                with phase("check", planned):
                    batch = await verify(conn, batch, snapshot, planned, checks)
            _learn_route(checks, batch, planned.routed, (time.perf_counter() - started) * 1000)
            nearest = account_plan(
                Caller.NEAREST, tuning, snapshot, account_id, caller_ef_search=planned.ef_search
            )
            with phase("nearest", nearest):
                batch = await look_nearest(conn, batch, snapshot, nearest, planned.ef_search)
    except ComparisonTimedOut:
        log.warning("similar_sessions_timed_out", budget_ms=tuning.comparison_timeout_ms)
        return await after_timeout(conn, batch)
    return batch


def _learn_route(checks: CheckCosts, batch: Batch, routed_exact: bool, cost_ms: float) -> None:
    """What the batch's lookups cost a lookup, on the path they took: the approximate one's
    whole cost (scan, retry and checks), or an exact pass's (it keeps that cost known while
    the account is routed exact)."""
    lookups = sum(
        c.lookups(frozenset(p.number for p in c.probes))
        for c in batch.found
        if (path := batch.path(c.model)) is not None and (path.approximate or routed_exact)
    )
    if routed_exact:
        checks.learn(batch.account_id, lookups, cost_ms)
    else:
        checks.learn_approximate(batch.account_id, lookups, cost_ms)


def _unserved(batch: Batch) -> Callable[[Comparison], frozenset[int]]:
    """Every probe of the comparisons whose model had no branch in the statement."""

    def pick(c: Comparison) -> frozenset[int]:
        if batch.path(c.model) is not LookupPath.UNSERVED:
            return frozenset()
        return frozenset(p.number for p in c.probes)

    return pick


def _worth_widening(
    batch: Batch, planned: LookupPlan, checks: CheckCosts
) -> Callable[[Comparison], frozenset[int]]:
    """The short probes a wider search may help: approximate probes answered with fewer than
    the per-probe number of rows (the HNSW scan can end inside a tight cluster of the probe's
    own session). One whose full window went past the floor found every hit it could unless
    its scan went astray, and the exact check that follows settles that either way: it is
    widened only when the account cannot afford that check (sparse neighbourhoods, the usual
    case for lexical vectors on real sessions, then cost one statement less)."""
    window, budget_ms = planned.limits().window, planned.check_budget_ms
    short = {c.ask.key: _short(c, batch) for c in batch.comparisons}
    past = {
        c.ask.key: frozenset(
            n
            for n in short[c.ask.key]
            if reached_floor(c.probes[n].answer.window, window, _floor(c))
        )
        for c in batch.comparisons
    }
    lookups = sum(c.lookups(past[c.ask.key]) for c in batch.comparisons)
    affordable = budget_ms > 0 and checks.affordable(batch.account_id, lookups, budget_ms)
    if not lookups or not affordable:
        return lambda c: short[c.ask.key]
    return lambda c: short[c.ask.key] - past[c.ask.key]


def _short(c: Comparison, batch: Batch) -> frozenset[int]:
    path = batch.path(c.model)
    if path is None or not path.approximate:
        return frozenset()
    per_probe = ranking.SIMILAR_NEIGHBOURS_PER_PROBE
    return frozenset(p.number for p in c.probes if len(p.answer.hits) < per_probe)


def _floor(c: Comparison) -> float:
    return calibration(c.model, ProbeKind.PASSAGE).floor


def rank(batch: Batch) -> Batch:
    """Group each comparison's hits into its ordered neighbours and cut its page (pure)."""
    return batch.with_comparisons(ranked(c) for c in batch.comparisons)


def ranked(c: Comparison) -> Comparison:
    """One comparison's hits grouped into its ordered neighbours, its page cut (pure)."""
    matches = c.args.max_matches_per_session
    neighbours = ranking.rank_neighbours(c.hits(), matches)
    page, more = ranking.page_after(neighbours, c.args.after, c.args.limit)
    nearest = ranking.rank_neighbours(c.nearest_hits, matches)[: c.args.limit]
    return replace(c, page=tuple(page), more=more, ranked=tuple(neighbours), nearest=tuple(nearest))


def ask_of(
    key: int, session_id: UUID, args: SimilarArgs, now: datetime, narrowing: Narrowing
) -> Ask:
    """The ask of one session's comparison: its window's start and its neighbour filters."""
    return Ask(
        key,
        session_id,
        cutoff(args, now),
        args.statuses,
        args.source_types,
        started_before=narrowing.started_before,
    )


def cutoff(args: SimilarArgs, now: datetime) -> datetime | None:
    """The start of the asked window, if any."""
    return None if args.window_days is None else now - timedelta(days=args.window_days)
