"""The comparison of a batch of sessions of one account, in phases: plan, look up (the first
statement: sessions, inventories, probes, paths and every probe lookup), rank, assemble (the
second statement: what the answers show). Two statements whatever the batch size, unless an
approximate lookup comes back short or cannot vouch for its answer."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison as sql
from data import comparison_details as details
from data.errors import ComparisonTimedOut
from data.model_catalog import ModelCatalog
from data.model_identity import ModelIdentity
from data.sessions import sessions_by_id
from resolvers import ranking
from resolvers.arguments import SimilarArgs
from resolvers.check_costs import CheckCosts, check_exactly
from resolvers.lookup_path import LookupPath, reached_floor, vouches_for
from resolvers.results import SimilarResult
from resolvers.similar_results import result_of
from resolvers.tuning import Tuning

log = structlog.get_logger(__name__)
LOOKUP_PATHS = {path.value for path in LookupPath}


@dataclass
class Comparison:
    """One asked session while its batch is worked through."""

    ask: sql.Ask
    args: SimilarArgs
    model: str | None = None  # the comparison model
    embedded: int = 0  # its embedded clear chunks of that model
    probes: list[UUID] = field(default_factory=list)
    hits: list[ranking.Found] = field(default_factory=list)
    page: list[ranking.Neighbour] = field(default_factory=list)
    more: bool = False
    comparable_elsewhere: bool = False

    @property
    def key(self) -> int:
        return self.ask.key


@dataclass
class Batch:
    """The comparisons of one account asked together, and what the first statement found."""

    account_id: UUID
    comparisons: list[Comparison]
    looked: sql.Looked = field(default_factory=sql.Looked)
    timed_out: bool = False
    unverified: set[int] = field(default_factory=set)  # keys whose exact check ran out of time

    def path(self, model: str | None) -> LookupPath | None:
        """The path the model's probes took; None when none was looked up."""
        path = self.looked.paths.get(model or "", ("",))[0]
        return LookupPath(path) if path in LOOKUP_PATHS else None

    @property
    def found(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.key in self.looked.sessions]


async def compare_sessions(
    conn: AsyncConnection,
    account_id: UUID,
    keys: Sequence[tuple[UUID, SimilarArgs]],
    tuning: Tuning,
    catalog: ModelCatalog | None = None,
    checks: CheckCosts | None = None,
) -> list[SimilarResult | None]:
    """One result per key, in key order; None for a session this account does not have.
    `catalog` and `checks` are the process's (a fresh one each when not given)."""
    started = time.perf_counter()
    batch = plan(account_id, keys, datetime.now(UTC))
    await look_up(conn, batch, tuning, catalog or ModelCatalog(), checks or CheckCosts())
    rank(batch)
    results = await assemble(conn, batch, tuning, started)
    log.info(
        "similar_sessions",
        account_id=str(account_id),
        sessions=len(keys),
        probes=sum(len(c.probes) for c in batch.comparisons),
        hits=len(batch.looked.hits),
        paths={model: path for model, (path, _) in batch.looked.paths.items()},
        comparable_chunks={model: n for model, (_, n) in batch.looked.paths.items()},
        exact_scan_max_chunks=tuning.exact_scan_max_chunks,
        timed_out=batch.timed_out,
        unverified=len(batch.unverified),
        elapsed_ms=_elapsed_ms(started),
    )
    return results


def plan(account_id: UUID, keys: Sequence[tuple[UUID, SimilarArgs]], now: datetime) -> Batch:
    """One comparison per asked key, with its window's start."""
    comparisons = [
        Comparison(
            sql.Ask(key, session_id, _cutoff(args, now), args.statuses, args.source_types), args
        )
        for key, (session_id, args) in enumerate(keys)
    ]
    return Batch(account_id, comparisons)


async def look_up(
    conn: AsyncConnection, batch: Batch, tuning: Tuning, catalog: ModelCatalog, checks: CheckCosts
) -> None:
    """The first statement, within the comparison's time budget; the probes an approximate
    lookup answered short are asked again, once, with a wider search, and those whose lookup
    still cannot vouch for its answer are checked by an exact pass."""
    try:
        with sql.within_budget():
            await sql.ensure_configured(conn, tuning.comparison_settings)
            models = await catalog.models(conn, batch.account_id)
            batch.looked = await _first(conn, batch, models, tuning)
            if any(path == "unserved" for path, _ in batch.looked.paths.values()):
                catalog.forget(batch.account_id)  # a model appeared since it was read
                models = await catalog.models(conn, batch.account_id)
                await _again(conn, batch, models, tuning, _probes_of(batch, "unserved"))
            short = _worth_widening(batch, tuning, checks, _short_probes(batch))
            if short and tuning.ef_search_retry > tuning.ef_search:
                await sql.widen_search(conn, tuning.ef_search_retry)
                await _again(conn, batch, models, tuning, short)
                log.info("similar_sessions_widened", probes=len(short))
            doubtful = _doubtful_probes(batch, tuning)
            if doubtful:
                await _check_exactly(conn, batch, models, tuning, doubtful, checks)
    except ComparisonTimedOut:
        log.warning("similar_sessions_timed_out", budget_ms=tuning.comparison_timeout_ms)
        await _after_timeout(conn, batch)
        return
    for c in batch.found:
        c.model, c.embedded = batch.looked.models.get(c.key, (None, 0))
        c.probes = batch.looked.probes.get(c.key, [])


async def _first(
    conn: AsyncConnection,
    batch: Batch,
    models: Sequence[ModelIdentity],
    tuning: Tuning,
    retry: Sequence[tuple[int, int]] | None = None,
    exact: bool = False,
) -> sql.Looked:
    asks = [c.ask for c in batch.comparisons]
    return await sql.look_up(
        conn, batch.account_id, asks, models, tuning.limits, retry, exact=exact
    )


async def _again(
    conn: AsyncConnection,
    batch: Batch,
    models: Sequence[ModelIdentity],
    tuning: Tuning,
    pairs: list[tuple[int, int]],
) -> None:
    """Look the (key, probe) pairs up again and replace their hits, windows and paths."""
    again = await _first(conn, batch, models, tuning, pairs)
    _replace(batch.looked, pairs, again)
    batch.looked.paths.update(again.paths)


async def _check_exactly(
    conn: AsyncConnection,
    batch: Batch,
    models: Sequence[ModelIdentity],
    tuning: Tuning,
    pairs: list[tuple[int, int]],
    checks: CheckCosts,
) -> None:
    """Answer the (key, probe) pairs by exact passes over the account, within one budget
    (never more than the comparison's); past it their approximate answer stands, and their
    comparisons say so. The path reported stays the one the comparison took.

    A comparison's pairs are checked together or not at all, the comparisons with the fewest
    lookups first: on a page, one whose check the account cannot afford (a session beside a
    clump of identical chunks) leaves the others' checks alone instead of taking them past the
    budget with it. While nothing is known of what a check costs on the account, the first
    comparison is checked alone; then as many of the rest as that cost predicts to fit what
    is left, in one pass. A check predicted to reach its budget is not started."""
    waiting = sorted(  # (lookups, key, pairs) per comparison
        (_lookup_count(batch, group), key, group) for key, group in _by_comparison(pairs).items()
    )
    started = time.perf_counter()
    while waiting:
        left_ms = tuning.verify_budget_ms - int((time.perf_counter() - started) * 1000)
        if left_ms <= 0:
            break
        taken = _fitting(
            checks.per_lookup_ms(batch.account_id), [n for n, _, _ in waiting], left_ms
        )
        chosen = [pair for _, _, group in waiting[:taken] for pair in group]
        exact = await check_exactly(
            conn,
            checks,
            batch.account_id,
            sum(n for n, _, _ in waiting[:taken]),  # comparisons share no lookup
            left_ms,
            partial(_first, conn, batch, models, tuning, chosen, exact=True),
        )
        log.info("similar_sessions_verified", probes=len(chosen), exact=exact is not None)
        if exact is None:
            break
        _replace(batch.looked, chosen, exact)
        waiting = waiting[taken:]
    batch.unverified.update(key for _, key, _ in waiting)


def _by_comparison(pairs: Iterable[tuple[int, int]]) -> dict[int, list[tuple[int, int]]]:
    grouped: dict[int, list[tuple[int, int]]] = {}
    for key, probe in pairs:
        grouped.setdefault(key, []).append((key, probe))
    return grouped


def _fitting(per_lookup_ms: float | None, lookups: list[int], left_ms: int) -> int:
    """How many comparisons, of these lookup counts (fewest first), one pass checks: the
    first alone while the account's check cost is unknown, else as many as that cost
    predicts to fit `left_ms` (at least one: check_exactly then decides whether it is
    started)."""
    if per_lookup_ms is None:
        return 1
    taken, total = 1, lookups[0]
    for n in lookups[1:]:
        total += n
        if total * per_lookup_ms >= left_ms:
            break
        taken += 1
    return taken


def _replace(looked: sql.Looked, pairs: list[tuple[int, int]], again: sql.Looked) -> None:
    """The hits and windows of the (key, probe) pairs, as they were found again."""
    asked = set(pairs)
    looked.hits = [h for h in looked.hits if (h.key, h.probe) not in asked] + again.hits
    windows = {p: w for p, w in looked.windows.items() if p not in asked}
    looked.windows = windows | again.windows


def _probes_of(batch: Batch, path: str) -> list[tuple[int, int]]:
    looked = batch.looked
    return [
        (key, n)
        for key, (model, _) in looked.models.items()
        if looked.paths.get(model, ("",))[0] == path
        for n in range(len(looked.probes.get(key, [])))
    ]


def _short_probes(batch: Batch) -> list[tuple[int, int]]:
    """Approximate probes answered with fewer than the per-probe number of rows: the HNSW
    scan can end inside a tight cluster of the probe's own session."""
    found = Counter((h.key, h.probe) for h in batch.looked.hits)
    approximate = [p for path in ("index", "account_index") for p in _probes_of(batch, path)]
    return [p for p in approximate if found[p] < ranking.SIMILAR_NEIGHBOURS_PER_PROBE]


def _worth_widening(
    batch: Batch, tuning: Tuning, checks: CheckCosts, short: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The short probes a wider search may help. One whose full window went past the floor
    found every hit it could unless its scan went astray, and the exact check that follows
    settles that either way: it is widened only when the account cannot afford that check
    (sparse neighbourhoods, the usual case for lexical vectors on real sessions, then cost
    one statement less)."""
    limits = tuning.limits
    windows = batch.looked.windows
    past = {p for p in short if reached_floor(windows.get(p), limits.window, limits.floor)}
    budget_ms = tuning.verify_budget_ms
    if (
        not past
        or budget_ms <= 0
        or not checks.affordable(batch.account_id, _lookup_count(batch, past), budget_ms)
    ):
        return short
    return [p for p in short if p not in past]


def _lookup_count(batch: Batch, pairs: Iterable[tuple[int, int]]) -> int:
    """The lookups that answer these (key, probe) pairs: probes with one vector share one."""
    shared = batch.looked.shared
    return len({(key, shared.get((key, probe), probe)) for key, probe in pairs})


def _doubtful_probes(batch: Batch, tuning: Tuning) -> list[tuple[int, int]]:
    """Approximate probes whose lookup cannot vouch for its answer (its window, judged)."""
    limits = tuning.limits
    approximate = [p for path in ("index", "account_index") for p in _probes_of(batch, path)]
    windows = batch.looked.windows
    return [
        p for p in approximate if not vouches_for(windows.get(p), limits.window, limits.per_probe)
    ]


async def _after_timeout(conn: AsyncConnection, batch: Batch) -> None:
    """The aborted transaction is rolled back; which asked sessions exist is read again, so
    a missing one still answers as missing."""
    batch.timed_out = True
    await conn.rollback()
    ids = [c.ask.session_id for c in batch.comparisons]
    existing = await sessions_by_id(conn, batch.account_id, ids)
    sessions = {c.key: existing.get(c.ask.session_id) for c in batch.comparisons}
    batch.looked = sql.Looked(sessions={k: s for k, s in sessions.items() if s is not None})


def rank(batch: Batch) -> None:
    """Group each comparison's hits into its ordered neighbours and cut its page (pure)."""
    by_key = {c.key: c.hits for c in batch.comparisons}
    for row in batch.looked.hits:
        by_key[row.key].append(row)
    for c in batch.comparisons:
        neighbours = ranking.rank_neighbours(c.hits, c.args.max_matches_per_session)
        c.page, c.more = ranking.page_after(neighbours, c.args.after, c.args.limit)


async def assemble(
    conn: AsyncConnection, batch: Batch, tuning: Tuning, started: float
) -> list[SimilarResult | None]:
    """The second statement (the shown matches and probes, the neighbour sessions, and
    whether anything else was comparable for comparisons without hits), then the results."""
    ids: set[UUID] = set()
    text_ids: set[UUID] = set()
    for c in batch.found:
        for match in (m for n in c.page for m in n.matches):
            pair = (match.chunk_id, c.probes[match.probe])
            ids.update(pair)
            if c.args.include_match_text:
                text_ids.update(pair)
    lonely = [
        details.Lonely(c.key, c.ask.session_id, c.model, c.ask)
        for c in batch.found
        if c.model is not None and not c.hits and not batch.timed_out
    ]
    neighbours = [n.session_id for c in batch.found for n in c.page]
    shown = await details.show(
        conn,
        batch.account_id,
        sorted(ids),
        sorted(text_ids),
        neighbours,
        lonely,
        ranking.SIMILAR_PREVIEW_CHARS,
    )
    elapsed_ms = _elapsed_ms(started)
    results: list[SimilarResult | None] = [None] * len(batch.comparisons)
    for c in batch.found:
        c.comparable_elsewhere = c.key in shown.comparable
        results[c.key] = result_of(c, batch, tuning, shown, elapsed_ms)
    return results


def _cutoff(args: SimilarArgs, now: datetime) -> datetime | None:
    """The start of the asked window, if any."""
    return None if args.window_days is None else now - timedelta(days=args.window_days)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
