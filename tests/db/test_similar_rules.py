"""Each rule of the contract's comparison, on a real database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import comparison
from resolvers.rules.ranking import Band
from resolvers.tuning import Tuning
from tests.support.comparisons import compare
from tests.support.world import World, blend, direction

OTHER_MODEL = "local:other-8@8"


def near(seed: int, weight: float = 0.2) -> list[float]:
    return blend(direction(1), direction(seed), weight)


async def test_a_session_with_no_vectors_names_why(engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account(model=None)
    viewed = world.session(account)
    world.chunk(viewed, None)
    await world.write(engine)
    result = await compare(engine, account, viewed)
    assert result.degraded.semantic is False
    assert result.degraded.reasons == ("semantic_not_enabled", "similar_session_not_embedded")
    off = await compare(engine, account, viewed, Tuning(embeddings_enabled=False))
    assert off.degraded.reasons == (
        "semantic_disabled_by_deployment",
        "semantic_not_enabled",
        "similar_session_not_embedded",
    )
    assert result.results == () and result.model_identity is None


async def test_pending_chunks_in_scope_name_an_incomplete_backfill(engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account(scope="summaries_only")
    viewed = world.session(account)
    world.chunk(viewed, near(2), index=0)
    world.chunk(viewed, None, index=1, kind="transcript_message")  # out of scope
    await world.write(engine)
    result = await compare(engine, account, viewed)
    assert result.pending_chunks == 0
    assert "semantic_backfill_incomplete" not in result.degraded.reasons
    world.chunk(viewed, None, index=2, kind="session_summary")
    await world.write(engine)
    result = await compare(engine, account, viewed)
    assert result.pending_chunks == 1
    assert "semantic_backfill_incomplete" in result.degraded.reasons


async def test_a_session_embedded_by_another_model_is_compared_in_its_own_space(
    engine: AsyncEngine,
) -> None:
    world = World()
    account, _ = world.account()
    viewed, same_model, other_model = (world.session(account) for _ in range(3))
    small = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    world.chunk(viewed, small, model=OTHER_MODEL)
    world.chunk(same_model, [0.9, 0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], model=OTHER_MODEL)
    world.chunk(other_model, near(3))  # the account's configured model: not comparable
    await world.write(engine)
    result = await compare(engine, account, viewed)
    assert result.model_identity == OTHER_MODEL
    assert "semantic_model_mismatch" in result.degraded.reasons
    assert [str(n.session.id) for n in result.results] == [same_model]


async def test_sampling_and_the_window_are_named(engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account()
    viewed, recent, old = (world.session(account) for _ in range(3))
    for i in range(9):
        world.chunk(viewed, near(10 + i), index=i)
    now = datetime.now(UTC)
    world.chunk(recent, near(30), occurred_at=now - timedelta(days=2))
    world.chunk(old, near(31), occurred_at=now - timedelta(days=40))
    await world.write(engine)
    everything = await compare(engine, account, viewed)
    assert everything.degraded.reasons == ("similar_session_sampled",)
    assert (everything.embedded_chunks, everything.probe_chunks) == (9, 8)
    assert {str(n.session.id) for n in everything.results} == {recent, old}
    windowed = await compare(engine, account, viewed, window_days=30)
    assert windowed.degraded.reasons == ("similar_window_applied", "similar_session_sampled")
    assert [str(n.session.id) for n in windowed.results] == [recent]
    narrow = await compare(engine, account, viewed, window_days=1)
    assert narrow.results == ()
    assert narrow.degraded.reasons[-1] == "similar_no_comparable_sessions"


async def test_no_hits_tells_nothing_comparable_from_nothing_similar(engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account()
    viewed = world.session(account)
    world.chunk(viewed, near(2))
    await world.write(engine)
    lonely = await compare(engine, account, viewed)
    assert lonely.degraded.reasons == ("similar_no_comparable_sessions",)
    unrelated = world.session(account)
    world.chunk(unrelated, [-x for x in near(2)])  # opposite: similarity below the floor
    await world.write(engine)
    dissimilar = await compare(engine, account, viewed)
    assert dissimilar.results == ()
    # issue #26: no silent empty answer; the nearest session below the floor is offered
    assert dissimilar.degraded.reasons == ("similar_nothing_close_enough",)
    assert dissimilar.degraded.semantic is True
    [nearest] = dissimilar.nearest
    assert str(nearest.session.id) == unrelated and nearest.similarity < dissimilar.floor
    assert nearest.band is Band.LOOSE


async def test_a_chunk_that_leaves_clear_neither_probes_nor_matches(engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account()
    viewed, neighbour = world.session(account), world.session(account)
    probe = world.chunk(viewed, near(2), index=0)
    world.chunk(viewed, near(3), index=1)
    match = world.chunk(neighbour, near(4), index=0)
    world.chunk(neighbour, near(5), index=1)
    await world.write(engine)
    before = await compare(engine, account, viewed, max_matches_per_session=5)
    assert before.embedded_chunks == 2 and before.results[0].matched_chunk_count == 2
    async with engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE session_chunks SET redaction_state = 'withheld' WHERE id = ANY(:ids)"),
            {"ids": [uuid.UUID(probe), uuid.UUID(match)]},
        )
    after = await compare(engine, account, viewed, max_matches_per_session=5)
    assert after.embedded_chunks == 1
    [neighbour_result] = after.results
    assert neighbour_result.matched_chunk_count == 1
    shown = {m.document_id for m in neighbour_result.matches} | {
        m.probe.document_id for m in neighbour_result.matches
    }
    assert uuid.UUID(probe) not in shown and uuid.UUID(match) not in shown


async def test_another_accounts_identical_vectors_never_appear(engine: AsyncEngine) -> None:
    world = World()
    mine, _ = world.account("mine")
    theirs, _ = world.account("theirs")
    viewed = world.session(mine)
    world.chunk(viewed, near(2))
    twin = world.session(theirs)
    world.chunk(twin, near(2))  # the very same vector
    await world.write(engine)
    result = await compare(engine, mine, viewed)
    assert result.results == ()
    assert result.degraded.reasons == ("similar_no_comparable_sessions",)


async def test_an_account_at_its_daily_cap_gets_its_list_and_no_spend_is_recorded(
    engine: AsyncEngine,
) -> None:
    world = World()
    account, _ = world.account(daily_cap_usd=0.0)
    viewed, neighbour = world.session(account), world.session(account)
    world.chunk(viewed, near(2))
    world.chunk(neighbour, near(3))
    await world.write(engine)
    result = await compare(engine, account, viewed)
    assert [str(n.session.id) for n in result.results] == [neighbour]
    async with engine.connect() as conn:
        spend = (await conn.execute(sa.text("SELECT count(*) FROM api_usage"))).scalar_one()
    assert spend == 0


async def test_a_comparison_past_its_time_budget_comes_up_short_by_name(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World()
    account, _ = world.account()
    viewed, neighbour = world.session(account), world.session(account)
    world.chunk(viewed, near(2))
    world.chunk(neighbour, near(3))
    await world.write(engine)
    result = await compare(engine, account, viewed, Tuning(comparison_timeout_ms=10_000))
    assert result.results and "similar_comparison_timed_out" not in result.degraded.reasons

    real = comparison.look_up

    async def slow(conn: AsyncConnection, *args: Any, **kwargs: Any) -> Any:
        # The lookup statement's budget is real; a sleeping statement spends it.
        await conn.execute(sa.text("SELECT pg_sleep(2)"))
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison, "look_up", slow)
    timed = await compare(engine, account, viewed, Tuning(comparison_timeout_ms=100))
    assert timed.results == ()
    assert timed.degraded.reasons == ("similar_comparison_timed_out",)
    assert timed.degraded.semantic is False
