"""Admission at the edge (issue 56): a GraphQL request is parsed once and priced once, and the
Cost it was priced is the one its budgets read; another edge admits an operation with the
same price, the same rates and the same seats."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncEngine

import schema.documents
from config.settings import Settings
from data.accounts import principal_for_key
from data.secrets import deployment_secret
from resolvers.budgets import Cost, RequestBudget
from resolvers.context import Context
from resolvers.cursors import Cursors
from similar_sessions.admission import Refused, admit_operation, cost_of
from similar_sessions.app import create_app
from tests.support.comparisons import graphql
from tests.support.otlp import Agent, post
from tests.support.world import World, pair_world
from transfer.importing import import_lines

FAILURE_MODES = "query($w: Int!) { failureModes(windowDays: $w) { bound } }"


class Counted:
    """A function of schema/documents.py, its calls counted."""

    def __init__(self, real: Any) -> None:
        self.real, self.calls = real, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.real(*args, **kwargs)


async def test_a_request_is_parsed_once_and_priced_once(
    client: httpx.AsyncClient, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    viewed, key = await pair_world(engine)
    parse, price = Counted(schema.documents.parse), Counted(schema.documents.price)
    monkeypatch.setattr(schema.documents, "parse", parse)
    monkeypatch.setattr(schema.documents, "price", price)
    alias = f"s{uuid.uuid4().hex}"  # a text no other test sent
    similar = "similarSessions { limit }"
    query = f"query($id: UUID!) {{ {alias}: runtimeSession(id: $id) {{ {similar} }} }}"
    body = await graphql(client, key, query, id=viewed)
    assert "errors" not in body and body["data"][alias]["similarSessions"] == {"limit": 5}
    assert (parse.calls, price.calls) == (1, 1)
    again = await graphql(client, key, query, id=viewed)  # the same text: kept, priced again
    assert again == body and (parse.calls, price.calls) == (1, 2)


async def test_another_edge_is_admitted_with_the_price_of_the_graphql_twin(
    engine: AsyncEngine,
) -> None:
    _, key = await pair_world(engine)
    app = create_app(Settings.from_env({}), engine=engine, run_migrations=False)
    principal = await principal_for_key(engine, key)
    assert principal is not None
    body = json.dumps({"query": FAILURE_MODES, "variables": {"w": 7}}).encode()
    scope = {"type": "http", "path": "/graphql", "method": "POST", "query_string": b""}
    twin = cost_of(app.state, scope, body)
    fair = app.state.fair_queue
    async with admit_operation(app.state, principal, key, FAILURE_MODES, {"w": 7}) as cost:
        assert cost == twin
        assert cost.seats == 3 and cost.granted == {("failureModes",)}
        assert fair.free == fair.seats - fair.width(cost.seats)  # its seats held meanwhile
    assert fair.free == fair.seats and fair.flows == {}
    assert cost_of(app.state, {**scope, "path": "/v1/traces"}, b"x" * 10) == Cost(bytes=10)


async def test_another_edge_is_refused_past_the_keys_rate(engine: AsyncEngine) -> None:
    _, key = await pair_world(engine)
    settings = Settings.from_env({"SIMILAR_SESSIONS_RATE_LIMIT": "1/minute"})
    app = create_app(settings, engine=engine, run_migrations=False)
    principal = await principal_for_key(engine, key)
    assert principal is not None
    async with admit_operation(app.state, principal, key, "{ viewer { name } }") as cost:
        assert cost.seats == 1 and cost.granted == frozenset()
    with pytest.raises(Refused) as refused:
        async with admit_operation(app.state, principal, key, "{ viewer { name } }"):
            raise AssertionError("admitted past the key's rate")
    assert refused.value.bound == "rate_limit" and refused.value.response.status_code == 429
    assert app.state.fair_queue.flows == {}


def refused(bound: str) -> float:
    value = REGISTRY.get_sample_value("similar_sessions_refused_requests_total", {"bound": bound})
    return value or 0.0


async def test_a_query_past_a_limit_is_refused_and_counted_once(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Priced at the edge and refused where it runs, a query is counted once by its bound."""
    _, key = await pair_world(engine)
    deep = "{ runtimeSessions { nodes { " + "similarSessions { results { session { " * 4
    deep += "id" + " } } }" * 4 + " } } }"
    for query, bound in (
        ("{ viewer { " + "name " * 1200 + "} }", "tokens"),
        (deep, "depth"),
        ("{" + " ".join(f"a{n}: viewer {{ name }}" for n in range(31)) + "}", "aliases"),
        ("{" + " ".join(["viewer { name }"] * 11) + "}", "selections"),
    ):
        before = refused(bound)
        body = await graphql(client, key, query)
        assert body["errors"][0]["extensions"] == {"code": "LIMIT_EXCEEDED"}, body
        assert refused(bound) == before + 1, bound


async def test_an_operation_admitted_by_another_edge_runs_on_its_one_price(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP edge's way: admitted, then run by the app's schema with the Cost in its context;
    priced once, and its comparisons granted by that Cost."""
    viewed, key = await pair_world(engine)
    app = create_app(Settings.from_env({}), engine=engine, run_migrations=False)
    principal = await principal_for_key(engine, key)
    assert principal is not None
    price = Counted(schema.documents.price)
    monkeypatch.setattr(schema.documents, "price", price)
    query = "query($id: UUID!) { a: runtimeSession(id: $id) { similarSessions { limit } } }"
    async with admit_operation(app.state, principal, key, query, {"id": viewed}) as cost:
        assert cost.granted == {("a", "similarSessions")} and cost.comparisons == 1
        cursors = Cursors(await deployment_secret(engine, "cursor"))
        context = Context.of(app.state.services, principal, cursors, budget=RequestBudget(cost))
        result = await app.state.schema.execute(query, {"id": viewed}, context_value=context)
    assert result.errors is None and result.data == {"a": {"similarSessions": {"limit": 5}}}
    assert price.calls == 1


def waited(edge: str) -> tuple[float, float]:
    """ADMISSION_WAIT's count and sum (seconds) for `edge`."""
    labels = {"edge": edge}
    count = REGISTRY.get_sample_value("similar_sessions_admission_wait_seconds_count", labels)
    total = REGISTRY.get_sample_value("similar_sessions_admission_wait_seconds_sum", labels)
    return count or 0.0, total or 0.0


async def test_an_export_waiting_for_a_seat_is_counted_as_the_ingest_edges_wait(
    engine: AsyncEngine,
) -> None:
    """An export that finds its account's seats taken waits its turn, answered once it has
    one, and its wait is counted by its edge: what tells an operator a slow acknowledgement
    from a slow commit."""
    world = World()
    account, key = world.account("streams", scopes=("ingest_runtime_sessions",))
    async with engine.begin() as conn:
        await import_lines(conn, "accounts", [json.dumps(line) for line in world.lines])
    app = create_app(
        Settings.from_env({"SIMILAR_SESSIONS_SEATS": "1"}), engine=engine, run_migrations=False
    )
    agent = Agent("conv-waits")
    agent.user("My invoice for March was charged twice.")
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://t") as client,
    ):
        before = waited("ingest")
        fair = app.state.fair_queue
        async with fair.seated(account, 1):  # the account's one seat, taken
            export = asyncio.create_task(post(client, key, agent.spans))
            for _ in range(1000):  # until it is authenticated, priced and queued
                if fair.flows[account].waiting:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.2)
            assert not export.done()
        response = await export
    assert response.status_code == 200
    after = waited("ingest")
    assert after[0] == before[0] + 1 and after[1] - before[1] >= 0.2
