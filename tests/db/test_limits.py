"""GraphQL limits and request size: each refusal names the limit and its value."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
import strawberry.schema.schema as strawberry_schema
from graphql import get_introspection_query
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from resolvers.budgets import MAX_SIMILAR_PER_REQUEST
from schema.query import MAX_ALIASES, MAX_QUERY_DEPTH, MAX_QUERY_TOKENS
from similar_sessions.app import create_app
from similar_sessions.body_limit import MAX_BODY_BYTES
from tests.support.comparisons import bearer, graphql, topic_world
from tests.support.world import World


async def test_a_query_deeper_than_the_limit_is_refused(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_world(engine, sessions=1)
    inner = "title"
    for _ in range(MAX_QUERY_DEPTH):
        inner = f"similarSessions {{ results {{ session {{ {inner} }} }} }}"
    body = await graphql(client, key, f"{{ runtimeSessions {{ nodes {{ {inner} }} }} }}")
    assert "data" not in body or body["data"] is None
    assert f"at most {MAX_QUERY_DEPTH} (MAX_QUERY_DEPTH)" in body["errors"][0]["message"]


async def test_more_aliases_than_the_limit_are_refused(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_world(engine, sessions=1)
    fields = " ".join(f"a{i}: viewer {{ name }}" for i in range(MAX_ALIASES + 1))
    body = await graphql(client, key, f"{{ {fields} }}")
    assert f"at most {MAX_ALIASES} (MAX_ALIASES)" in body["errors"][0]["message"]


async def test_a_query_of_more_tokens_than_the_limit_is_refused_before_validation(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_world(engine, sessions=1)
    # 3,700 fields in 18 KB: under the body limit; seconds of validation when parsed whole.
    body = await graphql(client, key, "{ viewer { " + "name " * 3700 + "} }")
    assert "data" not in body or body["data"] is None
    [error] = body["errors"]
    assert f"more than {MAX_QUERY_TOKENS} tokens" in error["message"]
    # What clients send stays well inside it: GraphiQL's full introspection query.
    introspection = get_introspection_query(
        descriptions=True,
        specified_by_url=True,
        directive_is_repeatable=True,
        schema_description=True,
        input_value_deprecation=True,
    )
    assert "errors" not in await graphql(client, key, introspection)


async def test_similar_sessions_of_too_many_sessions_in_one_query_is_refused(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_world(engine, sessions=MAX_SIMILAR_PER_REQUEST + 1)
    query = "query($n: Int!) { runtimeSessions(first: $n) { nodes { similarSessions { limit } } } }"
    within = await graphql(client, key, query, n=MAX_SIMILAR_PER_REQUEST)
    assert "errors" not in within
    beyond = await graphql(client, key, query, n=MAX_SIMILAR_PER_REQUEST + 1)
    codes = {e["extensions"]["code"] for e in beyond["errors"]}
    assert codes == {"LIMIT_EXCEEDED"}
    assert f"at most {MAX_SIMILAR_PER_REQUEST}" in beyond["errors"][0]["message"]


async def test_a_body_over_the_limit_is_answered_413_unread(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_world(engine, sessions=1)
    padding = " " * (MAX_BODY_BYTES + 1)
    response = await client.post(
        "/graphql",
        content=b'{"query": "{ viewer { name } }' + padding.encode() + b'"}',
        headers={**bearer(key), "content-type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json()["limit"] == MAX_BODY_BYTES

    async def chunked() -> object:
        yield b'{"query": "{ viewer { name } }"'
        yield padding.encode() + b"}"

    streamed = await client.post(
        "/graphql", content=chunked(), headers={**bearer(key), "content-type": "application/json"}
    )
    assert streamed.status_code == 413


async def test_introspection_and_graphiql_can_be_turned_off(engine: AsyncEngine) -> None:
    _, key, _ = await topic_world(engine, sessions=1)
    settings = Settings.from_env(
        {"SIMILAR_SESSIONS_INTROSPECTION": "off", "SIMILAR_SESSIONS_GRAPHIQL": "off"}
    )
    app = create_app(settings, engine=engine, run_migrations=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        body = await graphql(c, key, "{ __schema { queryType { name } } }")
        assert "introspection has been disabled" in body["errors"][0]["message"].lower()
        page = await c.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code in (401, 404)
        assert "graphiql" not in page.text.lower()
    on = create_app(Settings.from_env({}), engine=engine, run_migrations=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=on), base_url="http://t") as c:
        page = await c.get("/graphql", headers={"accept": "text/html"})
        assert page.status_code == 200 and "graphiql" in page.text.lower()


async def test_the_comparison_budget_over_aliases_refuses_only_the_fields_beyond_it(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_world(engine, sessions=30)
    page = "nodes { id similarSessions { limit } }"
    query = (
        f"{{ a: runtimeSessions(first: 30) {{ {page} }}"
        f" b: runtimeSessions(first: 30) {{ {page} }} }}"
    )
    body = await graphql(client, key, query)
    a, b = body["data"]["a"]["nodes"], body["data"]["b"]["nodes"]
    assert len(a) == len(b) == 30
    assert all(node["similarSessions"] == {"limit": 5} for node in a)
    assert all(node["similarSessions"] is None for node in b)
    assert len(body["errors"]) == 30
    for error in body["errors"]:
        assert error["path"][0] == "b" and error["path"][-1] == "similarSessions"
        assert error["extensions"] == {"code": "LIMIT_EXCEEDED", "limit": MAX_SIMILAR_PER_REQUEST}


async def test_the_comparison_budget_is_decided_from_the_query_before_anything_runs(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_world(engine, sessions=3)
    # Three sessions only, but the query may ask for 20 + 20 + 20 comparisons: the field
    # that would cross the budget is refused whatever the data, the others answer.
    page = "nodes { similarSessions { limit } }"
    query = (
        f"{{ a: runtimeSessions {{ {page} }} b: runtimeSessions {{ {page} }}"
        f" c: runtimeSessions(first: 10) {{ {page} }} d: runtimeSessions {{ {page} }} }}"
    )
    body = await graphql(client, key, query)
    data = body["data"]
    for alias in "abc":
        assert [n["similarSessions"] for n in data[alias]["nodes"]] == [{"limit": 5}] * 3
    assert [n["similarSessions"] for n in data["d"]["nodes"]] == [None] * 3
    assert {(e["path"][0], e["path"][-1]) for e in body["errors"]} == {("d", "similarSessions")}


async def test_replay_content_is_bounded_per_request_across_aliases(engine: AsyncEngine) -> None:
    world = World()
    account, key = world.account()
    session = world.session(account)
    for ordinal in range(4):
        world.activity(session, ordinal, str(ordinal) * 3_000)  # 12,000 characters
    await world.write(engine)
    settings = Settings.from_env({"SIMILAR_SESSIONS_REPLAY_CONTENT_CHARS": "20000"})
    app = create_app(settings, engine=engine, run_migrations=False)
    fields = " ".join(
        f"a{i}: runtimeSession(id: $id) {{ replay {{ content contentTruncated }} }}"
        for i in range(10)
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        body = await graphql(c, key, f"query($id: UUID!) {{ {fields} }}", id=session)
    turns = [turn for alias in body["data"].values() for turn in alias["replay"]]
    assert len(turns) == 40
    assert sum(len(turn["content"]) for turn in turns) == 20_000  # not 120,000
    whole = [t for t in turns if not t["contentTruncated"]]
    assert len(whole) == 6 and all(len(t["content"]) == 3_000 for t in whole)
    cut = [t for t in turns if t["contentTruncated"]]
    assert [len(t["content"]) for t in cut if t["content"]] == [2_000]
    # The next request has its own budget.
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        one = await graphql(
            c,
            key,
            "query($id: UUID!) { runtimeSession(id: $id) { replay { content contentTruncated } } }",
            id=session,
        )
    assert [t["contentTruncated"] for t in one["data"]["runtimeSession"]["replay"]] == [False] * 4


async def test_a_query_sent_again_is_not_validated_again(
    client: httpx.AsyncClient, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parse and validation are kept per query text (1.6 ms of a request); the limits still
    refuse a query each time it is sent."""
    _, key, _ = await topic_world(engine, sessions=1)
    validations: list[int] = []
    real = strawberry_schema.validate

    def counted(*args: Any, **kwargs: Any) -> Any:
        validations.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(strawberry_schema, "validate", counted)
    query = f"{{ v{uuid.uuid4().hex}: viewer {{ name }} }}"  # a text no other test sent
    for _ in range(3):
        body = await graphql(client, key, query)
        assert "errors" not in body and body["data"]
    assert len(validations) == 1
    fields = " ".join(f"a{i}: viewer {{ name }}" for i in range(MAX_ALIASES + 1))
    for _ in range(2):
        body = await graphql(client, key, f"{{ {fields} }}")
        assert f"at most {MAX_ALIASES} (MAX_ALIASES)" in body["errors"][0]["message"]
