"""The comparison of a batch of sessions of one account, in phases: plan, choose paths, look
up, rank, assemble. A fixed number of statements whatever the batch size, with all probe
lookups in one of them."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from uuid import UUID

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from data import similarity as sql
from data.accounts import EmbeddingSetting
from data.errors import ComparisonTimedOut
from data.model_identity import ModelIdentity
from data.sessions import SessionRow, sessions_by_id
from resolvers import ranking
from resolvers.arguments import SimilarArgs
from resolvers.degraded import Facts, degraded, reasons_for
from resolvers.lookup_path import LookupPath, choose_path
from resolvers.results import MatchResult, NeighbourResult, PassageResult, SimilarResult
from resolvers.tuning import Tuning

log = structlog.get_logger(__name__)


@dataclass
class Comparison:
    """One asked session while its batch is worked through."""

    key: int  # its position in the batch
    session_id: UUID
    args: SimilarArgs
    cutoff: datetime | None
    inventory: sql.Inventory = field(default_factory=sql.Inventory)
    identity: ModelIdentity | None = None  # the comparison model
    embedded: int = 0
    probes: tuple[UUID, ...] = ()
    hits: list[ranking.Hit] = field(default_factory=list)
    page: list[ranking.Neighbour] = field(default_factory=list)
    more: bool = False
    comparable_elsewhere: bool = False


@dataclass
class Batch:
    """The comparisons of one account asked together, and what they share."""

    account_id: UUID
    asked: int
    setting: EmbeddingSetting | None
    comparisons: list[Comparison]
    paths: dict[ModelIdentity, LookupPath] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    timed_out: bool = False

    @property
    def configured(self) -> str | None:
        return None if self.setting is None else str(self.setting.identity)


async def compare_sessions(
    conn: AsyncConnection,
    account_id: UUID,
    keys: Sequence[tuple[UUID, SimilarArgs]],
    tuning: Tuning,
) -> list[SimilarResult | None]:
    """One result per key, in key order; None for a session this account does not have."""
    started = time.perf_counter()
    batch = await plan(conn, account_id, keys, tuning)
    await choose_paths(conn, batch, tuning)
    specs = probe_specs(batch)
    hits, batch.timed_out = await lookup_hits(conn, account_id, specs, batch.paths, tuning)
    rank(batch, hits)
    results = await assemble(conn, batch, tuning, started)
    log.info(
        "similar_sessions",
        account_id=str(account_id),
        sessions=len(keys),
        probes=len(specs),
        hits=len(hits),
        paths={str(k): v.value for k, v in batch.paths.items()},
        comparable_chunks=batch.sizes,
        exact_scan_max_chunks=tuning.exact_scan_max_chunks,
        timed_out=batch.timed_out,
        elapsed_ms=_elapsed_ms(started),
    )
    return results


async def plan(
    conn: AsyncConnection,
    account_id: UUID,
    keys: Sequence[tuple[UUID, SimilarArgs]],
    tuning: Tuning,
) -> Batch:
    """Read the asked sessions, the setting and the inventories; pick each comparison's
    model and probes."""
    now = datetime.now(UTC)
    await sql.configure_comparison(
        conn, timeout_ms=tuning.comparison_timeout_ms, ef_search=tuning.ef_search
    )
    sessions, setting = await sql.sessions_and_setting(conn, account_id, [sid for sid, _ in keys])
    comparisons = [
        Comparison(
            i,
            sid,
            args,
            None if args.window_days is None else now - timedelta(days=args.window_days),
        )
        for i, (sid, args) in enumerate(keys)
        if sid in sessions
    ]
    summaries_only = setting is not None and setting.scope == "summaries_only"
    inventory = await sql.inventories(
        conn, account_id, [c.session_id for c in comparisons], summaries_only
    )
    batch = Batch(account_id, len(keys), setting, comparisons)
    for c in comparisons:
        c.inventory = inventory[c.session_id]
        counts = {m: len(chunks) for m, chunks in c.inventory.embedded.items()}
        model = ranking.comparison_model(batch.configured, counts)
        if model is not None:
            chunks = c.inventory.embedded[model]
            c.identity, c.embedded = ModelIdentity.parse(model), len(chunks)
            c.probes = tuple(chunks[p] for p in ranking.probe_positions(len(chunks)))
    return batch


async def choose_paths(conn: AsyncConnection, batch: Batch, tuning: Tuning) -> None:
    """The lookup path of every model the batch compares in, from the account's size."""
    identities = {c.identity for c in batch.comparisons if c.identity is not None}
    for identity in sorted(identities, key=str):
        own_index, count = await sql.lookup_facts(
            conn, batch.account_id, identity, tuning.exact_scan_max_chunks
        )
        batch.paths[identity] = choose_path(own_index, count, tuning.exact_scan_max_chunks)
        batch.sizes[str(identity)] = count


def probe_specs(batch: Batch) -> list[sql.ProbeSpec]:
    return [
        sql.ProbeSpec(c.key, n, chunk_id, c.session_id, c.identity, c.cutoff)
        for c in batch.comparisons
        if c.identity is not None
        for n, chunk_id in enumerate(c.probes)
    ]


async def lookup_hits(
    conn: AsyncConnection,
    account_id: UUID,
    specs: list[sql.ProbeSpec],
    paths: dict[ModelIdentity, LookupPath],
    tuning: Tuning,
) -> tuple[list[sql.HitRow], bool]:
    """The probe lookups, within the comparison's time budget; (no hits, True) when it ran out.

    Every probe goes to the database in one statement. An approximate lookup can come back
    short when the probe sits in a tight cluster of its own session's chunks (the HNSW scan
    ends inside it): only those probes are asked again, once, with a wider search."""
    if not specs:
        return [], False
    per_probe = ranking.SIMILAR_NEIGHBOURS_PER_PROBE
    scans = {identity: path.scan(identity) for identity, path in paths.items()}

    async def nearest(probes: list[sql.ProbeSpec]) -> list[sql.HitRow]:
        return await sql.nearest_chunks(
            conn,
            account_id,
            probes,
            scans,
            per_probe=per_probe,
            floor=ranking.MIN_SIMILAR_SIMILARITY,
            overfetch=tuning.overfetch,
        )

    try:
        with sql.within_budget():
            hits = await nearest(specs)
            found = Counter((h.key, h.probe) for h in hits)
            short = [
                s
                for s in specs
                if paths[s.identity].approximate and found[s.key, s.probe] < per_probe
            ]
            if short and tuning.ef_search_retry > tuning.ef_search:
                await sql.widen_search(conn, tuning.ef_search_retry)
                again = {(s.key, s.probe) for s in short}
                hits = [h for h in hits if (h.key, h.probe) not in again] + await nearest(short)
                log.info(
                    "similar_sessions_widened", probes=len(short), ef_search=tuning.ef_search_retry
                )
        return hits, False
    except ComparisonTimedOut:
        # The transaction is aborted: the comparison issues no statement after this one.
        log.warning("similar_sessions_timed_out", budget_ms=tuning.comparison_timeout_ms)
        return [], True


def rank(batch: Batch, hits: Sequence[sql.HitRow]) -> None:
    """Group each comparison's hits into its ordered neighbours and cut its page (pure)."""
    by_key = {c.key: c for c in batch.comparisons}
    for row in hits:
        by_key[row.key].hits.append(
            ranking.Hit(row.probe, row.chunk_id, row.session_id, row.similarity)
        )
    for c in batch.comparisons:
        neighbours = ranking.rank_neighbours(c.hits, c.args.max_matches_per_session)
        c.page, c.more = ranking.page_after(neighbours, c.args.after, c.args.limit)


async def assemble(
    conn: AsyncConnection, batch: Batch, tuning: Tuning, started: float
) -> list[SimilarResult | None]:
    """Read what the answers show (matches, neighbour sessions, whether anything else was
    comparable) and build one result per asked key."""
    lonely = [
        (c.key, c.session_id, c.identity, c.cutoff)
        for c in batch.comparisons
        if c.identity is not None and not c.hits and not batch.timed_out
    ]
    comparable = await sql.comparable_elsewhere(conn, batch.account_id, lonely)
    details = await _details(conn, batch)
    neighbour_ids = [n.session_id for c in batch.comparisons for n in c.page]
    sessions = await sessions_by_id(conn, batch.account_id, neighbour_ids)
    elapsed_ms = _elapsed_ms(started)
    results: list[SimilarResult | None] = [None] * batch.asked
    for c in batch.comparisons:
        c.comparable_elsewhere = c.key in comparable
        results[c.key] = _result(c, batch, tuning, details, sessions, elapsed_ms)
    return results


async def _details(conn: AsyncConnection, batch: Batch) -> dict[UUID, sql.ChunkDetail]:
    """Details of every shown match and its probe, in one statement; content only for the
    comparisons that want their texts."""
    ids: set[UUID] = set()
    text_ids: set[UUID] = set()
    for c in batch.comparisons:
        for neighbour in c.page:
            for match in neighbour.matches:
                pair = (match.chunk_id, c.probes[match.probe])
                ids.update(pair)
                if c.args.include_match_text:
                    text_ids.update(pair)
    return await sql.chunk_details(
        conn, batch.account_id, sorted(ids), sorted(text_ids), ranking.SIMILAR_PREVIEW_CHARS
    )


def _result(
    c: Comparison,
    batch: Batch,
    tuning: Tuning,
    details: dict[UUID, sql.ChunkDetail],
    sessions: dict[UUID, SessionRow],
    elapsed_ms: float,
) -> SimilarResult:
    facts = Facts(
        has_vectors=bool(c.inventory.embedded),
        pending=c.inventory.pending,
        account_enabled=batch.setting is not None and batch.setting.enabled,
        deployment_enabled=tuning.embeddings_enabled,
        model=None if c.identity is None else str(c.identity),
        configured=batch.configured,
        window_applied=c.args.window_days is not None,
        sampled=c.embedded > len(c.probes),
        found_hits=bool(c.hits),
        comparable_elsewhere=c.comparable_elsewhere,
        timed_out=batch.timed_out,
    )
    return SimilarResult(
        runtime_session_id=c.session_id,
        model_identity=facts.model,
        embedded_chunks=c.embedded,
        probe_chunks=len(c.probes),
        pending_chunks=c.inventory.pending,
        args=c.args,
        degraded=degraded(
            c.identity is not None and not batch.timed_out, reasons_for(facts), c.args.window_days
        ),
        elapsed_ms=elapsed_ms,
        results=tuple(_neighbour(n, c, details, sessions) for n in c.page),
        next_after=c.page[-1].sort_key if c.more and c.page else None,
        lookup_path=None if c.identity is None else batch.paths[c.identity].value,
    )


def _neighbour(
    n: ranking.Neighbour,
    c: Comparison,
    details: dict[UUID, sql.ChunkDetail],
    sessions: dict[UUID, SessionRow],
) -> NeighbourResult:
    matches = []
    for match in n.matches:
        chunk, probe = details[match.chunk_id], details[c.probes[match.probe]]
        matches.append(
            MatchResult(
                chunk,
                _text(chunk, c.args),
                match.similarity,
                ranking.band(match.similarity),
                PassageResult(probe, _text(probe, c.args)),
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


def _text(chunk: sql.ChunkDetail, args: SimilarArgs) -> str | None:
    """A passage's preview when texts were asked and it is still clear."""
    return chunk.text if args.include_match_text and chunk.redaction_state == "clear" else None


def _cutoff(args: SimilarArgs, now: datetime) -> datetime | None:
    """The start of the asked window, if any."""
    return None if args.window_days is None else now - timedelta(days=args.window_days)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
