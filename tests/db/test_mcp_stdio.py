"""The MCP edge over stdio: `similar-sessions mcp` as a local client starts it (a process of
its own, the key in SIMILAR_SESSIONS_API_KEY), through the SDK's own client."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer import demo
from indexer.commands import load_demo
from indexer.embedders import Registry
from indexer.passes import IndexerConfig
from similar_sessions.mcp_tools import TOOLS
from tests.support.world import World

SESSION = str(demo.session_id(0, 0))


def server(database_url: str, key: str | None) -> StdioServerParameters:
    env = {"DATABASE_URL": database_url, "PATH": "/usr/bin:/bin", "PYTHONPATH": os.getcwd()}
    if key is not None:
        env["SIMILAR_SESSIONS_API_KEY"] = key
    return StdioServerParameters(
        command=sys.executable, args=["-m", "similar_sessions.cli", "mcp"], env=env
    )


async def test_stdio_serves_the_tools_as_the_keys_account(
    engine: AsyncEngine, database_url: str
) -> None:
    await load_demo(engine, IndexerConfig(progress=False), Registry())
    world = World()
    other, _ = world.account("other")
    theirs = world.session(other)
    await world.write(engine)
    async with Client(server(database_url, demo.DEMO_API_KEY)) as client:
        listed = (await client.list_tools()).tools
        similar = await client.call_tool("find_similar_sessions", {"session_id": SESSION})
        failures = await client.call_tool("failure_modes", {"window_days": 365, "limit": 2})
        page = await client.call_tool("get_session", {"session_id": SESSION, "turns": 2})
        missing = await client.call_tool("get_session", {"session_id": theirs})
        bad = await client.call_tool("search_sessions", {"description": ""})
    assert [t.name for t in listed] == [t.name for t in TOOLS]
    assert all(t.output_schema for t in listed)
    assert not similar.is_error and similar.structured_content is not None
    assert similar.structured_content["runtime_session_id"] == SESSION
    assert similar.structured_content["results"], "the demo's session has neighbours"
    assert not failures.is_error and failures.structured_content is not None
    assert len(failures.structured_content["groups"]) <= 2
    assert page.structured_content is not None
    assert [t["ordinal"] for t in page.structured_content["replay_page"]["nodes"]] == [0, 1]
    assert missing.is_error and missing.structured_content is not None
    assert missing.structured_content["error"] == "not_found"
    assert bad.is_error and bad.structured_content is not None
    assert bad.structured_content["argument"] == "description"


@pytest.mark.parametrize("which", ["missing", "unknown", "no scope"])
async def test_stdio_refuses_to_start_without_a_key_that_opens_the_sessions(
    engine: AsyncEngine, database_url: str, which: str
) -> None:
    world = World()
    _, ingest_only = world.account("ingest", scopes=("ingest_runtime_sessions",))
    await world.write(engine)
    key = {"missing": None, "unknown": "sk-nobody", "no scope": ingest_only}[which]
    params = server(database_url, key)
    run = await asyncio.to_thread(
        subprocess.run,
        [params.command, *params.args],
        env=params.env,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    assert run.stderr.startswith("similar-sessions mcp: SIMILAR_SESSIONS_API_KEY: ")
    expected = {
        "missing": "set it to an API key",
        "unknown": "not a valid API key",
        "no scope": "lacks the view_runtime_sessions scope",
    }[which]
    assert expected in run.stderr
