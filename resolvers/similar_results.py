"""A comparison's answer built from what its statements read: the degraded block from its
facts, the neighbours with their matches and probes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from uuid import UUID

from data.comparison_details import ChunkDetail, Shown
from resolvers import ranking
from resolvers.arguments import SimilarArgs
from resolvers.calibration import CONTRACT_CUTS, BandCuts, cut_points
from resolvers.degraded import Facts, degraded, reasons_for
from resolvers.results import MatchResult, NeighbourResult, PassageResult, SimilarResult
from resolvers.tuning import Tuning

if TYPE_CHECKING:
    from resolvers.similar import Batch, Comparison


def result_of(
    c: Comparison, batch: Batch, tuning: Tuning, shown: Shown, elapsed_ms: float
) -> SimilarResult:
    looked, setting = batch.looked, batch.looked.setting
    configured = None if setting is None else str(setting.identity)
    facts = Facts(
        has_vectors=bool(looked.embedded.get(c.key)),
        pending=looked.pending.get(c.key, 0),
        account_enabled=setting is not None and setting.enabled,
        deployment_enabled=tuning.embeddings_enabled,
        model=c.model,
        configured=configured,
        window_applied=c.args.window_days is not None,
        filter_applied=c.args.filtered,
        sampled=c.embedded > len(c.probes),
        found_hits=bool(c.hits),
        comparable_elsewhere=c.comparable_elsewhere,
        timed_out=batch.timed_out,
        unverified=c.key in batch.unverified,
    )
    path, cuts = batch.path(c.model), bands_of(c.model)
    return SimilarResult(
        runtime_session_id=c.ask.session_id,
        model_identity=c.model,
        embedded_chunks=c.embedded,
        probe_chunks=len(c.probes),
        pending_chunks=facts.pending,
        args=c.args,
        degraded=degraded(
            c.model is not None and not batch.timed_out, reasons_for(facts), c.args.window_days
        ),
        elapsed_ms=elapsed_ms,
        results=tuple(neighbour_of(n, shown, c.args, c.probes, cuts) for n in c.page),
        next_after=c.page[-1].sort_key if c.more and c.page else None,
        lookup_path=None if path is None else path.value,
        bands=cuts,
    )


def bands_of(model: str | None) -> BandCuts:
    """The cut points the bands of a comparison in this model use."""
    return CONTRACT_CUTS if model is None else cut_points(model)


def neighbour_of(
    n: ranking.Neighbour,
    shown: Shown,
    args: SimilarArgs,
    probes: Sequence[UUID] | None,
    cuts: BandCuts,
) -> NeighbourResult:
    """A ranked neighbour with its shown matches, each with the probe that found it (none
    for a search text), banded by the model's cut points."""
    matches = []
    for match in n.matches:
        chunk = shown.chunks[match.chunk_id]
        probe = None if probes is None else shown.chunks[probes[match.probe]]
        matches.append(
            MatchResult(
                chunk,
                _text(chunk, args),
                match.similarity,
                ranking.band(match.similarity, cuts),
                None if probe is None else PassageResult(probe, _text(probe, args)),
            )
        )
    return NeighbourResult(
        shown.sessions[n.session_id],
        n.score,
        n.similarity,
        ranking.band(n.similarity, cuts),
        n.matched_chunk_count,
        tuple(matches),
    )


def _text(chunk: ChunkDetail, args: SimilarArgs) -> str | None:
    """A passage's preview when texts were asked and it is still clear."""
    return chunk.text if args.include_match_text and chunk.redaction_state == "clear" else None
