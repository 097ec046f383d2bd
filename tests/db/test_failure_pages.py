"""One grouping per failure-modes question: every page of it shows the grouping the first
page did, computed once per process; a write between pages gives a new grouping, said so,
never the old one; the watermark moves with every write an answer could see; a pass that ran
past its budget is named so and never counted as sessions not embedded."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.accounts import Principal
from data.failures import account_watermark
from resolvers import failure_modes as use_case
from resolvers.arguments import FailureArgs
from resolvers.context import Context
from resolvers.errors import BadArgument
from resolvers.failure_results import FailureModesResult
from resolvers.services import Services
from resolvers.tuning import Tuning
from tests.support.failures import (
    CURSORS,
    NAMES,
    WINDOW_DAYS,
    add_session,
    failures_world,
    topic_vectors,
)
from tests.support.world import World, direction


class Asker:
    """Requests of one account to one process (its Services, hence its memo)."""

    def __init__(self, engine: AsyncEngine, account: str, tuning: Tuning | None = None) -> None:
        self.services = Services(engine, tuning or Tuning())
        self.account = uuid.UUID(account)

    async def ask(self, **values: Any) -> FailureModesResult:
        given = {"window_days": WINDOW_DAYS, "limit": 2, **values}
        args = FailureArgs.checked(given, names=NAMES, account_id=self.account, cursors=CURSORS)
        principal = Principal(self.account, "failures", frozenset(), frozenset())
        context = Context.of(self.services, principal, CURSORS)
        return await use_case.failure_modes(context, args, False)


def members_of(result: FailureModesResult) -> list[frozenset[uuid.UUID]]:
    return [frozenset(m.session_id for m in g.group.members) for g in result.groups]


async def test_every_page_of_a_question_is_of_one_grouping_computed_once(
    engine: AsyncEngine, monkeypatch: Any
) -> None:
    world = await failures_world(engine)
    asker = Asker(engine, world.account)
    grouped = 0
    original = use_case._grouped

    async def counted(*args: Any) -> Any:
        nonlocal grouped
        grouped += 1
        return await original(*args)

    monkeypatch.setattr(use_case, "_grouped", counted)
    first = await asker.ask()
    pages, result = [members_of(first)], first
    while result.end_cursor is not None:
        result = await asker.ask(cursor=result.end_cursor)
        assert result.as_of == first.as_of
        assert "failure_modes_regrouped" not in result.degraded.reasons
        pages.append(members_of(result))
    whole = await asker.ask(limit=20, pin=first.as_of)
    assert [g for page in pages for g in page] == members_of(whole)
    assert len(pages) > 2 and grouped == 1
    # Another process (or a memo past its time) groups the same pin again, to the same answer.
    again = await Asker(engine, world.account).ask(limit=20, pin=first.as_of)
    assert members_of(again) == members_of(whole) and again.as_of == first.as_of
    # The same question asked again within SAME_QUESTION_S over the same data is answered
    # from the same pin, grouped no more.
    same = await asker.ask()
    assert same.as_of == first.as_of and grouped == 2


async def test_a_passage_added_between_pages_gives_a_new_grouping_said_so(
    engine: AsyncEngine,
) -> None:
    world = await failures_world(engine, crowded=False)
    asker = Asker(engine, world.account)
    first = await asker.ask(limit=20)
    late = World()
    sid = add_session(late, world.account, "late", 0.1, topic_vectors(direction(7000), 80))
    await late.write(engine)
    after = await asker.ask(limit=20, pin=first.as_of)
    assert after.as_of != first.as_of
    assert after.degraded.reasons[-1] == "failure_modes_regrouped"
    assert "grouped again" in (after.degraded.detail or "")
    assert after.sessions == first.sessions + 1
    assert uuid.UUID(sid) in {m for group in members_of(after) for m in group}
    # The new grouping's own pin pages it without regrouping.
    settled = await asker.ask(limit=20, pin=after.as_of)
    assert "failure_modes_regrouped" not in settled.degraded.reasons
    assert members_of(settled) == members_of(after)
    # Asked anew (no pin) right after the write, the question is not answered as of before it.
    anew = await asker.ask(limit=20)
    assert anew.as_of != first.as_of and anew.sessions == first.sessions + 1


async def test_the_watermark_moves_with_every_write_an_answer_could_see(
    engine: AsyncEngine,
) -> None:
    world = await failures_world(engine, crowded=False)
    account = uuid.UUID(world.account)
    writes = [
        "UPDATE session_chunks SET redaction_state = 'withheld' WHERE id = "
        "(SELECT id FROM session_chunks WHERE account_id = :a ORDER BY id LIMIT 1)",
        "UPDATE runtime_sessions SET status = 'completed' WHERE id = "
        "(SELECT id FROM runtime_sessions WHERE account_id = :a AND status = 'failed' "
        "ORDER BY id LIMIT 1)",
        "DELETE FROM session_chunks WHERE id = "
        "(SELECT id FROM session_chunks WHERE account_id = :a ORDER BY id DESC LIMIT 1)",
        "UPDATE embedding_settings SET enabled = enabled WHERE account_id = :a",
    ]
    async with engine.connect() as conn:
        seen = [await account_watermark(conn, account)]
        assert await account_watermark(conn, account) == seen[0]  # nothing written: the same
    for write in writes:
        async with engine.begin() as conn:
            await conn.execute(sa.text(write), {"a": account})
        async with engine.connect() as conn:
            seen.append(await account_watermark(conn, account))
        assert seen[-1] not in seen[:-1], write
    other = World()
    stranger, _ = other.account("stranger")
    add_session(other, stranger, "theirs", 0.5, topic_vectors(direction(7000), 81))
    await other.write(engine)
    async with engine.connect() as conn:
        assert await account_watermark(conn, account) == seen[-1]  # another account's write


async def test_a_pass_past_its_budget_is_named_so_and_counts_no_session_unembedded(
    engine: AsyncEngine,
) -> None:
    world = await failures_world(engine)
    result = await Asker(engine, world.account, Tuning(failure_modes_timeout_ms=1)).ask()
    assert result.groups == () and result.group_count == 0
    assert "similar_comparison_timed_out" in result.degraded.reasons
    assert "failure_modes_not_embedded" not in result.degraded.reasons
    assert result.not_embedded == 0 and not result.degraded.semantic


async def test_an_answer_cut_short_is_not_kept_for_the_pages_after_it(
    engine: AsyncEngine,
) -> None:
    world = await failures_world(engine, crowded=False)
    cut = Asker(engine, world.account, Tuning(failure_modes_timeout_ms=1))
    answer = await cut.ask()
    assert "similar_comparison_timed_out" in answer.degraded.reasons
    assert len(cut.services.groupings) == 0  # its next page asks again
    kept = Asker(engine, world.account)
    assert (await kept.ask()).groups and len(kept.services.groupings) == 1


async def test_a_pin_and_a_members_cursor_do_not_open_as_each_other(
    engine: AsyncEngine,
) -> None:
    world = await failures_world(engine, crowded=False)
    account = uuid.UUID(world.account)
    args = FailureArgs(WINDOW_DAYS)
    binding = args.members_binding(account)
    first = await Asker(engine, world.account).ask(limit=20)
    member = first.groups[0].group.members[0]
    cursor = CURSORS.failure_members(member.position, binding)
    with pytest.raises(BadArgument):
        CURSORS.open_failure_pin(cursor, binding, "asOf")
    with pytest.raises(BadArgument):
        CURSORS.open_failure_members(first.as_of, binding, "after")
