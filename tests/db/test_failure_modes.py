"""Failure modes against an exact reference on a crowded multi-account table: the groups are
the connected components of the exact neighbour lists under the group rule, isNew is the
exact answer, no other account's session appears and other accounts' failures change
nothing; the bound and its reason code; the order and paging."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import ensure_account_index
from resolvers import failure_modes
from resolvers.arguments import FailureArgs
from resolvers.comparison.phases import SimilarKey
from resolvers.context import Context
from resolvers.errors import BadArgument
from resolvers.failure_modes import compare_window, grouping, lookups
from resolvers.failure_results import FailureModesResult
from resolvers.groupings import Grouping
from resolvers.rules.lookup_plan import APPLIES, Caller
from resolvers.tuning import Tuning
from tests.support.comparisons import compare
from tests.support.crowded import IDENTITY
from tests.support.failures import (
    NOW,
    WINDOW_DAYS,
    Failures,
    add_session,
    ask,
    context_of,
    crowd,
    exact_reference,
    failures_world,
    topic_vectors,
)
from tests.support.world import World, direction

PATHS = {
    "exact": Tuning(exact_scan_max_chunks=100_000),
    "index": Tuning(exact_scan_max_chunks=0),
    "account_index": Tuning(exact_scan_max_chunks=0),
}


def served(result: FailureModesResult) -> dict[frozenset[uuid.UUID], bool]:
    return {frozenset(m.session_id for m in g.group.members): g.is_new for g in result.groups}


def named(world: Failures, *names: str) -> frozenset[uuid.UUID]:
    return frozenset(uuid.UUID(world.sessions[n]) for n in names)


@pytest.mark.parametrize("path", list(PATHS))
async def test_groups_and_is_new_equal_the_exact_reference_on_every_path(
    engine: AsyncEngine, path: str
) -> None:
    world = await failures_world(engine)
    if path == "account_index":
        async with engine.begin() as conn:
            await ensure_account_index(conn, uuid.UUID(world.account), IDENTITY)
    tuning = PATHS[path]
    probe = await compare(engine, world.account, world.sessions["a1"], tuning, statuses=("failed",))
    assert probe.lookup_path == path
    result = await ask(engine, world.account, tuning)
    reference = await exact_reference(engine, world.account, WINDOW_DAYS, ["failed"])
    assert served(result) == reference.new
    for group in result.groups:
        for member in group.group.members:
            assert member.ties == reference.ties[member.session_id]
        ties = {m.session_id: m.ties for m in group.group.members}
        assert group.group.representative == min(ties, key=lambda s: (-ties[s], s))
    # What the world was built to hold, beside the reference's own answer.
    assert served(result) == {
        named(world, "a0", "a1", "a2", "a3"): False,  # an earlier failure
        named(world, "b0", "b1", "b2"): False,  # an earlier completed session
        named(world, "c0", "c1", "c2"): True,  # completed ones in the window are no members
        # The chain drifts from one topic to another: it splits where its parts stop being
        # close as a whole (its ends are unlike), as it would not by links alone.
        named(world, *(f"chain{s}" for s in range(4))): True,
        named(world, "chain4", "chain5"): True,
        named(world, "g0", "g1"): True,  # the earlier one is only loosely like them
        named(world, "alone"): True,
    }
    counts = (result.sessions, result.compared, result.not_embedded, result.left_out)
    assert counts == (20, 20, 1, 0)
    assert result.degraded.reasons == ("failure_modes_not_embedded",)
    assert "1 of the sessions compared" in (result.degraded.detail or "")


async def test_a_chain_splits_though_each_link_is_related(engine: AsyncEngine) -> None:
    world = await failures_world(engine, crowded=False)
    result = await ask(engine, world.account)
    chained = named(world, *(f"chain{s}" for s in range(6)))
    parts = [g for g in result.groups if {m.session_id for m in g.group.members} <= chained]
    assert sorted(g.size for g in parts) == [2, 4]
    head = next(g for g in parts if g.size == 4)
    ends = {uuid.UUID(world.sessions["chain0"]), uuid.UUID(world.sessions["chain3"])}
    for member in head.group.members:
        if member.session_id in ends:
            assert member.best is not None and member.best.similarity >= 0.5
    assert head.since == min(m.started_at for m in head.group.members)
    assert [b.sessions for b in head.daily] == [1] * 4
    assert head.first.id == uuid.UUID(world.sessions["chain3"])  # started 3.2 days ago
    assert head.last.id == uuid.UUID(world.sessions["chain0"])


async def test_another_accounts_failures_change_nothing(engine: AsyncEngine) -> None:
    world = await failures_world(engine, crowded=False)
    alone = await ask(engine, world.account)
    added = World()
    crowd(added, [direction(7000 + t) for t in range(6)], accounts=4)
    await added.write(engine)
    crowded = await ask(engine, world.account)
    assert served(crowded) == served(alone)
    assert [g.group for g in crowded.groups] == [g.group for g in alone.groups]
    assert [g.seen_before for g in crowded.groups] == [g.seen_before for g in alone.groups]
    mine = {uuid.UUID(s) for s in world.sessions.values()}
    for group in crowded.groups:
        shown = {m.session_id for m in group.group.members}
        shown |= {group.representative.id, group.first.id, group.last.id}
        shown |= {group.seen_before.id} if group.seen_before else set()
        assert shown <= mine


async def test_a_recurring_group_names_the_earlier_session_most_like_it(
    engine: AsyncEngine,
) -> None:
    world = await failures_world(engine, crowded=False)
    result = await ask(engine, world.account)
    seen = {g.size: g.seen_before for g in result.groups if not g.is_new}
    assert seen[4] is not None and seen[4].id == uuid.UUID(world.sessions["a earlier"])
    assert seen[3] is not None and seen[3].id == uuid.UUID(world.sessions["b earlier completed"])
    assert all(g.seen_before is None for g in result.groups if g.is_new)


async def test_the_bound_compares_the_newest_and_names_the_oldest_left_out(
    engine: AsyncEngine,
) -> None:
    world = await failures_world(engine, crowded=False)
    everything = await ask(engine, world.account)
    bounded = await ask(engine, world.account, Tuning(failure_modes_sessions=8))
    assert (bounded.sessions, bounded.compared, bounded.left_out) == (20, 8, 12)
    assert bounded.degraded.reasons[0] == "failure_modes_bounded"
    compared = {m.session_id for g in bounded.groups for m in g.group.members}
    newest = sorted(
        (m for g in everything.groups for m in g.group.members),
        key=lambda m: m.position,
        reverse=True,
    )
    assert bounded.compared_since is not None
    assert all(m.started_at >= bounded.compared_since for m in newest if m.session_id in compared)
    left_out = [m for m in newest if m.started_at < bounded.compared_since]
    assert compared.isdisjoint(m.session_id for m in left_out)
    detail = bounded.degraded.detail or ""
    assert "holds 20 sessions" in detail and "at most 8" in detail and "oldest 12" in detail


async def test_groups_come_new_first_then_by_size_and_page_stably(engine: AsyncEngine) -> None:
    world = await failures_world(engine)
    whole = await ask(engine, world.account)
    keys = [(not g.is_new, -g.size, g.group.representative) for g in whole.groups]
    assert keys == sorted(keys) and whole.group_count == len(whole.groups) == 7
    pages, after = [], None
    while True:
        page = await ask(engine, world.account, limit=4, cursor=after)
        pages += [g.group for g in page.groups]
        if page.end_cursor is None:
            assert not page.has_next_page
            break
        after = page.end_cursor
    assert pages == [g.group for g in whole.groups]
    with pytest.raises(BadArgument, match="cursor"):
        await ask(engine, world.account, window_days=8, cursor=after or "x.y")


async def test_containing_answers_the_one_group_of_a_session(engine: AsyncEngine) -> None:
    world = await failures_world(engine, crowded=False)
    [group] = (await ask(engine, world.account, containing=uuid.UUID(world.sessions["b1"]))).groups
    assert {m.session_id for m in group.group.members} == named(world, "b0", "b1", "b2")
    outside = await ask(engine, world.account, containing=uuid.UUID(world.sessions["a earlier"]))
    assert outside.groups == () and outside.group_count == 0


async def test_any_status_and_a_wider_window_take_more_sessions(engine: AsyncEngine) -> None:
    world = await failures_world(engine, crowded=False)
    result = await ask(engine, world.account, window_days=40, statuses=None)
    reference = await exact_reference(engine, world.account, 40, ["failed", "completed"])
    assert served(result) == reference.new
    assert result.compared == 26
    assert result.window_start < NOW


@pytest.mark.parametrize("earlier", ["one exact pass", "lookup paths"])
async def test_is_new_asks_a_recurring_groups_representative_first(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch, earlier: str
) -> None:
    world = await failures_world(engine, crowded=False)
    # x and y alike, q and z each like both of them but not like each other (x and y the
    # most tied: one is the representative); an earlier failure like z only: the group
    # recurs, though not through its representative.
    u1, u2 = (direction(7300 + n) for n in range(2))
    line = World()
    unit = [v / np.linalg.norm(v) for v in (u1, u2)]
    for name, days_ago, vector in (
        ("x", 1.0, unit[0]),
        ("y", 2.0, unit[0]),
        ("q", 2.5, unit[0] - 0.6 * unit[1]),
        ("z", 3.0, unit[0] + 0.8 * unit[1]),
        ("w, earlier", 20.0, unit[1]),
    ):
        sid = add_session(line, world.account, name, days_ago, topic_vectors(vector, 90, 2, 0.02))
        world.sessions[name] = sid
    await line.write(engine)
    context = context_of(engine, world.account, Tuning())
    asked: list[uuid.UUID] = []
    compare_window = failure_modes.compare_window

    async def spied(
        context: Context, ids: list[uuid.UUID], lookup: failure_modes.Lookup, now: datetime
    ) -> Any:
        asked.extend(ids if lookup.narrowing.started_before is not None else [])
        return await compare_window(context, ids, lookup, now)

    monkeypatch.setattr(failure_modes, "compare_window", spied)
    load_many = context.loaders.similar.load_many

    def loaded(keys: list[SimilarKey]) -> Any:
        asked.extend(i for i, _, narrowing in keys if narrowing.started_before is not None)
        return load_many(keys)

    context.loaders.similar.load_many = loaded  # type: ignore[method-assign]
    if earlier == "lookup paths":  # the sessions before the window hold too many passages
        earliest = replace(APPLIES[Caller.EARLIER], exact_up_to=0)
        monkeypatch.setitem(APPLIES, Caller.EARLIER, earliest)
    found, _ = await grouping(context, FailureArgs(WINDOW_DAYS))
    reference = await exact_reference(engine, world.account, WINDOW_DAYS, ["failed"])
    assert served_groups(found) == reference.new
    xyqz = named(world, "x", "y", "q", "z")
    [group] = [g for g in found.groups if {m.session_id for m in g.members} == xyqz]
    assert not group.is_new and group.representative in named(world, "x", "y")
    assert found.seen_before[group.representative] == uuid.UUID(world.sessions["w, earlier"])
    assert xyqz <= set(asked)  # the representative had no earlier neighbour: all were asked
    assert len(asked) == len(set(asked))
    for other in found.groups:  # the representative alone when it recurs, else every member
        members = {m.session_id for m in other.members}
        assert members & set(asked) in ({other.representative}, members)
        if other.is_new:
            assert members <= set(asked)


def served_groups(found: Grouping) -> dict[frozenset[uuid.UUID], bool]:
    return {frozenset(m.session_id for m in g.members): g.is_new for g in found.groups}


@pytest.mark.parametrize("path", list(PATHS))
async def test_the_one_pass_finds_what_similar_sessions_shows_each_member(
    engine: AsyncEngine, path: str
) -> None:
    world = await failures_world(engine)  # four other accounts' failures beside these
    if path == "account_index":
        async with engine.begin() as conn:
            await ensure_account_index(conn, uuid.UUID(world.account), IDENTITY)
    tuning = PATHS[path]
    context = context_of(engine, world.account, tuning)
    args = FailureArgs(WINDOW_DAYS)
    found, _ = await grouping(context, args)
    links, _ = lookups(args, found.window_start)
    ids = [row.id for row in found.found.sessions]
    passed = await compare_window(context, ids, links, found.pin.window_end)
    shown: dict[uuid.UUID, list[tuple[uuid.UUID, float]]] = {}
    for session in ids:
        alone = await compare(
            engine,
            world.account,
            str(session),
            tuning,
            statuses=("failed",),
            window_days=WINDOW_DAYS,
            limit=20,
        )
        assert alone.lookup_path == path or alone.model_identity is None
        shown[session] = [(n.session_id, n.similarity) for n in alone.ranked]
        assert [(n.session_id, n.similarity) for n in passed[session].ranked] == shown[session]
        assert passed[session].probes == alone.probes
    for group in found.groups:
        for member in group.members:
            if member.best is None:
                continue
            a, b = member.best.a, member.best.b
            assert (b, member.best.similarity) in shown[a]  # a tie is a's neighbour, as shown
