"""The failure modes' pure parts: average linkage over the pairs' similarities (chains of
single links, bridges, pairs below the cut point, ties, each session's cut point), the
representative, the order of groups, marking groups new or recurring afterwards, paging of
groups and members, and the daily count."""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from resolvers.rules.failure_groups import (
    Group,
    Link,
    groups_after,
    marked,
    members_after,
)
from resolvers.rules.failure_groups import groups_of as grouped

T = datetime(2026, 11, 20, 23, 30, tzinfo=UTC)
S = [uuid.UUID(int=n + 1) for n in range(40)]
RELATED = 0.5
CHUNK = uuid.UUID(int=999)


def link(a: int, b: int, similarity: float = 0.6) -> Link:
    return Link(S[a], S[b], similarity, uuid.UUID(int=100 + a), uuid.UUID(int=200 + b))


def started(*sessions: int) -> dict[uuid.UUID, datetime]:
    return {S[n]: T - timedelta(hours=n) for n in sessions}


def groups_of(
    sessions: dict[uuid.UUID, datetime],
    links: Iterable[Link],
    recurring: frozenset[uuid.UUID] = frozenset(),
    related: float = RELATED,
) -> list[Group]:
    return grouped(sessions, links, recurring, dict.fromkeys(sessions, related))


def clique(members: range, similarity: float = 0.8) -> list[Link]:
    return [link(a, b, similarity) for a, b in itertools.combinations(members, 2)]


def sets(groups: list[Group]) -> list[set[uuid.UUID]]:
    return [{m.session_id for m in g.members} for g in groups]


def test_tasks_chained_by_single_links_stay_apart() -> None:
    # Four tasks of four sessions each, every task joined to the next by one related link: the
    # connected components of the links would be one group of sixteen.
    tasks = [range(4 * t, 4 * t + 4) for t in range(4)]
    links = [link for task in tasks for link in clique(task)]
    links += [link(3, 4, 0.65), link(7, 8, 0.65), link(11, 12, 0.65)]
    groups = groups_of(started(*range(16)), links)
    assert sorted(map(sorted, sets(groups))) == [sorted(S[n] for n in task) for task in tasks]


def test_a_bridge_joins_one_of_two_dense_groups_not_both() -> None:
    # Session 10 is related to four of the first group and, closer, to three of the second:
    # it joins the group it is like as a whole (mean 0.56 against 0.43), and the two groups
    # stay apart.
    links = clique(range(5)) + clique(range(5, 10))
    links += [link(10, n, 0.7) for n in range(4)] + [link(10, n, 0.72) for n in (5, 6, 7)]
    groups = groups_of(started(*range(11)), links)
    assert sets(groups) == [{S[n] for n in (0, 1, 2, 3, 4, 10)}, {S[n] for n in range(5, 10)}]
    # Tied to two of each, it is like neither as a whole: a group of its own.
    links = clique(range(5)) + clique(range(5, 10))
    links += [link(10, 0, 0.75), link(10, 1, 0.7), link(10, 5, 0.74), link(10, 6, 0.7)]
    groups = groups_of(started(*range(11)), links)
    assert sets(groups) == [{S[n] for n in range(5)}, {S[n] for n in range(5, 10)}, {S[10]}]


def test_pairs_below_the_cut_point_count_and_missing_pairs_count_as_zero() -> None:
    # z (2) is related to x (0) and loose to y (1): their mean, 0.525, joins it to them.
    joined = groups_of(started(0, 1, 2), [link(0, 1, 0.9), link(2, 0, 0.6), link(1, 2, 0.45)])
    assert sets(joined) == [{S[0], S[1], S[2]}]
    # Without the loose pair, its mean is (0.6 + 0) / 2: it stays alone.
    apart = groups_of(started(0, 1, 2), [link(0, 1, 0.9), link(2, 0, 0.6)])
    assert sets(apart) == [{S[0], S[1]}, {S[2]}]
    # Nothing at or above the cut point merges anything.
    assert len(groups_of(started(0, 1), [link(0, 1, 0.49)])) == 2


def test_a_pair_is_its_closer_link_either_way() -> None:
    # 0 sees 2 at 0.4, 2 sees 0 at 0.62: the pair is 0.62, and the mean with 1 is 0.51.
    links = [link(0, 1, 0.9), link(0, 2, 0.4), link(2, 0, 0.62), link(1, 2, 0.4)]
    assert sets(groups_of(started(0, 1, 2), links)) == [{S[0], S[1], S[2]}]


def test_ties_give_one_grouping_whatever_the_order_of_links() -> None:
    # A ring of equal similarities: every merge is a tie, broken by the lowest sessions.
    links = [link(n, (n + 1) % 6, 0.6) for n in range(6)]
    once = groups_of(started(*range(6)), links)
    assert sets(once) == [{S[0], S[1]}, {S[2], S[3]}, {S[4], S[5]}]
    shuffled = random.Random(7)
    for _ in range(20):
        again = list(links)
        shuffled.shuffle(again)
        assert groups_of(started(*range(6)), again) == once
    # Seen from the other end, each pair ties the same sessions.
    reversed_links = [Link(x.b, x.a, x.similarity, x.b_chunk, x.a_chunk) for x in links]
    assert sets(groups_of(started(*range(6)), reversed_links)) == sets(once)


def test_each_sessions_cut_point_is_its_models() -> None:
    links = [link(0, 1, 0.6), link(2, 3, 0.6)]
    sessions = started(0, 1, 2, 3)
    cuts = {S[0]: 0.5, S[1]: 0.5, S[2]: 0.5, S[3]: 0.65}
    assert sets(grouped(sessions, links, frozenset(), cuts)) == [{S[0], S[1]}, {S[2]}, {S[3]}]


def test_a_link_outside_the_sessions_is_ignored_and_ties_count_related_pairs() -> None:
    links = [*clique(range(3), 0.7), link(3, 0, 0.6), link(3, 1, 0.5), link(3, 2, 0.45)]
    links.append(link(4, 9))
    groups = groups_of(started(0, 1, 2, 3, 4), links)  # 9 is no session of the window
    assert sets(groups) == [{S[0], S[1], S[2], S[3]}, {S[4]}]
    four, alone = groups
    assert {m.session_id: m.ties for m in four.members} == {S[0]: 3, S[1]: 3, S[2]: 2, S[3]: 2}
    assert four.representative == S[0]
    assert alone.members[0].best is None and alone.representative == S[4]


def test_each_members_closest_tie_is_its_best_link_either_way() -> None:
    groups = groups_of(started(0, 1, 2), [link(0, 1, 0.6), link(2, 0, 0.9), link(1, 2, 0.5)])
    best = {m.session_id: m.best for m in groups[0].members}
    assert best[S[0]] == link(2, 0, 0.9) and best[S[1]] == link(0, 1, 0.6)
    other, mine, theirs = link(2, 0, 0.9).seen_from(S[0])
    assert (other, mine, theirs) == (S[2], uuid.UUID(int=200), uuid.UUID(int=102))


def test_new_groups_first_then_by_size_then_by_representative() -> None:
    links = [*clique(range(3), 0.6), link(3, 4), *clique(range(5, 8), 0.6)]
    groups = groups_of(started(*range(9)), links, recurring=frozenset({S[5]}))
    assert [(g.is_new, g.size, g.representative) for g in groups] == [
        (True, 3, S[0]),
        (True, 2, S[3]),
        (True, 1, S[8]),
        (False, 3, S[5]),
    ]


def test_marked_groups_recur_through_any_member_and_are_ordered_again() -> None:
    links = [*clique(range(3), 0.6), link(3, 4), *clique(range(5, 8), 0.6)]
    sessions = started(*range(9))
    unmarked = groups_of(sessions, links, frozenset())
    assert all(g.is_new for g in unmarked)
    recurring = frozenset({S[6], S[2]})  # neither is its group's representative
    assert marked(unmarked, recurring) == groups_of(sessions, links, recurring)
    assert [(g.is_new, g.size) for g in marked(unmarked, recurring)] == [
        (True, 2),
        (True, 1),
        (False, 3),
        (False, 3),
    ]


def test_groups_and_members_page_after_their_positions() -> None:
    links = [*clique(range(6)), link(6, 7)]
    groups = groups_of(started(*range(9)), links, frozenset())
    first, more = groups_after(groups, None, 2)
    rest, after = groups_after(groups, first[-1].position, 2)
    assert more and not after and [*first, *rest] == groups
    members, more = members_after(groups[0], None, 4)
    assert [m.session_id for m in members] == S[:4] and more  # newest first
    tail, more = members_after(groups[0], members[-1].position, 4)
    assert [m.session_id for m in tail] == S[4:6] and not more


def test_the_daily_count_is_by_utc_day() -> None:
    [group] = groups_of(started(0, 1, 2), clique(range(3)), frozenset())
    assert group.daily() == [
        (datetime(2026, 11, 20, tzinfo=UTC), 3),
    ]
    late = {S[0]: T + timedelta(hours=1), S[1]: T}  # 00:30 the next day, UTC
    [pair] = groups_of(late, [link(0, 1)], frozenset())
    assert [n for _, n in pair.daily()] == [1, 1]
    assert pair.first.started_at == T and pair.last.started_at == T + timedelta(hours=1)


def test_a_pair_weighs_its_score_the_credit_for_matching_in_several_places_included() -> None:
    one_place = Link(S[0], S[1], 0.48, uuid.UUID(int=100), uuid.UUID(int=201))
    assert sets(groups_of(started(0, 1), [one_place])) == [{S[0]}, {S[1]}]
    # The same best passage, and more passages matched: its score passes the cut point.
    several = Link(S[0], S[1], 0.48, uuid.UUID(int=100), uuid.UUID(int=201), score=0.52)
    [pair] = groups_of(started(0, 1), [several])
    assert {m.session_id for m in pair.members} == {S[0], S[1]}
    # A tie counts by the passage's similarity, its band's measure: this pair is loose.
    assert [m.ties for m in pair.members] == [0, 0] and pair.members[0].best == several
