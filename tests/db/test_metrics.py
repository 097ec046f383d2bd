"""Prometheus metrics at GET /metrics: durations by route template and GraphQL operation
type, comparisons by lookup path, degraded reasons, pool waits and 503s, statement timeouts,
the indexer's chunks and spend; no account id, session id or content in any label."""

from __future__ import annotations

import uuid

import httpx
import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data.engine import make_engine
from data.errors import StatementTimedOut
from indexer.worker import index_once
from similar_sessions.app import create_app
from tests.db.test_openai_indexing import registry
from tests.support.comparisons import bearer, graphql
from tests.support.fake_openai import fake_openai
from tests.support.indexing import CONFIG, world_with
from tests.support.world import World, blend, direction

SECRET_TEXT = "the customer's passport number is X1234567"
SIMILAR_ROUTE = "/api/v1/runtime-sessions/{runtime_session_id}/similar"


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_metrics_count_requests_comparisons_and_reasons_without_ids(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = World()
    account, key = world.account()
    viewed, other, bare = world.session(account), world.session(account), world.session(account)
    world.chunk(viewed, blend(direction(1), direction(2), 0.2), content=SECRET_TEXT)
    world.chunk(other, blend(direction(1), direction(3), 0.2), content=SECRET_TEXT)
    await world.write(engine)
    before = {
        "rest": sample(
            "similar_sessions_http_request_duration_seconds_count",
            route=SIMILAR_ROUTE,
            method="GET",
            status="200",
        ),
        "query": sample(
            "similar_sessions_graphql_operation_duration_seconds_count", operation_type="query"
        ),
        "exact": sample("similar_sessions_comparisons_total", lookup_path="exact"),
        "none": sample("similar_sessions_comparisons_total", lookup_path="none"),
        "not_embedded": sample(
            "similar_sessions_degraded_reasons_total", reason="similar_session_not_embedded"
        ),
        "unmatched": sample(
            "similar_sessions_http_request_duration_seconds_count",
            route="<unmatched>",
            method="GET",
            status="404",
        ),
    }
    for session in (viewed, bare):
        response = await client.get(
            f"/api/v1/runtime-sessions/{session}/similar", headers=bearer(key)
        )
        assert response.status_code == 200
    await graphql(client, key, "{ runtimeSessions(first: 1) { nodes { id } } }")
    assert (await client.get(f"/no/such/{uuid.uuid4()}")).status_code == 404

    scraped = await client.get("/metrics")
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
    assert {
        "similar_sessions_http_request_duration_seconds",
        "similar_sessions_graphql_operation_duration_seconds",
        "similar_sessions_comparisons",
        "similar_sessions_degraded_reasons",
        "similar_sessions_db_pool_wait_seconds",
        "similar_sessions_unavailable_answers",
        "similar_sessions_db_statement_timeouts",
        "similar_sessions_indexer_chunks",
        "similar_sessions_indexer_spend_usd",
    } <= families.keys()
    after = {
        "rest": sample(
            "similar_sessions_http_request_duration_seconds_count",
            route=SIMILAR_ROUTE,
            method="GET",
            status="200",
        ),
        "query": sample(
            "similar_sessions_graphql_operation_duration_seconds_count", operation_type="query"
        ),
        "exact": sample("similar_sessions_comparisons_total", lookup_path="exact"),
        "none": sample("similar_sessions_comparisons_total", lookup_path="none"),
        "not_embedded": sample(
            "similar_sessions_degraded_reasons_total", reason="similar_session_not_embedded"
        ),
        "unmatched": sample(
            "similar_sessions_http_request_duration_seconds_count",
            route="<unmatched>",
            method="GET",
            status="404",
        ),
    }
    assert {k: after[k] - before[k] for k in before} == {
        "rest": 2,
        "query": 1,
        "exact": 1,
        "none": 1,
        "not_embedded": 1,
        "unmatched": 1,
    }
    assert sample("similar_sessions_db_pool_wait_seconds_count") > 0
    labels = " ".join(
        value for f in families.values() for s in f.samples for value in s.labels.values()
    )
    for secret in (account, viewed, other, bare, key, SECRET_TEXT, "passport"):
        assert secret not in labels


async def test_an_exhausted_pool_counts_a_503_and_its_wait(database_url: str) -> None:
    engine = make_engine(database_url, pool_size=1, pool_timeout_s=1)
    settings = Settings.from_env({})
    app = create_app(settings, engine=engine, run_migrations=False)
    before = sample("similar_sessions_unavailable_answers_total", api="http", cause="pool_timeout")
    waits = sample("similar_sessions_db_pool_wait_seconds_bucket", le="0.5")
    slow = sample("similar_sessions_db_pool_wait_seconds_count")
    try:
        async with (
            engine.connect(),  # holds the only connection
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://testserver"
            ) as http,
        ):
            refused = await http.get(
                f"/api/v1/runtime-sessions/{uuid.uuid4()}/similar", headers=bearer("sk-x")
            )
    finally:
        await engine.dispose()
    assert refused.status_code == 503
    after = sample("similar_sessions_unavailable_answers_total", api="http", cause="pool_timeout")
    assert after - before == 1
    # The refused checkout waited its full second: counted, and not under half a second.
    assert sample("similar_sessions_db_pool_wait_seconds_count") - slow >= 2
    assert sample("similar_sessions_db_pool_wait_seconds_bucket", le="0.5") - waits >= 1


async def test_a_statement_past_its_timeout_is_counted(engine: AsyncEngine) -> None:
    before = sample("similar_sessions_db_statement_timeouts_total")
    with pytest.raises(StatementTimedOut):  # data/'s domain error for it
        async with engine.begin() as conn:
            await conn.execute(sa.text("SET LOCAL statement_timeout = 50"))
            await conn.execute(sa.text("SELECT pg_sleep(2)"))
    assert sample("similar_sessions_db_statement_timeouts_total") - before == 1


async def test_the_indexer_counts_chunks_tokens_and_spend(engine: AsyncEngine) -> None:
    model = ("openai", "text-embedding-3-small")
    labels = {"provider": model[0], "model": model[1]}
    before = {
        "chunks": sample("similar_sessions_indexer_chunks_total", outcome="embedded"),
        "tokens": sample("similar_sessions_indexer_tokens_total", **labels),
        "spend": sample("similar_sessions_indexer_spend_usd_total", **labels),
    }
    await world_with(engine, sessions=2, model="openai:text-embedding-3-small@256")
    with fake_openai() as fake:
        report = await index_once(engine, registry(fake), CONFIG)
    billed = sum(len(t.split()) for r in fake.seen for t in r.body["input"])
    assert sample("similar_sessions_indexer_chunks_total", outcome="embedded") - before[
        "chunks"
    ] == (report.chunks_embedded)
    assert sample("similar_sessions_indexer_tokens_total", **labels) - before["tokens"] == billed
    spend = sample("similar_sessions_indexer_spend_usd_total", **labels) - before["spend"]
    assert spend == pytest.approx(billed * 0.02 / 10**6)


async def test_metrics_can_be_turned_off(engine: AsyncEngine) -> None:
    app = create_app(
        Settings.from_env({"SIMILAR_SESSIONS_METRICS": "false"}),
        engine=engine,
        run_migrations=False,
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        assert (await http.get("/metrics")).status_code == 404
