"""An MCP tool call beside its GraphQL twin on the demo (issue 57): each tool called through
the official SDK's client over streamable HTTP, and its twin query posted to /graphql, in
turns in one run, both against this checkout's app in this process (ASGI, no network), the
per-key and per-account rates off (a bench is not a client to be rated).

    python -m bench.mcp [--rounds 30]

Prints each call's p50 / p95 client-side (what an agent waits: the SDK's own work, its
parsing and its check of the output schema, included) beside the twin's, and their ratio
(target: within 1.2x); writes bench/results/mcp-demo.md. The demo (lexical model) is loaded
into its own database `ss_mcp_demo` (kept: a later run reuses it)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from typing import Any

import asyncpg
import httpx
import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from bench.common.databases import administer, with_database
from bench.common.paths import result
from bench.common.timing import p50, pct
from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer import demo
from indexer.commands import config_from, load_demo
from indexer.embedders import Registry
from similar_sessions.app import create_app
from similar_sessions.mcp_tools import twin

DATABASE = "ss_mcp_demo"
OUT = result("mcp", "demo")
UNRATED = {"SIMILAR_SESSIONS_RATE_LIMIT": "off", "SIMILAR_SESSIONS_ACCOUNT_RATE_LIMIT": "off"}
AUTH = {"Authorization": f"Bearer {demo.DEMO_API_KEY}"}
SESSION = str(demo.session_id(3, 0))
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("find_similar_sessions", {"session_id": SESSION}),
    ("find_similar_sessions", {"session_id": SESSION, "include_match_text": False}),
    ("search_sessions", {"description": "cancel my reservation and refund it"}),
    ("failure_modes", {"window_days": 365}),
    ("get_session", {"session_id": SESSION, "turns": 50}),
]


async def graphql_call(http: httpx.AsyncClient, tool: str, arguments: dict[str, Any]) -> float:
    document, variables = twin(tool, arguments)
    started = time.perf_counter()
    response = await http.post("/graphql", json={"query": document, "variables": variables})
    ms = (time.perf_counter() - started) * 1000
    assert response.status_code == 200 and "errors" not in response.json(), response.text
    return ms


async def mcp_call(client: Client, tool: str, arguments: dict[str, Any]) -> float:
    started = time.perf_counter()
    answer = await client.call_tool(tool, arguments)
    ms = (time.perf_counter() - started) * 1000
    assert not answer.is_error, answer.content
    return ms


async def measure(app: Starlette, rounds: int) -> dict[int, tuple[list[float], list[float]]]:
    """Each call's times, GraphQL's and MCP's, taken in turns (which goes first alternates)."""
    times: dict[int, tuple[list[float], list[float]]] = {i: ([], []) for i in range(len(CALLS))}
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://bench", headers=AUTH
    )
    transport = httpx2.ASGITransport(app=app)
    mcp_http = httpx2.AsyncClient(transport=transport, base_url="http://bench", headers=AUTH)
    async with http, Client(streamable_http_client("http://bench/mcp", http_client=mcp_http)) as c:
        for round_ in range(-3, rounds):  # three untimed rounds: plans, caches and models warm
            for i, (tool, arguments) in enumerate(CALLS):
                graphql, mcp = times[i]
                order = [(graphql_call(http, tool, arguments), graphql)]
                order.insert(round_ % 2, (mcp_call(c, tool, arguments), mcp))
                for work, kept in order:
                    ms = await work
                    if round_ >= 0:
                        kept.append(ms)
    return times


def report(times: dict[int, tuple[list[float], list[float]]], rounds: int) -> str:
    lines = [
        "# MCP tool calls beside their GraphQL twins, on the demo",
        "",
        f"`python -m bench.mcp --rounds {rounds}`: client-side ms, in process (ASGI), "
        "rates off; a shared 2-core machine.",
        "",
        "| tool | arguments | GraphQL p50 / p95 | MCP p50 / p95 | MCP / GraphQL p50 | p95 |",
        "|---|---|---|---|---|---|",
    ]
    for i, (tool, arguments) in enumerate(CALLS):
        graphql, mcp = times[i]
        shown = ", ".join(f"{k}={v}" for k, v in arguments.items() if k != "session_id")
        lines.append(
            f"| {tool} | {shown or '-'} | {p50(graphql):.1f} / {pct(graphql, 95):.1f} "
            f"| {p50(mcp):.1f} / {pct(mcp, 95):.1f} | {p50(mcp) / p50(graphql):.2f}x "
            f"| {pct(mcp, 95) / pct(graphql, 95):.2f}x |"
        )
    return "\n".join(lines) + "\n"


async def run(rounds: int) -> str:
    settings = Settings.from_env()
    configure_logging("WARNING")
    server = resolve_url(settings.database_url, settings.data_dir)
    with contextlib.suppress(asyncpg.DuplicateDatabaseError):  # a run before made it
        await administer(server, f'CREATE DATABASE "{DATABASE}"')
    engine = make_engine(with_database(server, DATABASE))
    try:
        await migrate(engine)
        await load_demo(engine, config_from(settings, progress=False), Registry())
        app = create_app(
            Settings.from_env({**UNRATED, "SIMILAR_SESSIONS_LOG_LEVEL": "WARNING"}),
            engine=engine,
            run_migrations=False,
        )
        async with app.router.lifespan_context(app):
            return report(await measure(app, rounds), rounds)
    finally:
        await engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30, help="timed calls of each")
    args = parser.parse_args()
    text = asyncio.run(run(args.rounds))
    print(text)
    OUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
