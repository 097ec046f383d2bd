"""The similarSessions types: SimilarSessions, Neighbour, Match, Probe and Degraded."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated
from uuid import UUID

import strawberry

from resolvers import ranking
from resolvers.similar import MatchResult, NeighbourResult, SimilarResult

if TYPE_CHECKING:
    from schema.sessions import RuntimeSession

SimilarityBand = strawberry.enum(ranking.Band, description="A similarity as a word.")
CONSOLE_PATH = "/console/runtime-sessions?sessionId="


@strawberry.type(description="Every way the comparison came up short, named.")
class Degraded:
    semantic: bool = strawberry.field(description="True when a vector comparison ran.")
    reasons: list[str] = strawberry.field(description="Reason codes, in the contract's order.")
    detail: str | None = strawberry.field(description="One sentence per reason, in order.")


@strawberry.type(description="A passage of the viewed session that found a match.")
class Probe:
    document_id: UUID
    source_kind: str
    source_id: UUID | None
    chunk_index: int
    occurred_at: datetime
    role: str | None


@strawberry.type(description="A passage of the other session, and the probe that found it.")
class Match:
    document_id: UUID
    source_kind: str
    source_id: UUID | None
    chunk_index: int
    occurred_at: datetime
    role: str | None
    similarity: float
    band: SimilarityBand  # type: ignore[valid-type]
    redaction_state: str
    text: str | None = strawberry.field(
        description="Up to 280 characters; null when includeMatchText is false or withheld."
    )
    probe: Probe

    @classmethod
    def of(cls, m: MatchResult) -> Match:
        c, p = m.chunk, m.probe
        return cls(
            document_id=c.id,
            source_kind=c.source_kind,
            source_id=c.source_id,
            chunk_index=c.chunk_index,
            occurred_at=c.occurred_at,
            role=c.role,
            similarity=m.similarity,
            band=m.band,
            redaction_state=c.redaction_state,
            text=m.text,
            probe=Probe(
                document_id=p.id,
                source_kind=p.source_kind,
                source_id=p.source_id,
                chunk_index=p.chunk_index,
                occurred_at=p.occurred_at,
                role=p.role,
            ),
        )


@strawberry.type(description="Another session of the account that went the same way.")
class Neighbour:
    runtime_session_id: UUID
    session_source_type: str
    session_source_id: str
    session_reference: str
    title: str
    started_at: datetime
    last_activity_at: datetime
    session: Annotated[RuntimeSession, strawberry.lazy("schema.sessions")]
    score: float
    similarity: float
    band: SimilarityBand  # type: ignore[valid-type]
    matched_chunk_count: int
    matches: list[Match]
    console_link: str

    @classmethod
    def of(cls, n: NeighbourResult) -> Neighbour:
        from schema.sessions import RuntimeSession

        s = n.session
        return cls(
            runtime_session_id=s.id,
            session_source_type=s.source_type,
            session_source_id=s.source_id,
            session_reference=s.reference,
            title=s.title,
            started_at=s.started_at,
            last_activity_at=s.last_activity_at,
            session=RuntimeSession.of(s),
            score=n.score,
            similarity=n.similarity,
            band=n.band,
            matched_chunk_count=n.matched_chunk_count,
            matches=[Match.of(m) for m in n.matches],
            console_link=CONSOLE_PATH + str(s.id),
        )


@strawberry.type(description="The sessions most similar to one session, best first.")
class SimilarSessions:
    runtime_session_id: UUID
    model_identity: str | None
    embedded_chunks: int
    probe_chunks: int
    pending_chunks: int
    window_days: int | None
    limit: int
    max_matches_per_session: int
    degraded: Degraded
    elapsed_ms: float
    results: list[Neighbour]
    end_cursor: str | None
    has_next_page: bool

    @classmethod
    def of(cls, r: SimilarResult) -> SimilarSessions:
        return cls(
            runtime_session_id=r.runtime_session_id,
            model_identity=r.model_identity,
            embedded_chunks=r.embedded_chunks,
            probe_chunks=r.probe_chunks,
            pending_chunks=r.pending_chunks,
            window_days=r.args.window_days,
            limit=r.args.limit,
            max_matches_per_session=r.args.max_matches_per_session,
            degraded=Degraded(
                semantic=r.degraded.semantic,
                reasons=list(r.degraded.reasons),
                detail=r.degraded.detail,
            ),
            elapsed_ms=r.elapsed_ms,
            results=[Neighbour.of(n) for n in r.results],
            end_cursor=r.next_cursor,
            has_next_page=r.next_cursor is not None,
        )
