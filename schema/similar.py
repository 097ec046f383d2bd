"""The parts of a ranked answer: the degraded block, the lookup, the bands, the passages and
matches, the timeline and the search's legs (the answers themselves, which rank sessions, are
schema/sessions.py's SimilarSessions and schema/search.py's SessionSearch).

Each type is filled from the resolver's result object by its own field names
(`from_result`), so a field is declared once, here; the REST routes serialise the same result
objects by these declarations (similar_sessions/rest.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

import strawberry

from resolvers.comparison.legs import Leg, LegAnswer
from resolvers.comparison.results import (
    LookupResult,
    MatchResult,
    NeighbourResult,
    PassageResult,
)
from resolvers.comparison.results import RankedAnswer as RankedAnswerResult
from resolvers.comparison.timeline import TimelineBucket, TimelineResult
from resolvers.rules import degraded as resolved
from resolvers.rules import ranking
from schema.mapping import from_result
from schema.reasons import DegradedReason
from values.lookups import LookupPath

SimilarityBand = strawberry.enum(ranking.Band, description="A similarity as a word.")
TERMS_MODEL = (
    "The account's fitted lexical model the matches' sharedTerms were chosen with; null when "
    "the account has no fit (every sharedTerms is then empty), or when no sharedTerms was "
    "asked for or shown."
)


@strawberry.type(description="Every way the comparison came up short, named.")
class Degraded:
    semantic: bool = strawberry.field(description="True when a vector comparison ran.")
    reasons: list[DegradedReason] = strawberry.field(  # type: ignore[valid-type]
        description="Reason codes, in the contract's order."
    )
    detail: str | None = strawberry.field(description="One sentence per reason, in order.")

    @classmethod
    def of(cls, d: resolved.Degraded) -> Degraded:
        return from_result(cls, d, reasons=list(d.reasons))


strawberry.enum(
    LookupPath,
    description="How an answer's nearest passages were found: EXACT one pass over the "
    "account's passages; ACCOUNT_INDEX the account's own HNSW index; INDEX the model's HNSW "
    "index shared by all accounts; UNSERVED a model that appeared while the comparison ran.",
)


@strawberry.type(
    description="How the comparison's lookups ran: the path, and the probes looked up again "
    "because the index's first answer would not do. An exact check is what makes a slow "
    "answer slow on a large account: it is named here."
)
class Lookup:
    path: LookupPath | None = strawberry.field(
        description="The path the comparison model's lookups took; null when nothing was compared."
    )
    widened_probes: int = strawberry.field(
        description="Probes whose approximate lookup found fewer passages than it keeps, "
        "asked again at SIMILAR_SESSIONS_HNSW_EF_SEARCH_RETRY."
    )
    checked_probes: int = strawberry.field(
        description="Probes whose approximate lookup the index could not vouch for, answered "
        "by an exact pass over the account's passages (within "
        "SIMILAR_SESSIONS_VERIFY_TIMEOUT_MS; past it, none are, and the answer says "
        "similar_approximate_unverified)."
    )

    @classmethod
    def of(cls, r: LookupResult) -> Lookup:
        return from_result(cls, r)


@strawberry.type(
    description="The cut points of the bands: close at or above `close`, related at or above "
    "`related`, else loose; calibrated per model family (docs/calibration.md), the contract's "
    "0.70 / 0.50 for a model without a calibration."
)
class BandCutPoints:
    close: float
    related: float


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


@strawberry.interface(description="A passage of another session that matched.")
class RankedPassage(Passage):
    similarity: float
    band: SimilarityBand  # type: ignore[valid-type]
    redaction_state: str
    text: str | None = strawberry.field(
        description="Up to 280 characters; null when includeMatchText is false or withheld."
    )
    shared_terms: list[str] | None = strawberry.field(
        default=None,
        description="The terms that carry most of the two passages' similarity under the "
        "account's fitted lexical model, however the pair was found, heaviest first (at most "
        "5); empty when they share none, or when the account has no fit (`sharedTermsModel` "
        "is then null); null when includeMatchText is false or a passage is withheld.",
    )


@strawberry.type(description="A passage of the other session, and the probe that found it.")
class Match(RankedPassage):
    probe: Probe

    @classmethod
    def of(cls, m: MatchResult) -> Match:
        assert m.probe is not None, "a comparison's match has its probe"
        return from_result(cls, m, probe=Probe.of(m.probe))


@strawberry.type(description="A passage of another session that matched the search text.")
class SearchMatch(RankedPassage):
    matched_words: list[str] = strawberry.field(
        description="The words of `text` the search text's terms matched (stemmed as the "
        "lexical leg stems them), lowercased, each once: what a client highlights."
    )

    @classmethod
    def of(cls, m: MatchResult) -> SearchMatch:
        return from_result(cls, m)


strawberry.enum(TimelineBucket, description="The span of a timeline's bucket.")


@strawberry.type(description="Sessions that started in one bucket and matched.")
class TimelineCount:
    start: datetime = strawberry.field(description="The bucket's first instant (UTC).")
    sessions: int


@strawberry.type(
    description="How often this has happened: the account's sessions that matched at or above "
    "the related band, by when they started, over the whole history (or the window asked)."
)
class Timeline:
    bucket: TimelineBucket
    per_probe_bound: int = strawberry.field(
        description="It counted among this many nearest passages of each probe."
    )
    counted_from: float = strawberry.field(description="The similarity it counted from.")
    sessions: int = strawberry.field(description="All the sessions counted.")
    buckets: list[TimelineCount] = strawberry.field(
        description="The buckets with at least one session, oldest first."
    )
    degraded: Degraded

    @classmethod
    def of(cls, t: TimelineResult) -> Timeline:
        buckets = [from_result(TimelineCount, b) for b in t.buckets]
        return from_result(cls, t, buckets=buckets, degraded=Degraded.of(t.degraded))


strawberry.enum(Leg, name="SearchLegName", description="A search's way of finding passages.")


@strawberry.type(
    description="One leg of a search: the lexical leg ranks passages by BM25 over their "
    "words; the dense leg by cosine to the text in the dense model's space. Their session "
    "rankings are fused by reciprocal rank."
)
class SearchLeg:
    leg: Leg
    model: str | None = strawberry.field(description="The dense leg's model; null for lexical.")
    ran: bool = strawberry.field(description="False when it could not run (see `reasons`).")
    floor: float | None = strawberry.field(description="The dense leg's floor for a text.")
    reasons: list[DegradedReason] = strawberry.field(  # type: ignore[valid-type]
        description="Why it did not run, when it did not."
    )
    elapsed_ms: float = strawberry.field(
        description="How long the leg took, in milliseconds: its lookup, and for the dense "
        "leg the text's embedding by its model before it (or the attempt, when it failed)."
    )

    @classmethod
    def of(cls, leg: LegAnswer) -> SearchLeg:
        return from_result(cls, leg, reasons=list(leg.reasons))


@strawberry.interface(
    description="What every ranked answer says: its model (whose cosine `similarity` is), "
    "what it was asked, its degraded block, its model's cut points and floor, its paging, "
    "and the lexical fit its matches' shared terms were chosen with."
)
class RankedAnswer:
    model_identity: str | None
    window_days: int | None
    limit: int
    max_matches_per_session: int
    degraded: Degraded
    bands: BandCutPoints
    floor: float = strawberry.field(
        description="The similarity a passage had to reach: the floor of the answer's model "
        "(modelIdentity) for this kind of probe. A search's lexical leg has none (BM25 finds "
        "what shares a word); its dense leg uses this one."
    )
    elapsed_ms: float
    end_cursor: str | None
    has_next_page: bool
    shared_terms_model: str | None = strawberry.field(description=TERMS_MODEL)


def answer_fields(
    r: RankedAnswerResult, ranked: Callable[[NeighbourResult], Any]
) -> dict[str, Any]:
    """The nested fields every ranked answer's type is built with."""
    return {
        "degraded": Degraded.of(r.degraded),
        "bands": from_result(BandCutPoints, r.bands),
        "results": [ranked(n) for n in r.results],
        "nearest": [ranked(n) for n in r.nearest],
    }


NEAREST = "When nothing passed the floor, the nearest sessions below it (loose); else empty."
