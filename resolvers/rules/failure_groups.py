"""The failure modes' pure parts: sessions tied by the group rule in, groups out.

Two sessions of the window are in one group when either is the other's neighbour at
"related" or closer (a `Link`): the groups are the connected components of those links. A
group's representative is the member tied to the most others, ties by session id; groups are
ordered new first, then by size, then by representative id; members newest first. Imports
neither SQLAlchemy nor strawberry."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

# A group's place in the order: (0 when new else 1, -size, representative id).
GroupPosition = tuple[int, int, UUID]
# A member's place in its group's order, newest first: (started_at, session id), descending.
MemberPosition = tuple[datetime, UUID]


@dataclass(frozen=True, slots=True)
class Link:
    """`a`'s passage `a_chunk` matched `b`'s passage `b_chunk` at `similarity` (at or above
    the related cut point of `a`'s model): `b` is `a`'s neighbour."""

    a: UUID
    b: UUID
    similarity: float
    a_chunk: UUID
    b_chunk: UUID

    def seen_from(self, member: UUID) -> tuple[UUID, UUID, UUID]:
        """(the other member, this member's passage, the other's passage)."""
        if member == self.a:
            return self.b, self.a_chunk, self.b_chunk
        return self.a, self.b_chunk, self.a_chunk


@dataclass(frozen=True, slots=True)
class Member:
    session_id: UUID
    started_at: datetime
    ties: int  # the other members it is linked to
    best: Link | None  # its closest link inside the group (None: a group of one)

    @property
    def position(self) -> MemberPosition:
        return (self.started_at, self.session_id)


@dataclass(frozen=True, slots=True)
class Group:
    members: tuple[Member, ...]  # newest first
    representative: UUID
    is_new: bool

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def first(self) -> Member:
        return min(self.members, key=lambda m: m.position)

    @property
    def last(self) -> Member:
        return self.members[0]

    @property
    def position(self) -> GroupPosition:
        return (0 if self.is_new else 1, -self.size, self.representative)

    def daily(self) -> list[tuple[datetime, int]]:
        """Members by the UTC day they started, oldest first (days without one left out)."""
        days = Counter(_day(m.started_at) for m in self.members)
        return sorted(days.items())


def _day(at: datetime) -> datetime:
    utc = at.astimezone(UTC)
    return datetime(utc.year, utc.month, utc.day, tzinfo=UTC)


def groups_of(
    started: Mapping[UUID, datetime], links: Iterable[Link], recurring: frozenset[UUID]
) -> list[Group]:
    """The connected components of the links among `started`'s sessions (a link naming any
    other session is ignored), in the groups' order; a group is new when none of its members
    is `recurring` (has a related neighbour that started before the window)."""
    parent = {s: s for s in started}

    def root(s: UUID) -> UUID:
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    tied: dict[UUID, set[UUID]] = {s: set() for s in started}
    best: dict[UUID, Link] = {}
    for link in links:
        if link.a == link.b or link.a not in started or link.b not in started:
            continue
        tied[link.a].add(link.b)
        tied[link.b].add(link.a)
        for end in (link.a, link.b):
            if end not in best or _closer(link, best[end], end):
                best[end] = link
        low, high = sorted((root(link.a), root(link.b)))
        parent[high] = low
    components: dict[UUID, list[Member]] = {}
    for s, at in started.items():
        member = Member(s, at, len(tied[s]), best.get(s))
        components.setdefault(root(s), []).append(member)
    groups = [_group(found, recurring) for found in components.values()]
    return sorted(groups, key=lambda g: g.position)


def _closer(link: Link, than: Link, member: UUID) -> bool:
    """Whether `link` ties `member` closer than `than` does (ties: the other's lower id)."""
    if link.similarity != than.similarity:
        return link.similarity > than.similarity
    return link.seen_from(member)[0] < than.seen_from(member)[0]


def _group(members: list[Member], recurring: frozenset[UUID]) -> Group:
    members.sort(key=lambda m: m.position, reverse=True)
    representative = min(members, key=lambda m: (-m.ties, m.session_id)).session_id
    is_new = not any(m.session_id in recurring for m in members)
    return Group(tuple(members), representative, is_new)


def marked(groups: Iterable[Group], recurring: frozenset[UUID]) -> list[Group]:
    """The groups told new or recurring (recurring when a member is), in the groups' order."""
    told = [
        Group(g.members, g.representative, not any(m.session_id in recurring for m in g.members))
        for g in groups
    ]
    return sorted(told, key=lambda g: g.position)


def groups_after(
    groups: Sequence[Group], after: GroupPosition | None, limit: int
) -> tuple[list[Group], bool]:
    """The `limit` groups strictly after the cursor's position, and whether more follow."""
    start = 0
    if after is not None:
        start = next((i for i, g in enumerate(groups) if g.position > after), len(groups))
    return list(groups[start : start + limit]), start + limit < len(groups)


def members_after(
    group: Group, after: MemberPosition | None, first: int
) -> tuple[list[Member], bool]:
    """The `first` members (newest first) that started before the cursor's member, and
    whether more follow."""
    start = 0
    if after is not None:
        start = next(
            (i for i, m in enumerate(group.members) if m.position < after), len(group.members)
        )
    return list(group.members[start : start + first]), start + first < len(group.members)
