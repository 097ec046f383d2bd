"""One answer model for both edges: every field a GraphQL type declares for the API is a
field or a property of the result it is read from, so the REST routes (which read the result
by those names) and GraphQL answer the same fields."""

from __future__ import annotations

import dataclasses

import pytest

from data.comparison_details import ChunkDetail
from data.sessions import SessionRow
from resolvers.comparison.legs import LegAnswer
from resolvers.comparison.results import (
    LookupResult,
    MatchResult,
    NeighbourResult,
    SearchResult,
    SimilarResult,
)
from resolvers.comparison.timeline import BucketCount
from resolvers.failure_results import (
    FailureGroupResult,
    FailureMemberResult,
    FailureModesResult,
    MemberPageResult,
)
from resolvers.rules.calibration import BandCuts
from resolvers.rules.degraded import Degraded as DegradedResult
from schema.failure_modes import FailureGroup, FailureMember, FailureMemberPage, FailureModes
from schema.mapping import declared
from schema.search import SearchNeighbour, SessionSearch
from schema.sessions import Neighbour, RuntimeSession, SimilarSessions
from schema.similar import (
    BandCutPoints,
    Degraded,
    Lookup,
    Match,
    Probe,
    SearchLeg,
    SearchMatch,
    TimelineCount,
)
from similar_sessions.answers import GRAPHQL_ONLY

READ_FROM = [
    (SimilarSessions, SimilarResult),
    (SessionSearch, SearchResult),
    (Neighbour, NeighbourResult),
    (SearchNeighbour, NeighbourResult),
    (Match, MatchResult),
    (SearchMatch, MatchResult),
    (Probe, ChunkDetail),
    (Lookup, LookupResult),
    (Degraded, DegradedResult),
    (BandCutPoints, BandCuts),
    (SearchLeg, LegAnswer),
    (FailureModes, FailureModesResult),
    (FailureGroup, FailureGroupResult),
    (FailureMemberPage, MemberPageResult),
    (FailureMember, FailureMemberResult),
    (TimelineCount, BucketCount),
    (RuntimeSession, SessionRow),
]


def held(result: type) -> set[str]:
    """The names a result class answers: its fields (a dataclass's or a NamedTuple's) and
    its properties."""
    names = set(getattr(result, "_fields", ()))
    if dataclasses.is_dataclass(result):
        names |= {f.name for f in dataclasses.fields(result)}
    return names | {n for n in dir(result) if isinstance(getattr(result, n, None), property)}


@pytest.mark.parametrize(("shape", "result"), READ_FROM, ids=lambda t: t.__name__)
def test_every_declared_field_is_held_by_its_result(shape: type, result: type) -> None:
    missing = {n for n, _ in declared(shape)} - GRAPHQL_ONLY - held(result)
    assert not missing, f"{shape.__name__} declares what {result.__name__} lacks: {missing}"


def test_a_private_field_is_not_declared_for_the_api() -> None:
    assert "args" not in {n for n, _ in declared(SimilarSessions)}
    assert "found" not in {n for n, _ in declared(FailureGroup)}


def test_the_nested_types_are_found_through_lists_and_optionals() -> None:
    fields = dict(declared(SimilarSessions))
    assert fields["results"] is Neighbour and fields["lookup"] is Lookup
    assert fields["model_identity"] is None
    assert dict(declared(FailureGroup))["seen_before"] is RuntimeSession
