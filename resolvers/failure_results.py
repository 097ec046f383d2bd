"""What a failure-modes request answers: one result object per group and member, named as the
API names them, each value as the account is shown it (a title's credentials masked unless it
shows them); schema/failure_modes.py declares the fields both edges read from them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from data.sessions import SessionRow
from resolvers.arguments import FailureArgs
from resolvers.comparison.results import MatchResult, console_link, shown_session
from resolvers.comparison.timeline import BucketCount
from resolvers.rules import failure_groups as rules
from resolvers.rules.calibration import BandCuts
from resolvers.rules.degraded import Degraded
from values import credentials


@dataclass(frozen=True, slots=True)
class FailureMemberResult:
    """One member of a group: its session, how many members it is tied to, and its closest
    tie: the other member's passage (`match`), with this member's passage as its `probe`."""

    session: SessionRow
    related_in_group: int
    linked_to: UUID | None
    match: MatchResult | None

    @property
    def runtime_session_id(self) -> UUID:
        return self.session.id

    @property
    def title(self) -> str:
        return credentials.shown(self.session.title)

    @property
    def status(self) -> str:
        return self.session.status

    @property
    def started_at(self) -> datetime:
        return self.session.started_at

    @property
    def console_link(self) -> str:
        anchor = None if self.match is None or self.match.probe is None else self.match.probe
        return console_link(self.session.id, None if anchor is None else anchor.replay_anchor)


@dataclass(frozen=True, slots=True)
class MemberPageResult:
    nodes: tuple[FailureMemberResult, ...]
    end_cursor: str | None
    has_next_page: bool


@dataclass(frozen=True, slots=True)
class FailureGroupResult:
    """One group, with its members' sessions (by id), for a recurring group the earlier session
    most like the members asked (`earlier`; shown as `seen_before`), and the terms most of its
    members share. The sessions it shows (first, last, representative, seen before) are as the
    account is shown them."""

    group: rules.Group
    sessions: dict[UUID, SessionRow]
    earlier: SessionRow | None  # the earlier session most like the members asked
    shared_terms: tuple[str, ...] | None  # None: not asked for, or texts not shown
    cuts: dict[UUID, BandCuts]  # each member's comparison's cut points
    args: FailureArgs
    account_id: UUID

    @property
    def size(self) -> int:
        return self.group.size

    @property
    def is_new(self) -> bool:
        return self.group.is_new

    @property
    def since(self) -> datetime:
        return self.group.first.started_at

    @property
    def first(self) -> SessionRow:
        return shown_session(self.sessions[self.group.first.session_id])

    @property
    def last(self) -> SessionRow:
        return shown_session(self.sessions[self.group.last.session_id])

    @property
    def representative(self) -> SessionRow:
        return shown_session(self.sessions[self.group.representative])

    @property
    def seen_before(self) -> SessionRow | None:
        return None if self.earlier is None else shown_session(self.earlier)

    @property
    def daily(self) -> tuple[BucketCount, ...]:
        return tuple(BucketCount(day, n) for day, n in self.group.daily())


@dataclass(frozen=True, slots=True)
class FailureModesResult:
    """The groups of one page, and what the window held: its sessions of the asked statuses
    (`sessions`), those compared (the newest `bound`), those left out (the oldest, all of
    which started before `compared_since`) and those not yet embedded (in no group)."""

    args: FailureArgs
    window_start: datetime
    sessions: int
    compared: int
    left_out: int
    compared_since: datetime | None
    not_embedded: int
    bound: int
    group_count: int
    degraded: Degraded
    elapsed_ms: float
    groups: tuple[FailureGroupResult, ...]
    next_after: rules.GroupPosition | None
    end_cursor: str | None = None
    shared_terms_model: str | None = None  # the fit the shared terms were chosen with
    as_of: str = ""  # the question's pin, sealed: every page of it names this

    @property
    def window_days(self) -> int:
        return self.args.window_days

    @property
    def statuses(self) -> list[str] | None:
        return None if self.args.statuses is None else list(self.args.statuses)

    @property
    def has_next_page(self) -> bool:
        return self.next_after is not None
