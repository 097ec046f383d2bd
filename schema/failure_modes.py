"""Query.failureModes: which failures of a window recur, which are new, and why they match.

Each type is filled from its result object by its own field names (`from_result`), so a field
is declared once, here; the REST route serialises the same result objects by these
declarations (similar_sessions/rest.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import strawberry

from alerts.rules import matched
from data.alerts import alerted_groups
from resolvers.context import Context
from resolvers.failure_members import members_page
from resolvers.failure_modes import failure_modes
from resolvers.failure_results import (
    FailureGroupResult,
    FailureMemberResult,
    FailureModesResult,
    MemberPageResult,
)
from resolvers.turns import TakesTurn
from schema.arguments import MEMBER_MATCH, failure_request, selects, with_failure_arguments
from schema.cost import Granted
from schema.mapping import from_result
from schema.sessions import RuntimeSession
from schema.similar import Degraded, Match, TimelineCount


@strawberry.type(description="A session of a failure group, and its closest tie in the group.")
class FailureMember:
    runtime_session_id: UUID
    title: str
    status: str
    started_at: datetime
    session: RuntimeSession
    related_in_group: int = strawberry.field(
        description="How many members of the group it is tied to (either is the other's "
        "neighbour at related or closer)."
    )
    linked_to: UUID | None = strawberry.field(
        description="The member of its closest tie; null in a group of one."
    )
    match: Match | None = strawberry.field(
        description="Its closest tie: the other member's passage, with this member's passage "
        "as `probe`, their similarity, band and shared terms; null in a group of one."
    )
    console_link: str

    @classmethod
    def of(cls, m: FailureMemberResult) -> FailureMember:
        match = None if m.match is None else Match.of(m.match)
        session = RuntimeSession.of(m.session)
        return from_result(cls, m, session=session, match=match)


@strawberry.type(description="A page of a failure group's members, newest first.")
class FailureMemberPage:
    nodes: list[FailureMember]
    end_cursor: str | None
    has_next_page: bool

    @classmethod
    def of(cls, page: MemberPageResult) -> FailureMemberPage:
        return from_result(cls, page, nodes=[FailureMember.of(m) for m in page.nodes])


@strawberry.type(
    description="Sessions of the window that went the same way: the connected components of "
    '"either is the other\'s neighbour at related or closer".'
)
class FailureGroup:
    size: int
    is_new: bool = strawberry.field(
        description="No member has a neighbour at related or closer, of any status, that "
        "started before the window."
    )
    since: datetime = strawberry.field(description="When its first member started.")
    first: RuntimeSession
    last: RuntimeSession
    representative: RuntimeSession = strawberry.field(
        description="The member tied to the most others in the group, ties by session id."
    )
    seen_before: RuntimeSession | None = strawberry.field(
        description="For a recurring group, the session before the window most like its "
        "representative, or (when the representative has none related) most like one of its "
        "other members; null for a new group."
    )
    daily: list[TimelineCount] = strawberry.field(
        description="Its members by the UTC day they started, oldest first (the timeline shape)."
    )
    shared_terms: list[str] | None = strawberry.field(
        description="The terms named by at least half of its 20 newest members' closest ties "
        "(at most 5); null when no text or term is asked."
    )
    found: strawberry.Private[FailureGroupResult]

    @strawberry.field(
        description="When an alert rule of the account last told this group (the group it "
        "alerted shares most of its members: docs/alerts.md); null when none has."
    )
    async def alerted_at(self, info: strawberry.Info[Context, None]) -> datetime | None:
        async with info.context.services.read() as conn:
            told = await alerted_groups(conn, self.found.account_id)
        if not told:
            return None
        members = frozenset(m.session_id for m in self.found.group.members)
        found = matched([members], [kept for kept, _ in told])
        return told[found[0]][1] if 0 in found else None

    @classmethod
    def of(cls, g: FailureGroupResult) -> FailureGroup:
        return from_result(
            cls,
            g,
            # rows the result already shows (their titles masked): read as they are
            first=from_result(RuntimeSession, g.first),
            last=from_result(RuntimeSession, g.last),
            representative=from_result(RuntimeSession, g.representative),
            seen_before=None
            if g.seen_before is None
            else from_result(RuntimeSession, g.seen_before),
            daily=[from_result(TimelineCount, b) for b in g.daily],
            shared_terms=None if g.shared_terms is None else list(g.shared_terms),
            found=g,
        )

    @strawberry.field(
        extensions=[TakesTurn()],
        description="Its members, newest first: at most `first` (1 to 100) after the member "
        "cursor `after` (BAD_USER_INPUT otherwise).",
    )
    async def members(
        self, info: strawberry.Info[Context, None], first: int = 10, after: str | None = None
    ) -> FailureMemberPage:
        terms = selects(info.selected_fields, *MEMBER_MATCH, "sharedTerms")
        page = await members_page(info.context, self.found, first, after, terms)
        return FailureMemberPage.of(page)


@strawberry.type(description="The groups of a window's sessions of some statuses, a page.")
class FailureModes:
    window_days: int
    window_start: datetime
    statuses: list[str] | None
    sessions: int = strawberry.field(description="The window's sessions of the statuses asked.")
    compared: int = strawberry.field(
        description="Those compared: the newest, at most `bound` of them."
    )
    left_out: int = strawberry.field(description="The oldest of the window, not compared.")
    compared_since: datetime | None = strawberry.field(
        description="When the oldest session compared started: every one left out started "
        "before it."
    )
    not_embedded: int = strawberry.field(
        description="Sessions compared that have no embedded passage yet: in no group."
    )
    bound: int = strawberry.field(
        description="The most sessions one request compares (SIMILAR_SESSIONS_FAILURE_MODES_"
        "SESSIONS)."
    )
    group_count: int
    degraded: Degraded
    elapsed_ms: float
    groups: list[FailureGroup]
    end_cursor: str | None
    has_next_page: bool
    shared_terms_model: str | None = strawberry.field(
        description="The account's fitted lexical model the shared terms were chosen with; "
        "null when the account has no fit (every sharedTerms is then empty), or when no term "
        "was asked for or shown."
    )
    as_of: str = strawberry.field(
        description="What this answer is pinned to (the window's end and the account's data "
        "then), sealed: pass it back as `asOf` to ask another page or a group's members from "
        "the same grouping; `endCursor` carries it too."
    )

    @classmethod
    def of(cls, r: FailureModesResult) -> FailureModes:
        return from_result(
            cls,
            r,
            degraded=Degraded.of(r.degraded),
            groups=[FailureGroup.of(g) for g in r.groups],
        )


@strawberry.type
class FailureQuery:
    @strawberry.field(
        extensions=[Granted(), TakesTurn()],
        description="Which failures recur and which are new: the account's sessions of these "
        "statuses that started in the last `windowDays` days (the newest "
        "SIMILAR_SESSIONS_FAILURE_MODES_SESSIONS of them), compared with each other as "
        "similarSessions compares them and grouped by average linkage at the related cut "
        "point; new groups first, then by size. Null, with an "
        "error, when refused (BAD_USER_INPUT, or LIMIT_EXCEEDED: it takes a request's whole "
        "comparison budget).",
    )
    @with_failure_arguments
    async def failure_modes(
        self, info: strawberry.Info[Context, None], **given: Any
    ) -> FailureModes | None:
        args, terms = failure_request(info, given)
        result = await failure_modes(info.context, args, terms)
        return FailureModes.of(result)
