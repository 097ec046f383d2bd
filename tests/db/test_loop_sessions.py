"""A session that repeats one turn many times (identical vectors) on the approximate paths:
the served lists equal the exact answer, and are never empty where it has neighbours."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import comparison
from data.account_indexes import ensure_account_index
from data.engine import make_engine
from data.lookups import Ask, Inventory, Limits
from resolvers.arguments import SimilarArgs
from resolvers.comparison.check_costs import CheckCosts
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.results import SimilarResult
from resolvers.rules.ranking import SIMILAR_PROBE_CHUNKS
from resolvers.tuning import Tuning
from tests.support.comparisons import compare, transaction_queries
from tests.support.crowded import IDENTITY
from tests.support.loops import SPREAD, ordinary_sessions, repeat_session, topic
from tests.support.world import World, direction, unit

APPROXIMATE = Tuning(exact_scan_max_chunks=100)
EXACT = Tuning(exact_scan_max_chunks=1_000_000)


async def loop_world(engine: AsyncEngine, copies: int) -> tuple[str, list[str]]:
    """Twelve ordinary sessions on three topics and a loop session of `copies` identical
    chunks on the first topic; the account gets its own index."""
    world = World()
    account, _ = world.account()
    sessions = ordinary_sessions(world, account, 12)
    loop = world.session(account, "stuck in a loop", day=20)
    turn = unit(topic(0) + 0.5 * direction(499) / SPREAD)
    world.chunk(loop, turn, index=0, content="Running the tests again.")
    await world.write(engine)
    await repeat_session(engine, loop, copies)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    return account, [*sessions, loop]


async def _compare(
    engine: AsyncEngine, account: str, session: str, tuning: Tuning
) -> SimilarResult:
    return await compare(engine, account, session, tuning, limit=20, max_matches_per_session=5)


def _listed(result: SimilarResult) -> list[tuple[uuid.UUID, float, int]]:
    return [(n.session.id, round(n.score, 9), n.matched_chunk_count) for n in result.results]


async def test_a_loop_near_other_sessions_leaves_their_lists_exact(engine: AsyncEngine) -> None:
    """The loop's copies tie at one distance: which of them are a probe's 25 nearest is settled
    by chunk id, which the approximate scan's few hundred rows cannot do alone."""
    account, sessions = await loop_world(engine, copies=1500)
    for session in sessions:
        served = await _compare(engine, account, session, APPROXIMATE)
        exact = await _compare(engine, account, session, EXACT)
        assert (served.lookup_path, exact.lookup_path) == ("account_index", "exact")
        assert served.results or not exact.results, f"session {session} came back empty"
        assert _listed(served) == _listed(exact), f"session {session} differs from exact"
        assert served.degraded.reasons == exact.degraded.reasons


async def test_a_loop_session_is_never_left_empty(engine: AsyncEngine) -> None:
    """A probe of the loop sees its own copies first (they are nearest of all, and filtered
    out): thousands of identical vectors form a part of the graph with no way out, and a scan
    that starts there finds nothing else."""
    account, sessions = await loop_world(engine, copies=5000)
    loop = sessions[-1]
    served = await _compare(engine, account, loop, APPROXIMATE)
    exact = await _compare(engine, account, loop, EXACT)
    assert served.lookup_path == "account_index"
    assert exact.results and served.results, "the loop session came back empty"
    assert _listed(served) == _listed(exact)


async def test_an_approximate_answer_it_could_not_check_says_so(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    account, sessions = await loop_world(engine, copies=1500)
    loop = sessions[-1]
    disabled = await _compare(engine, account, loop, replace(APPROXIMATE, verify_timeout_ms=0))
    # an approximate scan stranded in the loop's copies may find nothing past the floor too
    assert "similar_approximate_unverified" in disabled.degraded.reasons
    assert disabled.degraded.semantic is True

    real = comparison.look_up

    async def slow_exact_pass(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("exact"):
            await conn.execute(sa.text("SELECT pg_sleep(1)"))  # spends the pass's real budget
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", slow_exact_pass)
    budget = replace(APPROXIMATE, verify_timeout_ms=50)
    cut_short = await _compare(engine, account, sessions[0], budget)
    assert cut_short.degraded.reasons[-1] == "similar_approximate_unverified"
    assert cut_short.degraded.semantic is True
    # the comparison went on after the cut-short pass: its list and details are there
    assert cut_short.results and cut_short.results[0].matches[0].text is not None


async def test_a_check_or_a_wider_search_on_the_comparisons_pool_begins_a_transaction(
    engine: AsyncEngine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comparison runs without a transaction (`reading`). A check (a savepoint, its budget
    set for the statement after) and a wider search (ef_search set for the statement after)
    each begin one when it comes first, and the pool takes the connection back as it was."""
    account, sessions = await loop_world(engine, copies=1500)
    loop = sessions[-1]
    exact = await _compare(engine, account, loop, EXACT)
    comparisons = make_engine(database_url, pool_size=1, comparison=APPROXIMATE.comparison_settings)
    steps: list[str] = []
    real_widen, real_check = comparison.widen_search, comparison.own_budget

    async def widen_and_show(conn: AsyncConnection, ef_search: int) -> None:
        await real_widen(conn, ef_search)
        shown = (await conn.execute(sa.text("SHOW hnsw.ef_search"))).scalar_one()
        steps.append(f"widened to {shown}")

    def check(conn: AsyncConnection, budget_ms: int) -> Any:
        steps.append("checked")
        return real_check(conn, budget_ms)

    monkeypatch.setattr(comparison, "widen_search", widen_and_show)
    monkeypatch.setattr(comparison, "own_budget", check)
    never_widened = replace(APPROXIMATE, ef_search_retry=APPROXIMATE.ef_search)
    never_checked = replace(APPROXIMATE, verify_timeout_ms=0)
    try:
        with transaction_queries(comparisons) as sent:
            checked = await _compare(comparisons, account, loop, never_widened)
            assert steps == ["checked"]
            assert sent == ["BEGIN", "ROLLBACK"]
            steps.clear()
            await _compare(comparisons, account, loop, never_checked)
            assert steps == [f"widened to {APPROXIMATE.ef_search_retry}"]
            sent.clear()
            await _compare(comparisons, account, sessions[0], never_checked)
            assert sent == []  # the pool's one connection, back in autocommit
    finally:
        await comparisons.dispose()
    assert "similar_approximate_unverified" not in checked.degraded.reasons
    assert _listed(checked) == _listed(exact)


async def test_an_exact_pass_the_server_lacks_resources_for_says_so(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check the server lacks resources for (here a sort in its transaction spilling past
    `temp_file_limit`: SQLSTATE 53400) is an unverified answer, not an error: the comparison
    goes on."""
    account, sessions = await loop_world(engine, copies=1500)
    real = comparison.look_up
    refused: list[bool] = []

    async def starved_exact_pass(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("exact"):
            await conn.execute(
                sa.text(
                    "SELECT set_config('work_mem', '64kB', true), "
                    "set_config('temp_file_limit', '64kB', true)"
                )
            )
            try:
                await conn.execute(
                    sa.text(
                        "SELECT count(*) FROM (SELECT g FROM generate_series(1, 100000) g "
                        "ORDER BY g DESC) AS spilled"
                    )
                )
            except Exception:
                refused.append(True)
                raise
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", starved_exact_pass)
    starved = await _compare(engine, account, sessions[0], APPROXIMATE)
    assert refused, "the exact pass ran and the server refused it"
    assert starved.degraded.reasons[-1] == "similar_approximate_unverified"
    assert starved.results and starved.results[0].matches[0].text is not None


async def test_a_check_its_account_cannot_afford_is_not_started(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that ran out of its budget on an account predicts that one of as many lookups
    would again: the next comparison says unverified at once instead of spending the budget;
    once what was learned expires, the check is tried again."""
    account, sessions = await loop_world(engine, copies=1500)
    real = comparison.look_up
    passes: list[int] = []

    async def slow_exact_pass(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("exact"):
            passes.append(1)
            await conn.execute(sa.text("SELECT pg_sleep(1)"))  # spends the pass's real budget
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", slow_exact_pass)
    budget = replace(APPROXIMATE, verify_timeout_ms=50)

    async def reasons(checks: CheckCosts) -> list[str]:
        result = await _compare_remembering(engine, account, sessions[0], budget, checks)
        assert result.results
        return result.degraded.reasons

    checks = CheckCosts()
    assert (await reasons(checks))[-1] == "similar_approximate_unverified"
    assert len(passes) == 1, "the first comparison's check was started"
    assert (await reasons(checks))[-1] == "similar_approximate_unverified"
    assert len(passes) == 1, "a check predicted to run out of budget was started"
    forgetful = CheckCosts(ttl_s=0)
    await reasons(forgetful)
    await reasons(forgetful)
    assert len(passes) == 3, "a check was skipped on what had expired"


async def test_checks_that_finish_keep_being_started(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(While the account is not routed to the exact path: see the test after the next.)"""
    monkeypatch.setattr(CheckCosts, "routes_exact", lambda self, account_id: False)
    account, sessions = await loop_world(engine, copies=1500)
    real = comparison.look_up
    passes: list[int] = []

    async def counted(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        passes.extend([1] if kwargs.get("exact") else [])
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", counted)
    checks = CheckCosts()
    for _ in range(3):
        served = await _compare_remembering(engine, account, sessions[0], APPROXIMATE, checks)
        assert "similar_approximate_unverified" not in served.degraded.reasons
    assert len(passes) == 3, "every comparison's check was started"


async def test_a_check_past_its_budget_leaves_the_other_comparisons_checked(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page's unsure lookups are checked comparison by comparison, fewest lookups first:
    one whose check runs past the budget leaves the checks of the others done, where a single
    pass for all of them ran past the budget together and left each one unverified."""
    account, sessions = await loop_world(engine, copies=1500)
    loop, beside = sessions[-1], sessions[0]
    checked = _record_checks(monkeypatch, slow_key=1)
    tuning = replace(APPROXIMATE, verify_timeout_ms=500)
    first, second = await _compare_page(engine, account, [loop, beside], tuning, CheckCosts())
    assert checked == [{0}, {1}], "the loop's one lookup checked alone, then the rest"
    assert "similar_approximate_unverified" not in first.degraded.reasons
    assert _listed(first) == _listed(await _compare(engine, account, loop, EXACT))
    assert second.degraded.reasons[-1] == "similar_approximate_unverified"
    assert second.results, "the unverified comparison keeps its approximate list"


async def test_a_known_check_cost_checks_as_many_comparisons_as_fit_in_one_pass(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once what a lookup's check costs on the account is known, the comparisons that fit the
    budget by it (fewest lookups first) are checked in one pass, and the rest after it by
    what that pass cost."""
    account, sessions = await loop_world(engine, copies=1500)
    loop, beside = sessions[-1], sessions[0]
    checked = _record_checks(monkeypatch)
    checks = CheckCosts()
    checks.learn(uuid.UUID(account), 1, 400)  # two lookups fit 1,000 ms, three do not
    tuning = replace(APPROXIMATE, verify_timeout_ms=1000)
    # the loop's check is one lookup: asked twice, it makes the two that fit
    results = await _compare_page(engine, account, [loop, beside, loop], tuning, checks)
    assert checked == [{0, 2}, {1}], "the two that fit in one pass, the rest by its cost"
    for result in results:
        assert "similar_approximate_unverified" not in result.degraded.reasons


def _record_checks(monkeypatch: pytest.MonkeyPatch, slow_key: int | None = None) -> list[set[int]]:
    """The keys of the comparisons each exact pass checks, pass by pass; a pass that checks
    `slow_key` first spends 2 s of the budget's real time (more than these tests give it)."""
    real = comparison.look_up
    checked: list[set[int]] = []

    async def recorded(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("exact"):
            checked.append({ask.key for ask in args[1] if ask.again})  # args[1]: the asks
            if slow_key in checked[-1]:
                await conn.execute(sa.text("SELECT pg_sleep(2)"))
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", recorded)
    return checked


async def _compare_page(
    engine: AsyncEngine, account: str, sessions: list[str], tuning: Tuning, checks: CheckCosts
) -> list[SimilarResult]:
    """The sessions compared in one batch, as a GraphQL page asks them (20, 5 matches each)."""
    args = SimilarArgs(limit=20, max_matches_per_session=5)
    async with comparison.reading(engine) as conn:
        results = await compare_sessions(
            conn,
            uuid.UUID(account),
            [(uuid.UUID(s), args) for s in sessions],
            tuning,
            checks=checks,
        )
    found = [r for r in results if r is not None]
    assert len(found) == len(sessions)
    return found


async def _compare_remembering(
    engine: AsyncEngine, account: str, session: str, tuning: Tuning, checks: CheckCosts
) -> SimilarResult:
    """One comparison with `checks` as the process's memory of what checks cost."""
    async with comparison.reading(engine) as conn:
        [result] = await compare_sessions(
            conn, uuid.UUID(account), [(uuid.UUID(session), SimilarArgs())], tuning, checks=checks
        )
    assert result is not None
    return result


class _RecordedChecks(CheckCosts):
    """CheckCosts that keeps how many lookups each check that ran covered."""

    def __init__(self) -> None:
        super().__init__()
        self.checked: list[int] = []

    def learn(
        self, account_id: uuid.UUID, lookups: int, cost_ms: float, finished: bool = True
    ) -> None:
        self.checked.append(lookups)
        super().learn(account_id, lookups, cost_ms, finished)


async def test_a_loops_identical_probes_are_looked_up_once(engine: AsyncEngine) -> None:
    """The loop's eight probes have one vector: one lookup answers all of them (its exact
    check too, which an account of any size can then afford eight times more often), and each
    probe gets the rows it would have found on its own."""
    account, sessions = await loop_world(engine, copies=1500)
    loop = sessions[-1]
    ask = Ask(0, uuid.UUID(loop))
    limits = Limits(25, 0.35, 100, 1_000_000, SIMILAR_PROBE_CHUNKS)
    async with engine.connect() as conn:
        looked = await comparison.look_up(conn, uuid.UUID(account), [ask], [IDENTITY], limits)
    inventory = looked.inventories[0]
    assert inventory is not None
    assert len(inventory.probes) == 8
    assert _shared(inventory) == {n: 0 for n in range(1, 8)}
    by_probe = [
        sorted((h.chunk_id, h.similarity) for h in inventory.probes[n].answer.hits)
        for n in range(8)
    ]
    assert by_probe[0] and all(rows == by_probe[0] for rows in by_probe)

    checks = _RecordedChecks()
    served = await _compare_remembering(engine, account, loop, APPROXIMATE, checks)
    exact = await _compare(engine, account, loop, EXACT)
    assert checks.checked == [1], "the check covered one lookup per distinct vector"
    assert _listed(served) == _listed(exact)


async def test_probes_with_different_vectors_keep_their_own_lookups(engine: AsyncEngine) -> None:
    account, sessions = await loop_world(engine, copies=200)
    ask = Ask(0, uuid.UUID(sessions[0]))
    limits = Limits(25, 0.35, 100, 1_000_000, SIMILAR_PROBE_CHUNKS)
    async with engine.connect() as conn:
        looked = await comparison.look_up(conn, uuid.UUID(account), [ask], [IDENTITY], limits)
    inventory = looked.inventories[0]
    assert inventory is not None
    assert inventory.probes and _shared(inventory) == {}


def _shared(inventory: Inventory) -> dict[int, int]:
    """Each probe whose lookup another probe of the comparison (same vector) answers."""
    return {p.number: p.lookup for p in inventory.probes if p.lookup != p.number}


async def test_an_account_whose_exact_lookups_cost_no_more_is_then_looked_up_exactly(
    engine: AsyncEngine,
) -> None:
    """The loop's copies leave the approximate lookups of the session beside them unable to
    vouch, so they are checked; an exact pass of this small account costs a lookup less than
    the scan and the check together did, so its next comparison takes the exact path at once
    (the same list, no HNSW scan and no check before it)."""
    account, sessions = await loop_world(engine, copies=1500)
    checks = CheckCosts()
    answers = []
    for _ in range(2):
        async with comparison.reading(engine) as conn:
            [answer] = await compare_sessions(
                conn,
                uuid.UUID(account),
                [(uuid.UUID(sessions[0]), SimilarArgs(limit=20))],
                APPROXIMATE,
                checks=checks,
            )
        assert answer is not None
        answers.append(answer)
    first, then = answers
    assert (first.lookup_path, then.lookup_path) == ("account_index", "exact")
    exact = await compare(engine, account, sessions[0], EXACT, limit=20)
    assert _listed(first) == _listed(then) == _listed(exact)
