"""The MCP edge through the SDK's own client, over streamable HTTP against the served app:
its tools and their schemas, each tool's structured content equal to its GraphQL twin's
answer on the demo, and the API's doors (keys, scope, isolation, rates, bad arguments)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from uuid import UUID

import httpx
import httpx2
import jsonschema
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette

from config.settings import Settings
from indexer import demo
from indexer.commands import load_demo
from indexer.embedders import Registry
from indexer.passes import IndexerConfig
from similar_sessions.app import create_app
from similar_sessions.mcp_tools import TOOLS, twin
from tests.support.comparisons import bearer
from tests.support.world import World
from transfer.formats.spans import session_id as conversation_session

KEY = demo.DEMO_API_KEY
SESSION = str(demo.session_id(0, 0))
# GraphQL spells an enum by its name, JSON by its value (as REST does); the time a request
# took differs between any two requests.
ENUMS = {"band", "reasons", "path", "leg", "bucket"}
TIMES = {"elapsed_ms"}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("find_similar_sessions", {"session_id": SESSION}),
    ("find_similar_sessions", {"session_id": SESSION, "limit": 3, "include_match_text": False}),
    ("search_sessions", {"description": "change my flight reservation", "limit": 4}),
    ("failure_modes", {"window_days": 365, "status": [], "limit": 3}),
    ("get_session", {"session_id": SESSION, "turns": 7}),
]


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def as_json(value: Any, key: str = "") -> Any:
    """A GraphQL answer as the MCP edge spells it: snake_case keys, enums by value."""
    if isinstance(value, dict):
        return {snake(k): as_json(v, snake(k)) for k, v in value.items() if snake(k) not in TIMES}
    if isinstance(value, list):
        return [as_json(v, key) for v in value]
    if key in ENUMS and isinstance(value, str):
        return value.lower()
    return value


def timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in TIMES}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


@asynccontextmanager
async def served(app: Starlette) -> AsyncIterator[None]:
    async with app.router.lifespan_context(app):
        yield


def mcp_client(app: Starlette, key: str | None, statuses: list[int] | None = None) -> Client:
    """The SDK's client over streamable HTTP to the app (`statuses`: each answer's)."""
    headers = {} if key is None else bearer(key)

    async def seen(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    http = httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app),
        base_url="http://testserver",
        headers=headers,
        event_hooks={"response": [seen]},
    )
    return Client(streamable_http_client("http://testserver/mcp", http_client=http))


async def graphql_answer(app: Starlette, tool: str, arguments: dict[str, Any]) -> Any:
    document, variables = twin(tool, arguments)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        response = await http.post(
            "/graphql", json={"query": document, "variables": variables}, headers=bearer(KEY)
        )
    body = response.json()
    assert "errors" not in body, body
    data = body["data"]
    if tool == "find_similar_sessions":
        return as_json(data["runtimeSession"]["similarSessions"])
    if tool == "search_sessions":
        return as_json(data["searchSessions"])
    if tool == "failure_modes":
        return as_json(data["failureModes"])
    return as_json(data["runtimeSession"])


@pytest.fixture
async def demo_app(engine: AsyncEngine, settings: Settings) -> Starlette:
    await load_demo(engine, IndexerConfig(progress=False), Registry())
    # Each test serves it (reads the cursor secret at start-up as a server does).
    return create_app(settings, engine=engine, run_migrations=False)


async def test_tools_are_listed_with_their_input_and_output_schemas(demo_app: Starlette) -> None:
    async with served(demo_app), mcp_client(demo_app, KEY) as client:
        listed = (await client.list_tools()).tools
        templates = (await client.list_resource_templates()).resource_templates
    assert [t.name for t in listed] == [t.name for t in TOOLS]
    for tool in listed:
        schema = tool.input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is False
        assert all(p["description"] for p in schema["properties"].values()), tool.name
        assert tool.output_schema is not None
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
    inputs = {t.name: set(t.input_schema["properties"]) for t in listed}
    assert inputs == {
        "find_similar_sessions": {
            "session_id",
            "window_days",
            "limit",
            "status",
            "include_match_text",
        },
        "search_sessions": {"description", "window_days", "limit", "status"},
        "failure_modes": {"window_days", "status", "limit", "cursor"},
        "get_session": {"session_id", "from_turn", "turns"},
    }
    similar = next(t for t in listed if t.name == "find_similar_sessions").output_schema
    assert similar is not None
    neighbour = similar["properties"]["results"]["items"]["properties"]
    assert neighbour["band"]["enum"] == ["close", "related", "loose"]
    assert "session_status" in neighbour and "session" not in neighbour
    assert [t.uri_template for t in templates] == ["session://{id}"]


@pytest.mark.parametrize(("tool", "arguments"), CALLS)
async def test_each_tool_answers_what_its_graphql_twin_answers(
    demo_app: Starlette, tool: str, arguments: dict[str, Any]
) -> None:
    async with served(demo_app), mcp_client(demo_app, KEY) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    structured = result.structured_content  # checked by the client against the output schema
    assert isinstance(structured, dict)
    assert timeless(structured) == await graphql_answer(demo_app, tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    if tool in ("find_similar_sessions", "search_sessions"):
        first = structured["results"][0]
        assert first["band"] in text and first["title"] in text
        assert f"ended {first['session_status']}" in text
    if tool == "find_similar_sessions" and arguments.get("include_match_text", True):
        terms = structured["results"][0]["matches"][0]["shared_terms"]
        assert not terms or f"shares {terms[0]}" in text


async def test_a_session_is_found_by_id_and_read_as_a_resource_page_by_page(
    demo_app: Starlette,
) -> None:
    async with served(demo_app), mcp_client(demo_app, KEY) as client:
        first = await client.call_tool("get_session", {"session_id": SESSION, "turns": 3})
        later = await client.call_tool(
            "get_session", {"session_id": SESSION, "from_turn": 3, "turns": 2}
        )
        resource = await client.read_resource(f"session://{SESSION}")
    pages = [first.structured_content, later.structured_content]
    ordinals = [[t["ordinal"] for t in p["replay_page"]["nodes"]] for p in pages]  # type: ignore[index]
    assert ordinals == [[0, 1, 2], [3, 4]]
    assert "from_turn 3" in first.content[0].text  # type: ignore[union-attr]
    read = resource.contents[0]
    assert read.uri == f"session://{SESSION}" and read.mime_type == "application/json"
    assert f'"id": "{SESSION}"' in read.text  # type: ignore[union-attr]


BAD = [
    ("find_similar_sessions", {"session_id": SESSION, "limit": 0}, "limit"),
    ("find_similar_sessions", {"session_id": SESSION, "window_days": 400}, "window_days"),
    ("find_similar_sessions", {"session_id": SESSION, "limit": "5"}, "limit"),
    ("find_similar_sessions", {"session_id": SESSION, "colour": "red"}, "colour"),
    ("find_similar_sessions", {}, "session_id"),
    ("search_sessions", {"description": "   "}, "description"),
    ("failure_modes", {"window_days": 0}, "window_days"),
    ("failure_modes", {"window_days": 7, "cursor": "not-ours"}, "cursor"),
    ("get_session", {"session_id": SESSION, "turns": 501}, "turns"),
    ("get_session", {"session_id": SESSION, "from_turn": -1}, "from_turn"),
]


@pytest.mark.parametrize(("tool", "arguments", "named"), BAD)
async def test_a_bad_argument_is_a_tool_error_naming_it(
    demo_app: Starlette, tool: str, arguments: dict[str, Any], named: str
) -> None:
    async with served(demo_app), mcp_client(demo_app, KEY) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert result.structured_content is not None
    assert result.structured_content["error"] == "invalid_parameter"
    assert result.structured_content["argument"] == named
    assert result.content[0].text.startswith(f"invalid_parameter: {named}: ")  # type: ignore[union-attr]


async def test_another_accounts_session_looks_like_a_missing_one(
    engine: AsyncEngine, demo_app: Starlette
) -> None:
    world = World()
    other, _ = world.account("other")
    theirs = world.session(other)
    await world.write(engine)
    async with served(demo_app), mcp_client(demo_app, KEY) as client:
        answers = [
            await client.call_tool(tool, {"session_id": session})
            for tool in ("find_similar_sessions", "get_session")
            for session in (theirs, "00000000-0000-4000-8000-000000000000")
        ]
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"session://{theirs}")
    assert {a.content[0].text.replace(theirs, "X") for a in answers} == {  # type: ignore[union-attr]
        "not_found: session_id: no session of this account has this id or conversation id"
    }
    assert "not_found" in str(refused.value)


async def test_a_missing_key_or_a_key_without_the_scope_is_refused(
    engine: AsyncEngine, demo_app: Starlette
) -> None:
    world = World()
    _, ingest_only = world.account("ingest", scopes=("ingest_runtime_sessions",))
    await world.write(engine)
    async with served(demo_app):
        for key, status in ((None, 401), ("sk-nobody", 401), (ingest_only, 403)):
            statuses: list[int] = []
            with pytest.raises(Exception, match="unhandled errors") as refused:
                async with mcp_client(demo_app, key, statuses) as client:
                    await client.list_tools()
            assert "Server returned an error response" in repr(refused.value)
            assert statuses and set(statuses) == {status}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=demo_app), base_url="http://testserver"
    ) as http:
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        assert (await http.post("/mcp", json=initialize)).status_code == 401
        forbidden = await http.post("/mcp", json=initialize, headers=bearer(ingest_only))
        assert forbidden.status_code == 403
        assert "view_runtime_sessions" in forbidden.json()["detail"]


async def test_a_call_past_the_keys_rate_is_refused_naming_the_rule(engine: AsyncEngine) -> None:
    await load_demo(engine, IndexerConfig(progress=False), Registry())
    settings = Settings.from_env({"SIMILAR_SESSIONS_RATE_LIMIT": "2/minute"})
    app = create_app(settings, engine=engine, run_migrations=False)
    async with served(app), mcp_client(app, KEY) as client:
        for _ in range(2):
            assert not (await client.call_tool("get_session", {"session_id": SESSION})).is_error
        refused = await client.call_tool("failure_modes", {"window_days": 30})
    assert refused.is_error and refused.structured_content is not None
    assert refused.structured_content["error"] == "rate_limited"
    assert "SIMILAR_SESSIONS_RATE_LIMIT" in refused.structured_content["detail"]
    assert 1 <= refused.structured_content["retry_after_s"] <= 60


async def test_a_session_is_found_by_the_conversation_id_it_was_ingested_under(
    engine: AsyncEngine, demo_app: Starlette
) -> None:
    world = World()
    account, key = world.account("agents")
    ingested = world.session(account, "an ingested run", source_type="otlp", source_id="conv-7")
    world.lines[-1]["id"] = ingested = str(conversation_session(UUID(account), "conv-7"))
    await world.write(engine)
    async with served(demo_app):
        async with mcp_client(demo_app, key) as client:
            mine = await client.call_tool("get_session", {"session_id": "conv-7"})
            similar = await client.call_tool("find_similar_sessions", {"session_id": "conv-7"})
        async with mcp_client(demo_app, KEY) as client:  # another account's conversation
            theirs = await client.call_tool("get_session", {"session_id": "conv-7"})
    assert mine.structured_content is not None and similar.structured_content is not None
    assert mine.structured_content["id"] == ingested
    assert similar.structured_content["runtime_session_id"] == ingested
    assert theirs.is_error and theirs.structured_content is not None
    assert theirs.structured_content["error"] == "not_found"
