"""How often has this happened: sessions that matched at or above "related", counted by the
week, day or month they started, equal on every path to an independent exact count, and the
bound named when a probe reached it."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import datetime

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import ensure_account_index
from resolvers.arguments import SimilarArgs
from resolvers.comparison.timeline import TimelineBucket, TimelineResult, timelines
from resolvers.tuning import Tuning
from tests.support.comparisons import graphql
from tests.support.crowded import IDENTITY, contract_probes
from tests.support.world import World, blend, direction

RELATED_SCAN = """
SELECT DISTINCT s.id, s.started_at FROM (
  SELECT c.runtime_session_id FROM session_chunks c, session_chunks p
  WHERE p.account_id = :account AND p.id = :probe AND c.account_id = :account
    AND c.runtime_session_id <> p.runtime_session_id
    AND c.embedding_model = p.embedding_model
    AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'
    AND 1 - ((c.embedding::vector(384)) <=> (p.embedding::vector(384))) >= 0.5
  ORDER BY (c.embedding::vector(384)) <=> (p.embedding::vector(384)), c.id LIMIT 200) AS near
JOIN runtime_sessions s ON s.account_id = :account AND s.id = near.runtime_session_id
"""


async def recurring_world(engine: AsyncEngine, repeats: int = 1) -> tuple[str, str, str]:
    """A viewed failure, the same failure again in sessions over several weeks (some close,
    some only loosely like it), and another account's copies of it."""
    world = World()
    account, key = world.account()
    topic = direction(3)
    viewed = world.session(account, "the failure", day=60)
    for i in range(4):
        world.chunk(viewed, blend(topic, direction(10 + i), 0.1), index=i)
    for n, (day, weight) in enumerate([(0, 0.2), (2, 0.3), (9, 0.25), (30, 0.2), (31, 0.8)]):
        for r in range(repeats):
            again = world.session(account, f"again {n}.{r}", day=day)
            for i in range(3):
                world.chunk(
                    again, blend(topic, direction(100 + 30 * n + 3 * r + i), weight), index=i
                )
    elsewhere, _ = world.account("elsewhere")
    copy = world.session(elsewhere, "their failure", day=2)
    world.chunk(copy, blend(topic, direction(999), 0.1))
    await world.write(engine)
    return account, key, viewed


async def exact_counts(
    engine: AsyncEngine, account: str, viewed: str, bucket: str
) -> dict[datetime, int]:
    sessions: dict[uuid.UUID, datetime] = {}
    async with engine.connect() as conn:
        for probe in await contract_probes(conn, viewed):
            rows = await conn.execute(sa.text(RELATED_SCAN), {"account": account, "probe": probe})
            sessions.update({r[0]: r[1] for r in rows})
        starts = [
            (
                await conn.execute(
                    sa.text("SELECT date_trunc(:b, CAST(:t AS timestamptz), 'UTC')"),
                    {"b": bucket, "t": started},
                )
            ).scalar_one()
            for started in sessions.values()
        ]
    return dict(Counter(starts))


async def timeline_of(
    engine: AsyncEngine, account: str, viewed: str, bucket: TimelineBucket, tuning: Tuning
) -> TimelineResult:
    from data.account_snapshot import Snapshots

    async with engine.connect() as conn:
        [result] = await timelines(
            conn,
            uuid.UUID(account),
            [(uuid.UUID(viewed), SimilarArgs(), bucket)],
            tuning,
            Snapshots(),
        )
    assert result is not None
    return result


@pytest.mark.parametrize("path", ["exact", "index", "account_index"])
async def test_sessions_are_counted_by_when_they_started_exactly(
    engine: AsyncEngine, path: str
) -> None:
    account, _, viewed = await recurring_world(engine)
    if path == "account_index":
        async with engine.begin() as conn:
            await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    tuning = Tuning(exact_scan_max_chunks=1000 if path == "exact" else 0)
    for bucket in TimelineBucket:
        result = await timeline_of(engine, account, viewed, bucket, tuning)
        counted = {b.start: b.sessions for b in result.buckets}
        assert counted == await exact_counts(engine, account, viewed, bucket.value)
    weekly = await timeline_of(engine, account, viewed, TimelineBucket.WEEK, tuning)
    assert weekly.sessions == 4, "the loose one (0.8 of another topic) is not counted"
    assert [b.sessions for b in weekly.buckets] == [2, 1, 1]
    assert weekly.degraded.reasons == ()


async def test_a_probe_that_reached_the_bound_is_named(engine: AsyncEngine) -> None:
    account, _, viewed = await recurring_world(engine, repeats=20)  # 300 related chunks
    result = await timeline_of(engine, account, viewed, TimelineBucket.MONTH, Tuning())
    assert result.degraded.reasons == ("similar_timeline_bounded",)
    assert "200 nearest passages" in (result.degraded.detail or "")


async def test_graphql_asks_the_timeline_beside_the_neighbours(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, viewed = await recurring_world(engine)
    body = await graphql(
        client,
        key,
        "query($id: UUID!) { runtimeSession(id: $id) { similarSessions(limit: 2) {"
        " results { title } timeline(bucket: MONTH) { bucket perProbeBound countedFrom"
        " sessions buckets { start sessions } degraded { reasons } } } } }",
        id=viewed,
    )
    timeline = body["data"]["runtimeSession"]["similarSessions"]["timeline"]
    assert timeline["bucket"] == "MONTH" and timeline["perProbeBound"] == 200
    assert timeline["countedFrom"] == 0.5 and timeline["sessions"] == 4
    starts = [datetime.fromisoformat(b["start"]) for b in timeline["buckets"]]
    assert starts == sorted(starts) and all(s.day == 1 for s in starts)
    assert sum(b["sessions"] for b in timeline["buckets"]) == 4
