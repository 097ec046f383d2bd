"""Traces, with the in-memory exporter: a span per HTTP request, GraphQL operation and
resolver, SQL statement, comparison (lookup path and probe count) and indexer batch, each
stamped with the request id; no content and no key in any of them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from indexer.worker import index_once
from similar_sessions.app import create_app
from tests.db.test_openai_indexing import registry
from tests.support.comparisons import bearer
from tests.support.fake_openai import fake_openai, server_error
from tests.support.indexing import CONFIG, world_with
from tests.support.world import World, blend, direction

SECRET_TEXT = "the customer's passport number is X1234567"
KEY = "sk-test-traced-key-0001"
QUERY = (
    "query Similar($id: UUID!) { runtimeSession(id: $id) { similarSessions {"
    " probeChunks results { matches { text } } } } }"
)


@pytest.fixture
async def traced_client(
    engine: AsyncEngine, spans: InMemorySpanExporter
) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings.from_env({"OTEL_TRACES_EXPORTER": "console"})  # the tests' provider
    app = create_app(settings, engine=engine, run_migrations=False)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as http,
    ):
        yield http


async def secret_world(engine: AsyncEngine) -> tuple[str, str]:
    world = World()
    account, _ = world.account(key=KEY)
    viewed, other = world.session(account), world.session(account)
    world.chunk(viewed, blend(direction(1), direction(2), 0.2), content=SECRET_TEXT)
    world.chunk(other, blend(direction(1), direction(3), 0.2), content=SECRET_TEXT)
    await world.write(engine)
    return account, viewed


def of_trace(spans: list[ReadableSpan], root: ReadableSpan) -> list[ReadableSpan]:
    assert root.context is not None
    return [
        s for s in spans if s.context is not None and s.context.trace_id == root.context.trace_id
    ]


def server_span(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    [span] = [s for s in spans if s.name == name and s.parent is None]
    return span


def everything_said(span: ReadableSpan) -> str:
    said: list[Any] = [span.name, *dict(span.attributes or {}).values()]
    for event in span.events:
        said += [event.name, *dict(event.attributes or {}).values()]
    return " ".join(map(str, said))


async def test_a_graphql_request_is_traced_through_resolvers_sql_and_the_comparison(
    traced_client: httpx.AsyncClient, engine: AsyncEngine, spans: InMemorySpanExporter
) -> None:
    account, viewed = await secret_world(engine)
    response = await traced_client.post(
        "/graphql",
        json={"query": QUERY, "variables": {"id": viewed}},
        headers={**bearer(KEY), "X-Request-ID": "req-graphql-1"},
    )
    assert response.headers["x-request-id"] == "req-graphql-1"
    probes = response.json()["data"]["runtimeSession"]["similarSessions"]["probeChunks"]
    assert probes == 1
    finished = list(spans.get_finished_spans())
    root = server_span(finished, "POST /graphql")
    assert root.attributes is not None and root.attributes["http.route"] == "/graphql"
    mine = of_trace(finished, root)
    names = {s.name for s in mine}
    assert {"GraphQL Query: Similar", "GraphQL Parsing", "GraphQL Validation"} <= names
    assert {"GraphQL Resolving: runtimeSession", "GraphQL Resolving: similarSessions"} <= names
    statements = [s for s in mine if (s.attributes or {}).get("db.system") == "postgresql"]
    assert len(statements) >= 3  # the key, the session, the comparison's own
    [comparison] = [s for s in mine if s.name == "similar_sessions.comparison"]
    assert comparison.attributes is not None
    assert comparison.attributes["similar_sessions.lookup_path"] == "exact"
    assert comparison.attributes["similar_sessions.probe_count"] == probes
    for span in mine:  # every span of the request, down to SQL, names its request
        assert (span.attributes or {}).get("similar_sessions.request_id") == "req-graphql-1", span
    assert SECRET_TEXT in response.text, "the answer itself does carry the text"
    for span in finished:
        said = everything_said(span)
        for secret in (SECRET_TEXT, "passport", KEY, account):
            assert secret not in said, (span.name, secret)


async def test_each_phase_of_a_comparison_is_a_span_under_the_batch_s(
    traced_client: httpx.AsyncClient, engine: AsyncEngine, spans: InMemorySpanExporter
) -> None:
    """The lookups (with the plan they followed), the ranking and the details are spans of
    the batch's `similar_sessions.compare`; a batch that needed no retry has no such span."""
    _, viewed = await secret_world(engine)
    response = await traced_client.post(
        "/graphql", json={"query": QUERY, "variables": {"id": viewed}}, headers=bearer(KEY)
    )
    assert response.status_code == 200
    finished = list(spans.get_finished_spans())
    mine = of_trace(finished, server_span(finished, "POST /graphql"))
    [batch] = [s for s in mine if s.name == "similar_sessions.compare"]
    assert batch.context is not None
    phases = {
        s.name: s
        for s in mine
        if s.name.startswith("similar_sessions.")
        and s.parent is not None
        and s.parent.span_id == batch.context.span_id
    }
    assert {"similar_sessions.lookups", "similar_sessions.ranking"} <= set(phases)
    assert "similar_sessions.details" in phases
    assert "similar_sessions.widened" not in phases and "similar_sessions.check" not in phases
    looked = dict(phases["similar_sessions.lookups"].attributes or {})
    assert looked["similar_sessions.plan.caller"] == "comparison"
    assert looked["similar_sessions.plan.routed_exact"] is False
    assert looked["similar_sessions.plan.ef_search"] == Settings.from_env({}).hnsw_ef_search
    # every phase lies within the batch's span
    for span in phases.values():
        assert span.start_time is not None and batch.start_time is not None
        assert span.end_time is not None and batch.end_time is not None
        assert batch.start_time <= span.start_time <= span.end_time <= batch.end_time


async def test_a_rest_request_is_named_by_its_route_template_and_gets_a_request_id(
    traced_client: httpx.AsyncClient, engine: AsyncEngine, spans: InMemorySpanExporter
) -> None:
    _, viewed = await secret_world(engine)
    response = await traced_client.get(
        f"/api/v1/runtime-sessions/{viewed}/similar",
        headers={**bearer(KEY), "X-Request-ID": "no spaces\nor newlines, please"},
    )
    assert response.status_code == 200
    generated = response.headers["x-request-id"]
    assert re.fullmatch(r"[0-9a-f]{32}", generated)
    finished = list(spans.get_finished_spans())
    root = server_span(finished, "GET /api/v1/runtime-sessions/{runtime_session_id}/similar")
    mine = of_trace(finished, root)
    assert any(s.name == "similar_sessions.comparison" for s in mine)
    assert all((s.attributes or {}).get("similar_sessions.request_id") == generated for s in mine)
    assert all(SECRET_TEXT not in everything_said(s) for s in finished)


async def test_each_indexer_batch_is_a_span(
    engine: AsyncEngine, spans: InMemorySpanExporter
) -> None:
    await world_with(engine, sessions=2, model="openai:text-embedding-3-small@256")
    with fake_openai() as fake:
        report = await index_once(engine, registry(fake), CONFIG)
        fake.script.append(server_error(500))
    batches = [s for s in spans.get_finished_spans() if s.name == "indexer.batch"]
    embedded = [(s.attributes or {}).get("similar_sessions.chunks_embedded", 0) for s in batches]
    assert sum(embedded) == report.chunks_embedded > 0
    assert all(
        (s.attributes or {})["similar_sessions.model_identity"]
        == "openai:text-embedding-3-small@256"
        for s in batches
    )
    tokens = sum(int((s.attributes or {}).get("similar_sessions.tokens", 0)) for s in batches)
    assert tokens == sum(len(t.split()) for r in fake.seen for t in r.body["input"])


async def test_a_failed_batch_span_carries_the_error_and_no_text(
    engine: AsyncEngine, spans: InMemorySpanExporter
) -> None:
    await world_with(engine, sessions=1, model="openai:text-embedding-3-small@256")
    with fake_openai() as fake:
        fake.script.append(server_error(500))
        report = await index_once(engine, registry(fake), CONFIG)
    assert report.batches_failed == 1
    [failed] = [s for s in spans.get_finished_spans() if s.status.status_code == StatusCode.ERROR]
    assert failed.name == "indexer.batch"
    assert (failed.attributes or {})["similar_sessions.error"] == "InternalServerError HTTP 500"
