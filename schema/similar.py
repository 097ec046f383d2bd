"""The similarSessions types: SimilarSessions, Neighbour, Match, Probe and Degraded.

Each type is filled from the resolver's result object by its own field names
(`from_result`), so a field is declared once, here; the REST payload is derived from these
types (similar_sessions/rest.py)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated
from uuid import UUID

import strawberry

from resolvers import ranking
from resolvers.results import MatchResult, NeighbourResult, PassageResult, SimilarResult
from schema.degraded import DegradedReason, ReasonCode
from schema.mapping import from_result

if TYPE_CHECKING:
    from schema.sessions import RuntimeSession

SimilarityBand = strawberry.enum(ranking.Band, description="A similarity as a word.")


@strawberry.type(description="Every way the comparison came up short, named.")
class Degraded:
    semantic: bool = strawberry.field(description="True when a vector comparison ran.")
    reasons: list[DegradedReason] = strawberry.field(  # type: ignore[valid-type]
        description="Reason codes, in the contract's order."
    )
    detail: str | None = strawberry.field(description="One sentence per reason, in order.")


@strawberry.interface(description="One passage (chunk) of a session.")
class Passage:
    document_id: UUID
    source_kind: str
    source_id: UUID | None
    chunk_index: int
    occurred_at: datetime
    role: str | None
    replay_anchor: UUID | None = strawberry.field(
        description="The id of the replay turn the passage came from (the console's "
        "`#activity-<id>` anchor), or null when it came from no turn of the replay."
    )


@strawberry.type(description="A passage of the viewed session that found a match.")
class Probe(Passage):
    text: str | None = strawberry.field(
        description="Up to 280 characters; null when includeMatchText is false."
    )

    @classmethod
    def of(cls, p: PassageResult) -> Probe:
        return from_result(cls, p)


@strawberry.type(description="A passage of the other session, and the probe that found it.")
class Match(Passage):
    similarity: float
    band: SimilarityBand  # type: ignore[valid-type]
    redaction_state: str
    text: str | None = strawberry.field(
        description="Up to 280 characters; null when includeMatchText is false or withheld."
    )
    probe: Probe

    @classmethod
    def of(cls, m: MatchResult) -> Match:
        return from_result(cls, m, probe=Probe.of(m.probe))


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
    console_link: str = strawberry.field(
        description="The other session in the console, at the turn of its best match when "
        "that match came from a replay turn."
    )

    @classmethod
    def of(cls, n: NeighbourResult) -> Neighbour:
        from schema.sessions import RuntimeSession

        return from_result(
            cls, n, session=RuntimeSession.of(n.session), matches=[Match.of(m) for m in n.matches]
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
        return from_result(
            cls,
            r,
            degraded=from_result(
                Degraded, r.degraded, reasons=[ReasonCode(code) for code in r.degraded.reasons]
            ),
            results=[Neighbour.of(n) for n in r.results],
        )
