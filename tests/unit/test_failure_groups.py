"""The failure modes' pure parts: connected components of the links, the representative,
the order of groups, marking groups new or recurring afterwards, paging of groups and
members, and the daily count."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from resolvers.rules.failure_groups import (
    Link,
    groups_after,
    groups_of,
    marked,
    members_after,
)

T = datetime(2026, 11, 20, 23, 30, tzinfo=UTC)
S = [uuid.UUID(int=n + 1) for n in range(10)]
CHUNK = uuid.UUID(int=999)


def link(a: int, b: int, similarity: float = 0.6) -> Link:
    return Link(S[a], S[b], similarity, uuid.UUID(int=100 + a), uuid.UUID(int=200 + b))


def started(*sessions: int) -> dict[uuid.UUID, datetime]:
    return {S[n]: T - timedelta(hours=n) for n in sessions}


def test_a_chain_is_one_group_and_a_link_outside_the_sessions_is_ignored() -> None:
    links = [link(0, 1), link(2, 1), link(2, 3), link(4, 9)]  # 9 is no session of the window
    groups = groups_of(started(0, 1, 2, 3, 4), links, frozenset())
    assert [{m.session_id for m in g.members} for g in groups] == [
        {S[0], S[1], S[2], S[3]},
        {S[4]},
    ]
    chain, alone = groups
    assert {m.session_id: m.ties for m in chain.members} == {S[0]: 1, S[1]: 2, S[2]: 2, S[3]: 1}
    assert chain.representative == S[1]  # 1 and 2 are tied to two each: the lower id
    assert alone.members[0].best is None and alone.representative == S[4]


def test_each_members_closest_tie_is_its_best_link_either_way() -> None:
    groups = groups_of(started(0, 1, 2), [link(0, 1, 0.6), link(2, 0, 0.9)], frozenset())
    best = {m.session_id: m.best for m in groups[0].members}
    assert best[S[0]] == link(2, 0, 0.9) and best[S[1]] == link(0, 1, 0.6)
    other, mine, theirs = link(2, 0, 0.9).seen_from(S[0])
    assert (other, mine, theirs) == (S[2], uuid.UUID(int=200), uuid.UUID(int=102))


def test_new_groups_first_then_by_size_then_by_representative() -> None:
    links = [link(0, 1), link(1, 2), link(3, 4), link(5, 6), link(6, 7)]
    groups = groups_of(started(*range(9)), links, recurring=frozenset({S[5]}))
    assert [(g.is_new, g.size, g.representative) for g in groups] == [
        (True, 3, S[1]),
        (True, 2, S[3]),
        (True, 1, S[8]),
        (False, 3, S[6]),
    ]


def test_marked_groups_recur_through_any_member_and_are_ordered_again() -> None:
    links = [link(0, 1), link(1, 2), link(3, 4), link(5, 6), link(6, 7)]
    sessions = started(*range(9))
    unmarked = groups_of(sessions, links, frozenset())
    assert all(g.is_new for g in unmarked)
    recurring = frozenset({S[5], S[2]})  # neither is its group's representative
    assert marked(unmarked, recurring) == groups_of(sessions, links, recurring)
    assert [(g.is_new, g.size) for g in marked(unmarked, recurring)] == [
        (True, 2),
        (True, 1),
        (False, 3),
        (False, 3),
    ]


def test_groups_and_members_page_after_their_positions() -> None:
    links = [link(0, n) for n in range(1, 6)] + [link(6, 7)]
    groups = groups_of(started(*range(9)), links, frozenset())
    first, more = groups_after(groups, None, 2)
    rest, after = groups_after(groups, first[-1].position, 2)
    assert more and not after and [*first, *rest] == groups
    members, more = members_after(groups[0], None, 4)
    assert [m.session_id for m in members] == S[:4] and more  # newest first
    tail, more = members_after(groups[0], members[-1].position, 4)
    assert [m.session_id for m in tail] == S[4:6] and not more


def test_the_daily_count_is_by_utc_day() -> None:
    [group] = groups_of(started(0, 1, 2), [link(0, 1), link(1, 2)], frozenset())
    assert group.daily() == [
        (datetime(2026, 11, 20, tzinfo=UTC), 3),
    ]
    late = {S[0]: T + timedelta(hours=1), S[1]: T}  # 00:30 the next day, UTC
    [pair] = groups_of(late, [link(0, 1)], frozenset())
    assert [n for _, n in pair.daily()] == [1, 1]
    assert pair.first.started_at == T and pair.last.started_at == T + timedelta(hours=1)
