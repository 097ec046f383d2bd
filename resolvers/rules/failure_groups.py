"""The failure modes' pure parts: the window's sessions and their pairs' weights in, groups
out.

A `Link` is one session's neighbour as its comparison found and ranked it (its best
passage's similarity, and its score: that plus the credit for matching in more than one
place); a pair weighs its heavier link's score either way, and a pair with no link 0. The
groups are those of average linkage cut at the related point: two groups merge only while
the mean weight over all their cross pairs stays at or above it, so a few close
pairs cannot chain unlike sessions into one group as connected components of links would. A
group's representative is the member tied (at related or closer) to the most others, ties
by session id; groups are ordered new first, then by size, then by representative id;
members newest first. Imports neither SQLAlchemy nor strawberry."""

from __future__ import annotations

import heapq
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
    the floor of `a`'s model): `b` is `a`'s neighbour, ranked at `score` (its similarity
    plus the comparison's credit for matching in more than one place; the similarity when
    not given)."""

    a: UUID
    b: UUID
    similarity: float
    a_chunk: UUID
    b_chunk: UUID
    score: float | None = None

    @property
    def weight(self) -> float:
        """What the link counts for in the grouping: its score."""
        return self.similarity if self.score is None else self.score

    def seen_from(self, member: UUID) -> tuple[UUID, UUID, UUID]:
        """(the other member, this member's passage, the other's passage)."""
        if member == self.a:
            return self.b, self.a_chunk, self.b_chunk
        return self.a, self.b_chunk, self.a_chunk


@dataclass(frozen=True, slots=True)
class Member:
    session_id: UUID
    started_at: datetime
    ties: int  # the other members it is tied to at related or closer
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
    started: Mapping[UUID, datetime],
    links: Iterable[Link],
    recurring: frozenset[UUID],
    related: Mapping[UUID, float],
) -> list[Group]:
    """The groups of `started`'s sessions by average linkage (`average_linkage`) over the
    pairs' weights (their scores), each pair at its heavier link either way (a link naming
    any other session is ignored), in the groups' order; a group is new when none of its members is
    `recurring` (has a related neighbour that started before the window). `related` is each
    session's related cut point (its comparison model's)."""
    pairs: dict[tuple[UUID, UUID], Link] = {}
    for link in links:
        if link.a == link.b or link.a not in started or link.b not in started:
            continue
        key = (link.a, link.b) if link.a < link.b else (link.b, link.a)
        seen = pairs.get(key)
        if seen is None or (link.weight, seen.a) > (seen.weight, link.a):
            pairs[key] = link
    weights = {key: link.weight for key, link in pairs.items()}
    clusters = average_linkage(sorted(started), weights, related)
    tied: dict[UUID, int] = dict.fromkeys(started, 0)
    best: dict[UUID, Link] = {}
    place = {s: n for n, cluster in enumerate(clusters) for s in cluster}
    for (a, b), link in pairs.items():
        if place[a] != place[b]:
            continue
        if link.similarity >= max(related[a], related[b]):
            tied[a] += 1
            tied[b] += 1
        for end in (a, b):
            if end not in best or _closer(link, best[end], end):
                best[end] = link
    groups = [
        _group([Member(s, started[s], tied[s], best.get(s)) for s in cluster], recurring)
        for cluster in clusters
    ]
    return sorted(groups, key=lambda g: g.position)


def average_linkage(
    sessions: Sequence[UUID],
    weights: Mapping[tuple[UUID, UUID], float],
    related: Mapping[UUID, float],
) -> list[list[UUID]]:
    """Agglomerative clustering by average linkage: while two clusters have a mean pairwise
    weight at or above their cut point (the highest `related` of their members), the
    two with the highest mean are merged (ties: the clusters holding the lowest sessions, in
    `sessions`' order). A pair missing from `weights` (keyed by the lower id first)
    counts as 0, so one close pair cannot join two groups whose other members are unlike:
    single linkage's chains. Sparse: only clusters tied by some pair are ever compared."""
    rank = {s: n for n, s in enumerate(sessions)}
    members: dict[int, list[UUID]] = {n: [s] for n, s in enumerate(sessions)}
    cut = {n: related[s] for n, s in enumerate(sessions)}
    sums: dict[int, dict[int, float]] = {n: {} for n in members}
    for (a, b), value in weights.items():
        i, j = rank[a], rank[b]
        sums[i][j] = sums[j][i] = value
    version = dict.fromkeys(members, 0)
    heap: list[tuple[float, int, int, int, int]] = []

    def push(i: int, j: int) -> None:
        mean = sums[i][j] / (len(members[i]) * len(members[j]))
        lo, hi = (i, j) if i < j else (j, i)
        heapq.heappush(heap, (-mean, lo, hi, version[lo], version[hi]))

    for i, row in sums.items():
        for j in row:
            if i < j:
                push(i, j)
    while heap:
        negative, i, j, vi, vj = heapq.heappop(heap)
        if version.get(i) != vi or version.get(j) != vj or -negative < max(cut[i], cut[j]):
            continue
        # j joins i (the lower): its sums are added into i's, and every neighbour's is moved.
        members[i] += members.pop(j)
        cut[i] = max(cut[i], cut.pop(j))
        joined = sums.pop(j)
        del sums[i][j], joined[i]
        for k, value in joined.items():
            sums[i][k] = sums[i].get(k, 0.0) + value
            sums[k][i] = sums[i][k]
            del sums[k][j]
        del version[j]
        version[i] += 1
        for k in sums[i]:
            push(i, k)
    return [members[n] for n in sorted(members)]


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
