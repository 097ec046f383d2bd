"""The exact check beside a loop session: an answer it could not check says so, a check the
account cannot afford is not started, the checks of a page go comparison by comparison within
the budget, and an account whose exact lookups cost no more is routed to the exact path."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import comparison
from resolvers.arguments import SimilarArgs
from resolvers.comparison import verify
from resolvers.comparison.check_costs import EXACT_CHECK, ROUTE_MIN_SAMPLES, CheckCosts
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.state import NOT_NARROWED
from resolvers.rules.lookup_path import Doubt
from tests.support.comparisons import compare
from tests.support.loop_world import (
    APPROXIMATE,
    EXACT,
    checks_exactly,
    compare_page,
    compare_remembering,
    compared,
    listed,
    loop_world,
    record_checks,
)


async def test_an_approximate_answer_it_could_not_check_says_so(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    account, sessions = await loop_world(engine, copies=1500)
    loop = sessions[-1]
    disabled = await compared(engine, account, loop, replace(APPROXIMATE, verify_timeout_ms=0))
    # an approximate scan stranded in the loop's copies may find nothing past the floor too
    assert "similar_approximate_unverified" in disabled.degraded.reasons
    assert disabled.degraded.semantic is True

    real = comparison.look_up

    async def slow_exact_pass(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        if checks_exactly(kwargs):
            await conn.execute(sa.text("SELECT pg_sleep(1)"))  # spends the pass's real budget
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", slow_exact_pass)
    budget = replace(APPROXIMATE, verify_timeout_ms=50)
    cut_short = await compared(engine, account, sessions[0], budget)
    assert cut_short.degraded.reasons[-1] == "similar_approximate_unverified"
    assert cut_short.degraded.semantic is True
    # the comparison went on after the cut-short pass: its list and details are there
    assert cut_short.results and cut_short.results[0].matches[0].text is not None


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
        if checks_exactly(kwargs):
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
    starved = await compared(engine, account, sessions[0], APPROXIMATE)
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
        if checks_exactly(kwargs):
            passes.append(1)
            await conn.execute(sa.text("SELECT pg_sleep(1)"))  # spends the pass's real budget
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", slow_exact_pass)
    budget = replace(APPROXIMATE, verify_timeout_ms=50)

    async def reasons(checks: CheckCosts) -> list[str]:
        result = await compare_remembering(engine, account, sessions[0], budget, checks)
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


async def test_each_check_is_an_event_of_the_check_phase_s_span(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch, spans: InMemorySpanExporter
) -> None:
    """A check started, and one its account cannot afford, are each an `exact_check` event of
    the comparison's `similar_sessions.check` span, as the log says them, and the lookups that
    could not vouch are named on the lookups' span: what a trace (and the benchmarks' phase
    times) read."""
    monkeypatch.setattr(CheckCosts, "routes_exact", lambda self, account_id: False)
    account, sessions = await loop_world(engine, copies=1500)
    checks = CheckCosts()
    await compare_remembering(engine, account, sessions[0], APPROXIMATE, checks)
    monkeypatch.setattr(CheckCosts, "affordable", lambda *args: False)
    await compare_remembering(engine, account, sessions[0], APPROXIMATE, checks)
    phases = [s for s in spans.get_finished_spans() if s.name == "similar_sessions.check"]
    said: list[dict[str, Any]] = [
        dict(e.attributes or {}) for s in phases for e in s.events if e.name == EXACT_CHECK
    ]
    assert len(phases) == 2 and len(said) == 2, said
    assert said[0]["started"] is True and said[0]["lookups"] >= 1
    assert said[1] == {"lookups": said[1]["lookups"], "started": False, "finished": False}
    # and the first lookups' span says how many could not vouch, by reason
    looked = [s for s in spans.get_finished_spans() if s.name == "similar_sessions.lookups"]
    first: dict[str, Any] = dict(looked[0].attributes or {})
    counts = {d: first.get(f"{verify.DOUBTS}.{d.name.lower()}", 0) for d in Doubt}
    assert 1 <= sum(counts.values()) <= first[verify.APPROXIMATE], first


async def test_checks_that_finish_keep_being_started(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(While the account is not routed to the exact path: see the test after the next.)"""
    monkeypatch.setattr(CheckCosts, "routes_exact", lambda self, account_id: False)
    account, sessions = await loop_world(engine, copies=1500)
    real = comparison.look_up
    passes: list[int] = []

    async def counted(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        passes.extend([1] if checks_exactly(kwargs) else [])
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", counted)
    checks = CheckCosts()
    for _ in range(3):
        served = await compare_remembering(engine, account, sessions[0], APPROXIMATE, checks)
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
    checked = record_checks(monkeypatch, slow_key=1)
    tuning = replace(APPROXIMATE, verify_timeout_ms=500)
    first, second = await compare_page(engine, account, [loop, beside], tuning, CheckCosts())
    assert checked == [{0}, {1}], "the loop's one lookup checked alone, then the rest"
    assert "similar_approximate_unverified" not in first.degraded.reasons
    assert listed(first) == listed(await compared(engine, account, loop, EXACT))
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
    checked = record_checks(monkeypatch)
    checks = CheckCosts()
    checks.learn(uuid.UUID(account), 1, 400)  # two lookups fit 1,000 ms, three do not
    tuning = replace(APPROXIMATE, verify_timeout_ms=1000)
    # the loop's check is one lookup: asked twice, it makes the two that fit
    results = await compare_page(engine, account, [loop, beside, loop], tuning, checks)
    assert checked == [{0, 2}, {1}], "the two that fit in one pass, the rest by its cost"
    for result in results:
        assert "similar_approximate_unverified" not in result.degraded.reasons


async def test_an_account_whose_exact_lookups_cost_no_more_is_then_looked_up_exactly(
    engine: AsyncEngine,
) -> None:
    """The loop's copies leave the approximate lookups of the session beside them unable to
    vouch, so they are checked; an exact pass of this small account costs a lookup less than
    the scan and the check together did (the median of its last comparisons, at least
    ROUTE_MIN_SAMPLES of them), so the comparison after those takes the exact path at once
    (the same list, no HNSW scan and no check before it)."""
    account, sessions = await loop_world(engine, copies=1500)
    checks = CheckCosts()
    answers = []
    for _ in range(ROUTE_MIN_SAMPLES + 1):
        async with comparison.reading(engine) as conn:
            [answer] = await compare_sessions(
                conn,
                uuid.UUID(account),
                [(uuid.UUID(sessions[0]), SimilarArgs(limit=20), NOT_NARROWED)],
                APPROXIMATE,
                checks=checks,
            )
        assert answer is not None
        answers.append(answer)
    *approximate, then = answers
    assert [a.lookup_path for a in approximate] == ["account_index"] * ROUTE_MIN_SAMPLES
    assert then.lookup_path == "exact"
    first = approximate[0]
    assert all(listed(a) == listed(first) for a in approximate)
    exact = await compare(engine, account, sessions[0], EXACT, limit=20)
    assert listed(first) == listed(then) == listed(exact)
