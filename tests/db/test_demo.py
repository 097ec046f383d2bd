"""The demo: tau-bench sessions load as one account, index, and answer through both APIs."""

from __future__ import annotations

import json
import re
import shlex
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer import demo
from indexer.commands import load_demo
from indexer.embedders import Registry
from indexer.passes import IndexerConfig

AUTH = {"Authorization": f"Bearer {demo.DEMO_API_KEY}"}
CONFIG = IndexerConfig(progress=False)


def test_records_are_deterministic_and_in_the_import_format() -> None:
    corpus = demo.load_corpus()[:2]
    at = demo.first_session_at(datetime(2026, 3, 1, 12, 34, tzinfo=UTC))
    first, second = list(demo.records(corpus, first_at=at)), list(demo.records(corpus, first_at=at))
    assert first == second
    assert first[0]["type"] == "account" and first[0]["features"] == ["similarSessions"]
    assert first[0]["embedding"]["model"] == "lexical-384"
    sessions = [r for r in first if r["type"] == "session"]
    assert sessions[0]["id"] == str(demo.session_id(0, 0))
    assert demo.task_of(sessions[0]["source_id"]) == 0
    assert not any(r["type"] == "activity" and r["content"] in ("", "None") for r in first)


TIMES = (
    "SELECT (SELECT array_agg(started_at ORDER BY id) FROM runtime_sessions), "
    "(SELECT array_agg(occurred_at ORDER BY id) FROM runtime_session_activity), "
    "(SELECT count(*) FROM session_chunks c JOIN runtime_session_activity a "
    "ON a.account_id = c.account_id AND a.id = c.source_id "
    "WHERE c.source_kind <> 'gateway_interaction' AND c.occurred_at <> a.occurred_at)"
)


async def test_demo_loads_indexes_and_is_harmless_to_rerun(engine: AsyncEngine) -> None:
    first_load = datetime(2026, 3, 1, 12, 34, tzinfo=UTC)
    said: list[str] = []
    loaded = await load_demo(engine, CONFIG, Registry(), now=first_load, say=said.append)
    assert (loaded.sessions, loaded.report.sessions_chunked) == (200, 200)
    # each step is said as it starts and as it ends (`similar-sessions demo` prints them)
    assert [line.split(":")[0].split(" in ")[0] for line in said] == [
        "importing the demo corpus",
        "imported",
        "indexed",
    ]
    assert "200 tau-bench sessions" in said[0] and "lexical model" in said[1]
    assert loaded.report.chunks_embedded == loaded.report.chunks_written > 200
    async with engine.connect() as conn:
        started, turns, stray_chunks = (await conn.execute(sa.text(TIMES))).one()
    assert first_load - timedelta(days=60, hours=1) <= min(started) < max(started) < first_load
    assert stray_chunks == 0, "a chunk's time differs from its turn's"
    # A later run, days after the first, keeps the first run's times and writes nothing.
    again = await load_demo(engine, CONFIG, Registry(), now=first_load + timedelta(days=9))
    assert (again.report.chunks_written, again.report.chunks_embedded) == (0, 0)
    async with engine.connect() as conn:
        assert (await conn.execute(sa.text(TIMES))).one() == (started, turns, 0)
    async with engine.connect() as conn:
        counts = (
            await conn.execute(
                sa.text(
                    "SELECT (SELECT count(*) FROM runtime_sessions), "
                    "(SELECT count(*) FROM api_keys), "
                    "(SELECT count(*) FROM session_chunks WHERE embedding_state = 'embedded')"
                )
            )
        ).one()
    assert counts == (200, 2, loaded.report.chunks_embedded)  # a key to read, one to ingest


async def test_demo_session_has_same_task_neighbours_over_rest_and_graphql(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    await load_demo(engine, CONFIG, Registry())
    session = demo.session_id(0, 0)
    rest = await client.get(f"/api/v1/runtime-sessions/{session}/similar", headers=AUTH)
    assert rest.status_code == 200
    body = rest.json()
    assert body["model_identity"].startswith("local:lexical-384.") and body["degraded"]["semantic"]
    async with engine.connect() as conn:
        fitted = (await conn.execute(sa.text("SELECT model_identity FROM lexical_fits"))).scalar()
    assert body["model_identity"] == fitted
    tasks = [demo.task_of(r["session_source_id"]) for r in body["results"]]
    assert tasks[:3] == [0, 0, 0]  # the other three trials of the same task come first
    query = (
        "query($id: UUID!) { runtimeSession(id: $id) { title "
        "similarSessions(limit: 3) { results { similarity band session { sourceId } } } } }"
    )
    graphql = await client.post(
        "/graphql", json={"query": query, "variables": {"id": str(session)}}, headers=AUTH
    )
    data = graphql.json()["data"]["runtimeSession"]
    assert data["title"].startswith("Hi! I'm looking to book a flight")
    results = data["similarSessions"]["results"]
    assert [demo.task_of(r["session"]["sourceId"]) for r in results] == tasks[:3]
    assert [r["similarity"] for r in results] == [r["similarity"] for r in body["results"][:3]]


async def test_a_window_of_days_means_something_on_the_demo(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    await load_demo(engine, CONFIG, Registry())
    query = """query($after: String) { runtimeSessions(first: 1, after: $after) { nodes {
      startedAt
      all: similarSessions(limit: 20) { results { startedAt } }
      recent: similarSessions(limit: 20, windowDays: 20) {
        results { startedAt } degraded { reasons } } } } }"""
    graphql = await client.post("/graphql", json={"query": query}, headers=AUTH)
    [newest] = graphql.json()["data"]["runtimeSessions"]["nodes"]
    now = datetime.now(UTC)
    assert now - timedelta(days=1) < datetime.fromisoformat(newest["startedAt"]) < now
    recent = newest["recent"]["results"]
    assert recent, "the newest session has neighbours within 20 days"
    assert "SIMILAR_WINDOW_APPLIED" in newest["recent"]["degraded"]["reasons"]
    assert all(datetime.fromisoformat(r["startedAt"]) >= now - timedelta(days=21) for r in recent)
    assert any(
        datetime.fromisoformat(r["startedAt"]) < now - timedelta(days=21)
        for r in newest["all"]["results"]
    ), "without the window, older sessions are neighbours too"


README = Path(__file__).resolve().parents[2] / "README.md"


def readme_requests() -> list[tuple[str, dict[str, str], str | None]]:
    """(path, headers, body) of each curl the README sends to the demo, as a shell reads it."""
    sent = []
    for block in re.findall(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL):
        if f"Bearer {demo.DEMO_API_KEY}" not in block:
            continue
        words = shlex.split(block.replace("\\\n", " "))
        headers = [words[i + 1] for i, word in enumerate(words) if word == "-H"]
        url = next(word for word in words if word.startswith("http://127.0.0.1:8000/"))
        body = words[words.index("-d") + 1] if "-d" in words else None
        path = url.removeprefix("http://127.0.0.1:8000")
        sent.append((path, dict(h.split(": ", 1) for h in headers), body))
    return sent


def readme_graphql_query() -> str:
    """The GraphQL query the README shows, its whitespace collapsed."""
    shown = re.findall(r"```graphql\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    return " ".join(shown[0].split())


async def test_the_readmes_requests_answer_on_the_demo(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """The README's curl lines, pasted against the demo, answer with neighbours; its GraphQL
    request sends the query the README shows."""
    await load_demo(engine, CONFIG, Registry())
    sent = readme_requests()
    assert [path.split("/")[1] for path, _, _ in sent] == ["graphql", "api"]
    for path, headers, body in sent:
        if body is None:
            answer = await client.get(path, headers=headers)
            assert answer.status_code == 200 and answer.json()["results"]
            continue
        assert " ".join(json.loads(body)["query"].split()) == readme_graphql_query()
        answer = await client.post(path, content=body, headers=headers)
        assert answer.status_code == 200 and "errors" not in answer.json()
        similar = answer.json()["data"]["runtimeSession"]["similarSessions"]
        assert similar["results"] and similar["results"][0]["band"] == "CLOSE"
