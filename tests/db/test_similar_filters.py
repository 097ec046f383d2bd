"""Neighbour filters (status, source type) apply inside each probe's lookup, on every path,
and equal an exact scan with the same filter: a failed session beyond the 25 nearest
unfiltered passages is still found."""

from __future__ import annotations

import uuid

import httpx
import numpy as np
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_indexes import ensure_account_index
from resolvers.rules import ranking
from resolvers.tuning import Tuning
from tests.support.comparisons import bearer, compare, graphql
from tests.support.crowded import IDENTITY, contract_probes
from tests.support.world import World, blend, direction

FILTERED_SCAN = """
SELECT c.id, c.runtime_session_id, 1 - ((c.embedding::vector(384)) <=> (p.embedding::vector(384)))
FROM session_chunks c
JOIN runtime_sessions s ON s.account_id = c.account_id AND s.id = c.runtime_session_id
JOIN session_chunks p ON p.account_id = c.account_id AND p.id = :probe
WHERE c.account_id = :account AND c.runtime_session_id <> p.runtime_session_id
  AND c.embedding_model = 'local:hash-384@384'
  AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'
  AND s.status = ANY(:statuses) AND s.source_type = ANY(:types)
  AND 1 - ((c.embedding::vector(384)) <=> (p.embedding::vector(384))) >= 0.35
ORDER BY (c.embedding::vector(384)) <=> (p.embedding::vector(384)), c.id
LIMIT 25
"""


async def failures_world(engine: AsyncEngine) -> tuple[str, str, str, dict[str, str]]:
    """A viewed session; 12 completed sessions of its topic, nearer than anything else, and
    (further away) failed sessions of two source types, plus other accounts' failures."""
    world = World()
    account, key = world.account()
    topic = direction(7)
    viewed = world.session(account, "viewed")
    for i in range(9):
        world.chunk(viewed, blend(topic, direction(100 + i), 0.05), index=i)
    for s in range(12):
        done = world.session(account, f"completed {s}")
        for i in range(6):
            world.chunk(done, blend(topic, direction(200 + 10 * s + i), 0.15), index=i)
    failed = {
        "agent": world.session(account, "failed agent", status="failed"),
        "cron": world.session(account, "failed cron", status="failed", source_type="cron"),
        "far": world.session(account, "failed far", status="failed"),
    }
    rng = np.random.default_rng(5)
    for name, sid in failed.items():
        weight = 0.9 if name == "far" else rng.uniform(0.35, 0.45)
        for i in range(3):
            world.chunk(sid, blend(topic, direction(500 + 10 * len(name) + i), weight), index=i)
    other, _ = world.account("another account")
    foreign = world.session(other, "foreign failure", status="failed")
    world.chunk(foreign, blend(topic, direction(900), 0.3))
    await world.write(engine)
    return account, key, viewed, failed


async def exact_neighbours(
    engine: AsyncEngine, account: str, viewed: str, statuses: list[str], types: list[str]
) -> list[tuple[uuid.UUID, float]]:
    """The filtered neighbours by an independent exact scan of every probe."""
    hits = []
    async with engine.connect() as conn:
        probes = await contract_probes(conn, viewed)
        for n, probe in enumerate(probes):
            rows = await conn.execute(
                sa.text(FILTERED_SCAN),
                {"probe": probe, "account": account, "statuses": statuses, "types": types},
            )
            hits += [ranking.Hit(n, r[0], r[1], float(r[2])) for r in rows]
    return [(n.session_id, round(n.score, 9)) for n in ranking.rank_neighbours(hits, 2)]


@pytest.mark.parametrize("path", ["exact", "index", "account_index"])
async def test_a_filter_finds_failures_beyond_the_unfiltered_nearest_on_every_path(
    engine: AsyncEngine, path: str
) -> None:
    account, _, viewed, failed = await failures_world(engine)
    if path == "account_index":
        async with engine.begin() as conn:
            await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    tuning = Tuning(exact_scan_max_chunks=10_000 if path == "exact" else 0)
    plain = await compare(engine, account, viewed, tuning, limit=20)
    assert not {str(n.session.id) for n in plain.results} & set(failed.values())
    served = await compare(engine, account, viewed, tuning, limit=20, statuses=("failed",))
    assert served.lookup_path == path
    want = await exact_neighbours(engine, account, viewed, ["failed"], ["agent", "cron"])
    assert [(n.session.id, round(n.score, 9)) for n in served.results] == want
    assert {str(sid) for sid, _ in want} == {failed["agent"], failed["cron"]}
    assert served.degraded.reasons[-1] == "similar_filter_applied"
    both = await compare(
        engine, account, viewed, tuning, statuses=("failed",), source_types=("cron",)
    )
    assert [str(n.session.id) for n in both.results] == [failed["cron"]]


async def test_a_filter_nothing_matches_says_so(engine: AsyncEngine) -> None:
    account, _, viewed, _ = await failures_world(engine)
    none = await compare(engine, account, viewed, statuses=("cancelled",))
    assert none.results == ()
    assert none.degraded.reasons == (
        "similar_session_sampled",
        "similar_no_comparable_sessions",
        "similar_filter_applied",
    )


async def test_rest_and_graphql_take_the_filters(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, viewed, failed = await failures_world(engine)
    rest = await client.get(
        f"/api/v1/runtime-sessions/{viewed}/similar",
        params=[("status", "failed"), ("status", "timed_out"), ("source_type", "cron")],
        headers=bearer(key),
    )
    assert rest.status_code == 200
    assert [r["runtime_session_id"] for r in rest.json()["results"]] == [failed["cron"]]
    body = await graphql(
        client,
        key,
        'query($id: UUID!) { runtimeSession(id: $id) { similarSessions(status: ["failed"],'
        ' sourceType: ["agent"]) { results { runtimeSessionId } degraded { reasons } } } }',
        id=viewed,
    )
    similar = body["data"]["runtimeSession"]["similarSessions"]
    assert [r["runtimeSessionId"] for r in similar["results"]] == [failed["agent"]]
    assert similar["degraded"]["reasons"][-1] == "SIMILAR_FILTER_APPLIED"
    bad = await client.get(
        f"/api/v1/runtime-sessions/{viewed}/similar",
        params={"status": "x" * 300},
        headers=bearer(key),
    )
    assert bad.status_code == 422 and bad.json()["parameter"] == "status"
