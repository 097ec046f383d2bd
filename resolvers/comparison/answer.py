"""The comparison's answers: the second statement (what the pages show, and whether anything
else was comparable for comparisons without a hit), then one result per comparison, its
degraded block decided from its facts and its neighbours banded by its model's cut points."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncConnection

from data import comparison_details as details
from data.comparison import THREADED_AFTER
from data.comparison_details import ChunkDetail, PageDetails
from resolvers.arguments import SimilarArgs
from resolvers.comparison.results import (
    MatchResult,
    NeighbourResult,
    PassageResult,
    SimilarResult,
)
from resolvers.comparison.state import Batch, Comparison
from resolvers.rules import ranking
from resolvers.rules.calibration import CONTRACT_CUTS, BandCuts, ProbeKind, calibration, cut_points
from resolvers.rules.degraded import Facts, degraded, reasons_for
from resolvers.tuning import Tuning
from values import credentials

# Large batches (data.comparison.THREADED_AFTER) are assembled in a worker thread, this many
# comparisons at a time: each step is short, and frees what it made before the next, so
# neither it nor its garbage holds the interpreter (and the event loop) for long.
SLICE = 25

T = TypeVar("T")
R = TypeVar("R")


async def in_slices(each: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """`each` of every item, SLICE items to a step of a worker thread, in order."""

    def step(part: Sequence[T]) -> list[R]:
        return [each(x) for x in part]

    out: list[R] = []
    for start in range(0, len(items), SLICE):
        out += await asyncio.to_thread(step, items[start : start + SLICE])
    return out


async def assemble(
    conn: AsyncConnection, batch: Batch, tuning: Tuning, started: float
) -> list[SimilarResult | None]:
    """The second statement, then the results, in the batch's order (None for a session the
    account does not have)."""
    ids: set[UUID] = set()
    text_ids: set[UUID] = set()
    for c in batch.found:
        for match in (m for n in (*c.page, *c.nearest) for m in n.matches):
            pair = (match.chunk_id, c.probes[match.probe].chunk_id)
            ids.update(pair)
            if c.args.include_match_text:
                text_ids.update(pair)
    lonely = [c for c in batch.found if c.model is not None and not c.has_hits]
    shown = await details.show(
        conn,
        batch.account_id,
        sorted(ids),
        sorted(text_ids),
        [n.session_id for c in batch.found for n in (*c.page, *c.nearest)],
        [details.Hitless(c.ask, c.model) for c in lonely if c.model is not None],
        ranking.SIMILAR_PREVIEW_CHARS,
        credentials.shown,
    )
    comparable = {c.ask.key for c, ok in zip(lonely, shown.comparable, strict=True) if ok}
    took = elapsed_ms(started)

    def result(c: Comparison) -> SimilarResult | None:
        if c.found is None:
            return None
        return result_of(c, batch, tuning, shown, took, c.ask.key in comparable)

    # A batch of hundreds (the failure modes' pass) takes a few hundred milliseconds of
    # Python: in steps of a worker thread, the event loop serves other requests meanwhile.
    if len(batch.comparisons) <= THREADED_AFTER:
        return [result(c) for c in batch.comparisons]
    return await in_slices(result, batch.comparisons)


def result_of(
    c: Comparison,
    batch: Batch,
    tuning: Tuning,
    shown: PageDetails,
    took_ms: float,
    comparable_elsewhere: bool,
) -> SimilarResult:
    assert c.found is not None, "only a found comparison has a result"
    setting = batch.setting
    facts = Facts(
        has_vectors=bool(c.found.embedded),
        pending=c.found.pending,
        account_enabled=setting is not None and setting.enabled,
        deployment_enabled=tuning.embeddings_enabled,
        model=c.model,
        configured=None if setting is None else str(setting.identity),
        window_applied=c.args.window_days is not None,
        filter_applied=c.ask.filtered,
        sampled=c.found.model_chunks > len(c.probes),
        found_hits=c.has_hits,
        comparable_elsewhere=comparable_elsewhere,
        timed_out=batch.timed_out,
        unverified=c.unverified,
    )
    calibrated = calibration(c.model, ProbeKind.PASSAGE)
    cuts, probes = calibrated.bands, [p.chunk_id for p in c.probes]
    return SimilarResult(
        runtime_session_id=c.ask.session_id,
        model_identity=c.model,
        embedded_chunks=c.found.model_chunks,
        probe_chunks=len(c.probes),
        pending_chunks=facts.pending,
        args=c.args,
        degraded=degraded(
            c.model is not None and not batch.timed_out, reasons_for(facts), c.args.window_days
        ),
        elapsed_ms=took_ms,
        results=tuple(neighbour_of(n, shown, c.args, probes, cuts) for n in c.page),
        next_after=c.page[-1].sort_key if c.more and c.page else None,
        lookup_path=batch.path(c.model),
        widened_probes=c.widened,
        checked_probes=c.checked,
        bands=cuts,
        ranked=c.ranked,
        probes=tuple(probes),
        floor=calibrated.floor,
        nearest=tuple(neighbour_of(n, shown, c.args, probes, cuts) for n in c.nearest),
    )


def bands_of(model: str | None) -> BandCuts:
    """The cut points the bands of a comparison in this model use."""
    return CONTRACT_CUTS if model is None else cut_points(model)


def neighbour_of(
    n: ranking.Neighbour,
    shown: PageDetails,
    args: SimilarArgs,
    probes: Sequence[UUID] | None,
    cuts: BandCuts,
) -> NeighbourResult:
    """A ranked neighbour with its shown matches, each with the probe that found it (none
    for a search text), banded by the model's cut points."""
    matches = []
    for match in n.matches:
        chunk = _passage(shown.chunks[match.chunk_id], args)
        probe = None if probes is None else _passage(shown.chunks[probes[match.probe]], args)
        band = ranking.band(match.similarity, cuts)
        matches.append(MatchResult.of(chunk, match.similarity, band, probe))
    return NeighbourResult(
        shown.sessions[n.session_id],
        n.score,
        n.similarity,
        ranking.band(n.similarity, cuts),
        n.matched_chunk_count,
        tuple(matches),
    )


def _passage(chunk: ChunkDetail, args: SimilarArgs) -> PassageResult:
    """A passage with its preview only when texts were asked and it is still clear."""
    shown = args.include_match_text and chunk.redaction_state == "clear"
    return chunk if shown or chunk.text is None else replace(chunk, text=None)


def elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
