"""A loop's repeats out of the graph (data/repeats.py): marked by the import and the indexer,
unmarked by the database when what a mark rests on changes, and expanded back by the lookups
so that the served lists stay the exact path's."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import account_predicate
from data.index_moves import move_indexes, to_move
from data.repeats import mark_repeats
from resolvers.tuning import Tuning
from tests.support.comparisons import compare
from tests.support.crowded import IDENTITY
from tests.support.loop_world import (
    APPROXIMATE,
    EXACT,
    compared,
    listed,
    loop_world,
    record_checks,
)
from tests.support.world import T0, World, blend, direction, unit
from transfer.importing import import_lines


async def _marks(engine: AsyncEngine, session: str) -> dict[uuid.UUID | None, int]:
    """The session's chunks by what they repeat (None: nothing)."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT repeat_of, count(*) FROM session_chunks "
                "WHERE runtime_session_id = :s GROUP BY repeat_of"
            ),
            {"s": session},
        )
        return {repeat_of: n for repeat_of, n in rows.all()}


async def _first_chunk(engine: AsyncEngine, session: str) -> uuid.UUID:
    return (await _in_order(engine, session))[0]


async def test_a_marked_loop_is_one_chunk_of_the_index_and_every_list_stays_exact(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # enough ordinary chunks that a scan of the index fills its over-fetch (otherwise it
    # could not vouch, loop or none)
    account, sessions = await loop_world(engine, copies=3000, marked=True, ordinary=20)
    loop = sessions[-1]
    first = await _first_chunk(engine, loop)
    assert await _marks(engine, loop) == {None: 1, first: 2999}
    async with engine.connect() as conn:
        indexed = await conn.execute(
            sa.text(
                "SELECT count(*) FROM session_chunks c WHERE c.runtime_session_id = :s AND "
                + account_predicate(uuid.UUID(account), IDENTITY, "c")
            ),
            {"s": loop},
        )
        assert indexed.scalar_one() == 1
    checked = record_checks(monkeypatch)
    for session in sessions:
        served = await compared(engine, account, session, APPROXIMATE)
        assert served.lookup_path == "account_index"
    # the lookups that would tie in the loop's thousands of copies answer by themselves
    assert checked == [], "a lookup near the marked loop still needed the exact check"
    for session in sessions:
        served = await compared(engine, account, session, APPROXIMATE)
        exact = await compared(engine, account, session, EXACT)
        assert listed(served) == listed(exact), f"session {session} differs from exact"


async def test_an_unmarked_loop_needs_the_check_a_marked_one_does_not(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same world unmarked: the lookups near the loop cannot vouch for their answer (its
    copies tie beyond what the scan returned) and are checked exactly."""
    account, sessions = await loop_world(engine, copies=3000, ordinary=20)
    checked = record_checks(monkeypatch)
    for session in sessions:
        await compared(engine, account, session, APPROXIMATE)
    assert checked, "no lookup near the unmarked loop was checked"


async def test_a_representative_before_the_window_still_brings_its_repeats_within_it(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`window_days` keeps the chunks written within it: a repeat within it whose
    representative is older is found through that representative (its repeats_until is
    within), which is not kept itself."""
    account, sessions = await loop_world(engine, copies=400, marked=True, ordinary=20, aged=True)
    loop = sessions[-1]
    first = await _first_chunk(engine, loop)
    assert await _marks(engine, loop) == {None: 1, first: 399}
    async with engine.connect() as conn:
        until = await conn.execute(
            sa.text("SELECT now() - repeats_until FROM session_chunks WHERE id = :id"),
            {"id": first},
        )
        assert timedelta(days=9) < until.scalar_one() < timedelta(days=11)
    checked = record_checks(monkeypatch)
    served = [await compare(engine, account, s, APPROXIMATE, window_days=30) for s in sessions]
    assert checked == [], "a lookup within the window needed the exact check"
    found_loop = False
    for session, answer in zip(sessions[:-1], served, strict=False):
        exact = await compare(engine, account, session, EXACT, window_days=30)
        assert answer.lookup_path == "account_index"
        assert listed(answer) == listed(exact), f"session {session} differs from exact"
        found_loop |= any(str(n.session.id) == loop for n in exact.results)
    assert found_loop, "the loop was never a neighbour within the window"


async def test_a_repeat_moved_in_time_is_a_repeat_no_longer(engine: AsyncEngine) -> None:
    """Its time counts in its representative's repeats_until."""
    _, session, ids = await _loop_of_four(engine)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "UPDATE session_chunks SET occurred_at = occurred_at + interval '1 day' "
                "WHERE id = :id"
            ),
            {"id": ids[3]},
        )
    assert await _marks(engine, session) == {None: 3, ids[0]: 2}


def _loop_of_four_world() -> tuple[World, str, str]:
    """A session of four chunks of one vector, and a fifth of another: (world, account,
    session)."""
    world = World()
    account, _ = world.account()
    session = world.session(account, "a loop of four")
    turn = unit(direction(11))
    for i in range(4):
        world.chunk(session, turn, index=i, content=f"Running the tests again ({i}).")
    world.chunk(session, unit(direction(12)), index=4, content="Giving up.")
    return world, account, session


async def _loop_of_four(engine: AsyncEngine) -> tuple[str, str, list[uuid.UUID]]:
    """The loop of four imported: (account, session, its four chunks' ids in order)."""
    world, account, session = _loop_of_four_world()
    await world.write(engine)
    return account, session, (await _in_order(engine, session))[:4]


async def _in_order(engine: AsyncEngine, session: str) -> list[uuid.UUID]:
    """The session's chunk ids in its order."""
    async with engine.connect() as conn:
        ids = await conn.execute(
            sa.text(
                "SELECT id FROM session_chunks WHERE runtime_session_id = :s "
                "ORDER BY occurred_at, chunk_index, id"
            ),
            {"s": session},
        )
        return list(ids.scalars())


async def test_an_import_writes_a_session_s_repeats_marked(engine: AsyncEngine) -> None:
    """Marked as they are inserted, not updated after: an index the file's transaction builds
    would otherwise take their unmarked first versions into its graph."""
    world, _, session = _loop_of_four_world()
    async with engine.begin() as conn:
        await import_lines(conn, "loop.jsonl", world.jsonl(), account_index_min_chunks=2)
        updated = await conn.execute(
            sa.text(
                "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'session_chunks'"
            )
        )
        assert updated.scalar_one() == 0
    first = (await _in_order(engine, session))[0]
    # the first written (in the session's order, as the import writes them) stands for the rest
    assert await _marks(engine, session) == {None: 2, first: 3}


async def test_an_import_into_a_session_marks_against_its_chunks_already_there(
    engine: AsyncEngine,
) -> None:
    _, session, ids = await _loop_of_four(engine)
    world = World()
    world.chunk(session, unit(direction(11)), index=9, content="Running the tests once more.")
    await world.write(engine)
    assert await _marks(engine, session) == {None: 2, ids[0]: 4}
    async with engine.connect() as conn:  # the representative, already written, knows it
        latest, until = (
            await conn.execute(
                sa.text(
                    "SELECT max(occurred_at) FILTER (WHERE repeat_of = :r OR id = :r), "
                    "max(repeats_until) FILTER (WHERE id = :r) FROM session_chunks "
                    "WHERE runtime_session_id = :s"
                ),
                {"r": ids[0], "s": session},
            )
        ).one()
    assert until == latest


async def test_a_changed_vector_is_a_repeat_no_longer(engine: AsyncEngine) -> None:
    _, session, ids = await _loop_of_four(engine)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE session_chunks SET embedding = :v WHERE id = :id"),
            {"v": str(unit(direction(13))), "id": ids[3]},
        )
    assert await _marks(engine, session) == {None: 3, ids[0]: 2}


async def test_a_representative_that_changes_or_goes_leaves_its_repeats_standing_alone(
    engine: AsyncEngine,
) -> None:
    account, session, ids = await _loop_of_four(engine)
    async with engine.begin() as conn:  # redacted: no longer comparable
        await conn.execute(
            sa.text(
                "UPDATE session_chunks SET redaction_state = 'redacted', embedding = NULL, "
                "embedding_state = 'skipped' WHERE id = :id"
            ),
            {"id": ids[0]},
        )
    assert await _marks(engine, session) == {None: 5}
    async with engine.begin() as conn:
        # the new representative (its repeats_until) and its two repeats
        assert await mark_repeats(conn, uuid.UUID(account), [uuid.UUID(session)]) == 3
    assert await _marks(engine, session) == {None: 3, ids[1]: 2}
    async with engine.begin() as conn:
        await conn.execute(sa.text("DELETE FROM session_chunks WHERE id = :id"), {"id": ids[1]})
    assert await _marks(engine, session) == {None: 4}


async def test_a_mark_is_written_once(engine: AsyncEngine) -> None:
    account, _, _ = await _loop_of_four(engine)
    async with engine.begin() as conn:
        assert await mark_repeats(conn, uuid.UUID(account)) == 0
        assert await mark_repeats(conn, uuid.UUID(account), []) == 0


async def test_the_exact_path_reads_every_repeat(engine: AsyncEngine) -> None:
    """A neighbour's matched passages count the loop's repeats, marked or not."""
    account, sessions = await loop_world(engine, copies=60, marked=True)
    near = [await compared(engine, account, s, EXACT) for s in sessions[:-1]]
    async with engine.begin() as conn:
        await conn.execute(sa.text("UPDATE session_chunks SET repeat_of = NULL"))
    unmarked = [await compared(engine, account, s, EXACT) for s in sessions[:-1]]
    assert [listed(r) for r in near] == [listed(r) for r in unmarked]


async def test_a_repeat_written_after_the_own_index_s_mark_is_read_by_its_tail(
    engine: AsyncEngine,
) -> None:
    """An older passage of the loop imported after the account's index was built: the first
    written stays the representative, in the graph, and the tail's exact scan reads the new
    one. Had the older passage become the representative (in the tail, read without its
    repeats), the repeats below the mark would be in neither."""
    world, account, session = _loop_of_four_world()
    near = world.session(account, "a session near the loop")
    world.chunk(near, blend(direction(11), direction(14), 0.2), index=0)
    async with engine.begin() as conn:
        await import_lines(conn, "loop.jsonl", world.jsonl(), account_index_min_chunks=2)
    later = World()
    older = T0 - timedelta(days=1)
    later.chunk(session, unit(direction(11)), index=9, content="Again.", occurred_at=older)
    await later.write(engine)
    first = (await _in_order(engine, session))[1]  # the second in time, the first written
    assert (await _marks(engine, session))[first] == 4
    unchecked = Tuning(exact_scan_max_chunks=1, verify_timeout_ms=0)
    served = await compare(engine, account, near, unchecked)
    exact = await compare(engine, account, near, EXACT)
    assert served.lookup_path == "account_index"
    assert listed(served) == listed(exact)
    [loop] = [n for n in exact.results if str(n.session.id) == session]
    assert loop.matched_chunk_count == 5


async def test_move_indexes_builds_an_own_index_that_holds_repeats_again(
    engine: AsyncEngine,
) -> None:
    """An own index as migration 0015 left it (its predicate keeps the repeats) is listed
    and built again, as a merge builds it; then nothing is left to move."""
    account, sessions = await loop_world(engine, copies=300, marked=True, ordinary=20)
    async with engine.begin() as conn:
        name, definition = (
            await conn.execute(
                sa.text(
                    "SELECT indexname, indexdef FROM pg_indexes "
                    "WHERE indexname = (SELECT index_name FROM account_model_indexes "
                    "WHERE account_id = :a)"
                ),
                {"a": account},
            )
        ).one()
        assert " AND (repeat_of IS NULL)" in definition
        await conn.execute(sa.text(f"DROP INDEX {name}"))
        await conn.execute(sa.text(definition.replace(" AND (repeat_of IS NULL)", "")))
    assert [(i.account_id, i.name) for i in await to_move(engine)] == [(uuid.UUID(account), name)]
    moved = await move_indexes(engine, grace_s=0)
    assert [m.was.name for m in moved] == [name]
    assert await to_move(engine) == []
    async with engine.connect() as conn:
        now = await conn.execute(
            sa.text("SELECT indexdef FROM pg_indexes WHERE indexname = :n"),
            {"n": moved[0].index_name},
        )
        assert " AND (repeat_of IS NULL)" in now.scalar_one()
    served = await compared(engine, account, sessions[0], APPROXIMATE)
    exact = await compared(engine, account, sessions[0], EXACT)
    assert served.lookup_path == "account_index" and listed(served) == listed(exact)
