"""The comparison for a batch of sessions of one account: a fixed number of statements,
whatever the batch size, with all probe lookups in one of them."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

import structlog
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from data import similarity as sql
from data.accounts import EmbeddingSetting
from data.engine import is_query_canceled
from data.identity import ModelIdentity
from data.sessions import SessionRow, sessions_by_id
from resolvers import ranking
from resolvers.arguments import SimilarArgs, encode_cursor
from resolvers.degraded import Degraded, degraded

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class MatchResult:
    chunk: sql.ChunkDetail
    similarity: float
    band: ranking.Band
    text: str | None
    probe: sql.ChunkDetail


@dataclass(frozen=True, slots=True)
class NeighbourResult:
    session: SessionRow
    score: float
    similarity: float
    band: ranking.Band
    matched_chunk_count: int
    matches: tuple[MatchResult, ...]


@dataclass(frozen=True, slots=True)
class SimilarResult:
    runtime_session_id: UUID
    model_identity: str | None
    embedded_chunks: int
    probe_chunks: int
    pending_chunks: int
    args: SimilarArgs
    degraded: Degraded
    elapsed_ms: float
    results: tuple[NeighbourResult, ...]
    next_cursor: str | None
    lookup_path: str | None


@dataclass(frozen=True, slots=True)
class Tuning:
    embeddings_enabled: bool = True
    exact_scan_max_chunks: int = 1_000
    ef_search: int = 400
    ef_search_retry: int = 1000
    overfetch: int = 100
    comparison_timeout_ms: int = 3000


@dataclass
class _Plan:
    """One comparison's state while the batch is worked through."""

    session_id: UUID
    args: SimilarArgs
    cutoff: datetime | None
    identity: ModelIdentity | None = None
    embedded: int = 0
    pending: int = 0
    probes: tuple[UUID, ...] = ()
    has_any_vectors: bool = False


async def compare_sessions(
    conn: AsyncConnection,
    account_id: UUID,
    keys: Sequence[tuple[UUID, SimilarArgs]],
    tuning: Tuning,
) -> list[SimilarResult | None]:
    """One result per key, in key order; None for a session this account does not have."""
    started = time.perf_counter()
    now = datetime.now(UTC)
    await sql.configure_comparison(
        conn, timeout_ms=tuning.comparison_timeout_ms, ef_search=tuning.ef_search
    )
    sessions, setting = await sql.sessions_and_setting(conn, account_id, [sid for sid, _ in keys])
    found = [(i, sid, args) for i, (sid, args) in enumerate(keys) if sid in sessions]
    summaries_only = setting is not None and setting.scope == "summaries_only"
    inventory = await sql.inventories(
        conn, account_id, [sid for _, sid, _ in found], summaries_only
    )
    configured = None if setting is None else str(setting.identity)

    plans: dict[int, _Plan] = {}
    for i, sid, args in found:
        inv = inventory[sid]
        cutoff = None if args.window_days is None else now - timedelta(days=args.window_days)
        plan = _Plan(sid, args, cutoff, pending=inv.pending, has_any_vectors=bool(inv.embedded))
        model = ranking.comparison_model(configured, {m: len(c) for m, c in inv.embedded.items()})
        if model is not None:
            chunks = inv.embedded[model]
            plan.identity = ModelIdentity.parse(model)
            plan.embedded = len(chunks)
            plan.probes = tuple(chunks[p] for p in ranking.probe_positions(len(chunks)))
        plans[i] = plan

    paths: dict[ModelIdentity, sql.LookupPath] = {}
    sizes: dict[str, int] = {}
    for identity in sorted({p.identity for p in plans.values() if p.identity is not None}, key=str):
        own_index, count = await sql.lookup_facts(
            conn, account_id, identity, tuning.exact_scan_max_chunks
        )
        paths[identity] = choose_path(own_index, count, tuning.exact_scan_max_chunks)
        sizes[str(identity)] = count
    specs = [
        sql.ProbeSpec(i, n, chunk_id, plan.session_id, plan.identity, plan.cutoff)
        for i, plan in plans.items()
        if plan.identity is not None
        for n, chunk_id in enumerate(plan.probes)
    ]
    hits, timed_out = await lookup_hits(conn, account_id, specs, paths, tuning)
    by_key: dict[int, list[ranking.Hit]] = {i: [] for i in plans}
    for row in hits:
        by_key[row.key].append(ranking.Hit(row.probe, row.chunk_id, row.session_id, row.similarity))

    ranked: dict[int, tuple[list[ranking.Neighbour], bool]] = {}
    for i, plan in plans.items():
        neighbours = ranking.rank_neighbours(by_key[i], plan.args.max_matches_per_session)
        ranked[i] = ranking.page_after(neighbours, plan.args.after, plan.args.limit)

    lonely = [
        (i, plan.session_id, plan.identity, plan.cutoff)
        for i, plan in plans.items()
        if plan.identity is not None and not by_key[i] and not timed_out
    ]
    comparable = await sql.comparable_elsewhere(conn, account_id, lonely)
    details = await _details(conn, account_id, plans, ranked)
    neighbour_ids = [n.session_id for page, _ in ranked.values() for n in page]
    neighbour_rows = await sessions_by_id(conn, account_id, neighbour_ids)

    elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
    results: list[SimilarResult | None] = [None] * len(keys)
    for i, plan in plans.items():
        reasons = _reasons(plan, setting, configured, tuning, timed_out, i, by_key, comparable)
        page, more = ranked[i]
        results[i] = SimilarResult(
            runtime_session_id=plan.session_id,
            model_identity=None if plan.identity is None else str(plan.identity),
            embedded_chunks=plan.embedded,
            probe_chunks=len(plan.probes),
            pending_chunks=plan.pending,
            args=plan.args,
            degraded=degraded(plan.identity is not None and not timed_out, reasons),
            elapsed_ms=elapsed_ms,
            results=tuple(_neighbour(n, plan, details, neighbour_rows) for n in page),
            next_cursor=encode_cursor(page[-1]) if more and page else None,
            lookup_path=None if plan.identity is None else paths[plan.identity].value,
        )
    log.info(
        "similar_sessions",
        account_id=str(account_id),
        sessions=len(keys),
        probes=len(specs),
        hits=len(hits),
        paths={str(k): v.value for k, v in paths.items()},
        comparable_chunks=sizes,
        exact_scan_max_chunks=tuning.exact_scan_max_chunks,
        timed_out=timed_out,
        elapsed_ms=elapsed_ms,
    )
    return results


def choose_path(own_index: bool, count: int, exact_scan_max_chunks: int) -> sql.LookupPath:
    """Exact for an account of at most exact_scan_max_chunks comparable chunks (one pass is
    then as fast as an index, and exact); else its own index, or until that is built the
    model's shared index."""
    if count <= exact_scan_max_chunks:
        return sql.LookupPath.EXACT
    if own_index:
        return sql.LookupPath.ACCOUNT_INDEX
    return sql.LookupPath.INDEX


async def lookup_hits(
    conn: AsyncConnection,
    account_id: UUID,
    specs: list[sql.ProbeSpec],
    paths: dict[ModelIdentity, sql.LookupPath],
    tuning: Tuning,
) -> tuple[list[sql.HitRow], bool]:
    """The probe lookups, within the comparison's time budget; (no hits, True) when it ran out.

    Every probe goes to the database in one statement. An approximate lookup can come back
    short when the probe sits in a tight cluster of its own session's chunks (the HNSW scan
    ends inside it): only those probes are asked again, once, with a wider search."""
    if not specs:
        return [], False
    per_probe = ranking.SIMILAR_NEIGHBOURS_PER_PROBE

    async def nearest(probes: list[sql.ProbeSpec]) -> list[sql.HitRow]:
        return await sql.nearest_chunks(
            conn,
            account_id,
            probes,
            paths,
            per_probe=per_probe,
            floor=ranking.MIN_SIMILAR_SIMILARITY,
            overfetch=tuning.overfetch,
        )

    try:
        hits = await nearest(specs)
        found = Counter((h.key, h.probe) for h in hits)
        short = [
            s
            for s in specs
            if paths[s.identity] is not sql.LookupPath.EXACT and found[s.key, s.probe] < per_probe
        ]
        if short and tuning.ef_search_retry > tuning.ef_search:
            await sql.widen_search(conn, tuning.ef_search_retry)
            retried = await nearest(short)
            again = {(s.key, s.probe) for s in short}
            hits = [h for h in hits if (h.key, h.probe) not in again] + retried
            log.info(
                "similar_sessions_widened", probes=len(short), ef_search=tuning.ef_search_retry
            )
        return hits, False
    except DBAPIError as exc:
        if not is_query_canceled(exc):
            raise
        # The transaction is aborted: the comparison issues no statement after this one.
        log.warning("similar_sessions_timed_out", budget_ms=tuning.comparison_timeout_ms)
        return [], True


async def _details(
    conn: AsyncConnection,
    account_id: UUID,
    plans: dict[int, _Plan],
    ranked: dict[int, tuple[list[ranking.Neighbour], bool]],
) -> dict[UUID, sql.ChunkDetail]:
    """Details of every shown match and its probe, in one statement; content only for the
    matches of comparisons that want their text."""
    ids: set[UUID] = set()
    text_ids: set[UUID] = set()
    for i, (page, _) in ranked.items():
        plan = plans[i]
        for neighbour in page:
            for match in neighbour.matches:
                ids.update((match.chunk_id, plan.probes[match.probe]))
                if plan.args.include_match_text:
                    text_ids.add(match.chunk_id)
    return await sql.chunk_details(
        conn, account_id, sorted(ids), sorted(text_ids), ranking.SIMILAR_PREVIEW_CHARS
    )


def _neighbour(
    n: ranking.Neighbour,
    plan: _Plan,
    details: dict[UUID, sql.ChunkDetail],
    sessions: dict[UUID, SessionRow],
) -> NeighbourResult:
    matches = []
    for match in n.matches:
        chunk = details[match.chunk_id]
        text = (
            chunk.text
            if plan.args.include_match_text and chunk.redaction_state == "clear"
            else None
        )
        matches.append(
            MatchResult(
                chunk,
                match.similarity,
                ranking.band(match.similarity),
                text,
                details[plan.probes[match.probe]],
            )
        )
    return NeighbourResult(
        sessions[n.session_id],
        n.score,
        n.similarity,
        ranking.band(n.similarity),
        n.matched_chunk_count,
        tuple(matches),
    )


def _reasons(
    plan: _Plan,
    setting: EmbeddingSetting | None,
    configured: str | None,
    tuning: Tuning,
    timed_out: bool,
    key: int,
    hits: dict[int, list[ranking.Hit]],
    comparable: set[int],
) -> set[str]:
    reasons = set()
    enabled = setting is not None and setting.enabled
    if not plan.has_any_vectors:
        reasons.add("similar_session_not_embedded")
        if not tuning.embeddings_enabled:
            reasons.add("semantic_disabled_by_deployment")
        if not enabled:
            reasons.add("semantic_not_enabled")
    if plan.pending and enabled and tuning.embeddings_enabled:
        reasons.add("semantic_backfill_incomplete")
    if plan.identity is not None and configured is not None and str(plan.identity) != configured:
        reasons.add("semantic_model_mismatch")
    if plan.args.window_days is not None:
        reasons.add("similar_window_applied")
    if plan.embedded > len(plan.probes):
        reasons.add("similar_session_sampled")
    if plan.identity is not None and not timed_out and not hits[key] and key not in comparable:
        reasons.add("similar_no_comparable_sessions")
    if timed_out:
        reasons.add("similar_comparison_timed_out")
    return reasons
