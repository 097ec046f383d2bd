"""What a comparison answers: one result object per comparison, named as the API names it,
each value as the account is shown it (a title's credentials masked unless it shows them).
Both edges read these attributes by the names the GraphQL types declare: the types are filled
from them (schema/), and the REST routes serialise them (similar_sessions/rest.py)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from datetime import datetime
from uuid import UUID

from data.comparison_details import ChunkDetail
from data.sessions import SessionRow
from resolvers.arguments import SimilarArgs
from resolvers.comparison.legs import LegAnswer
from resolvers.cursors import Position
from resolvers.rules import ranking
from resolvers.rules.calibration import CONTRACT_CUTS, BandCuts
from resolvers.rules.degraded import Degraded
from resolvers.rules.ranking import MIN_SIMILAR_SIMILARITY
from values import credentials
from values.lookups import LookupPath

CONSOLE_PATH = "/console/runtime-sessions?sessionId="


def console_link(session_id: UUID, anchor: UUID | None = None) -> str:
    """The console page of a session, scrolled to one turn of its replay when anchored."""
    link = CONSOLE_PATH + str(session_id)
    return link if anchor is None else f"{link}#activity-{anchor}"


def shown_session(row: SessionRow) -> SessionRow:
    """A session as the account is shown it: the credentials of its title, source id and
    reference masked unless the account shows them (the request's setting, read when
    called)."""
    return replace(
        row,
        title=credentials.shown(row.title),
        source_id=credentials.shown(row.source_id),
        reference=credentials.shown(row.reference),
    )


# One passage of a session as the API shows it: its text only when asked and still clear.
PassageResult = ChunkDetail


@dataclass(frozen=True, slots=True)
class MatchResult(ChunkDetail):
    """A passage of the other session, and the probe of the viewed session that found it."""

    similarity: float
    band: ranking.Band
    probe: PassageResult | None  # None for a search text's match
    # The terms that carry most of the pair's similarity under the account's fitted lexical
    # model (resolvers/shared_terms.py); None when not asked for, or a text is not shown.
    shared_terms: tuple[str, ...] | None = None

    @classmethod
    def of(
        cls,
        passage: PassageResult,
        similarity: float,
        band: ranking.Band,
        probe: PassageResult | None,
    ) -> MatchResult:
        shown = {f.name: getattr(passage, f.name) for f in fields(ChunkDetail)}
        return cls(**shown, similarity=similarity, band=band, probe=probe)


@dataclass(frozen=True, slots=True)
class NeighbourResult:
    """A ranked neighbour: its session (the row as stored; what the API shows of it are the
    properties below, its title masked), its score and band, and its matches."""

    session: SessionRow
    score: float
    similarity: float
    band: ranking.Band
    matched_chunk_count: int
    matches: tuple[MatchResult, ...]

    @property
    def runtime_session_id(self) -> UUID:
        return self.session.id

    @property
    def session_source_type(self) -> str:
        return self.session.source_type

    @property
    def session_source_id(self) -> str:
        return credentials.shown(self.session.source_id)

    @property
    def session_reference(self) -> str:
        return credentials.shown(self.session.reference)

    @property
    def title(self) -> str:
        return credentials.shown(self.session.title)

    @property
    def session_status(self) -> str:
        return self.session.status

    @property
    def started_at(self) -> datetime:
        return self.session.started_at

    @property
    def last_activity_at(self) -> datetime:
        return self.session.last_activity_at

    @property
    def console_link(self) -> str:
        """The other session at the turn of its best match, when that has one."""
        anchor = self.matches[0].replay_anchor if self.matches else None
        return console_link(self.session.id, anchor)


class Answered:
    """What a ranked answer says of the arguments it was asked with, and of its paging."""

    __slots__ = ()
    args: SimilarArgs
    next_after: Position | None

    @property
    def window_days(self) -> int | None:
        return self.args.window_days

    @property
    def limit(self) -> int:
        return self.args.limit

    @property
    def max_matches_per_session(self) -> int:
        return self.args.max_matches_per_session

    @property
    def has_next_page(self) -> bool:
        return self.next_after is not None


@dataclass(frozen=True, slots=True)
class RankedAnswer(Answered):
    """What every ranked answer holds: its model (whose cosine `similarity` is), its
    arguments, its degraded block, its page of sessions (and the nearest below the floor
    when none passed it), its lookup path, its model's cut points and floor, and the fit its
    matches' shared terms were chosen with."""

    model_identity: str | None
    args: SimilarArgs
    degraded: Degraded
    elapsed_ms: float
    results: tuple[NeighbourResult, ...]
    next_after: Position | None  # the last shown one's position when more follow
    lookup_path: LookupPath | None
    bands: BandCuts = CONTRACT_CUTS  # the cut points its bands use (the model's)
    end_cursor: str | None = None  # next_after sealed for its list (resolvers/sessions.py)
    floor: float = MIN_SIMILAR_SIMILARITY  # the floor its lookups used (the model's)
    # The nearest sessions below the floor, offered (loose) when none passed it.
    nearest: tuple[NeighbourResult, ...] = ()
    shared_terms_model: str | None = None  # the fit the matches' terms were chosen with


@dataclass(frozen=True, slots=True)
class LookupResult:
    """How a comparison's lookups ran: the path, and the probes widened or checked."""

    path: LookupPath | None
    widened_probes: int
    checked_probes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SimilarResult(RankedAnswer):
    """A session's neighbours."""

    runtime_session_id: UUID
    embedded_chunks: int
    probe_chunks: int
    pending_chunks: int
    widened_probes: int = 0  # probes whose short lookups were asked again, wider
    checked_probes: int = 0  # probes the index could not vouch for, answered exactly
    # Every neighbour in order (`results` is a page of them), and the probes' chunk ids by
    # probe number: what the failure modes are grouped from (resolvers/failure_modes.py).
    ranked: tuple[ranking.Neighbour, ...] = ()
    probes: tuple[UUID, ...] = ()

    @property
    def lookup(self) -> LookupResult:
        return LookupResult(self.lookup_path, self.widened_probes, self.checked_probes)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResult(RankedAnswer):
    """The sessions whose passages are nearest a described text, the legs' rankings fused."""

    legs: tuple[LegAnswer, ...] = ()  # each leg, whether it ran, and why not
