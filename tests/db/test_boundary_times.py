"""Times at both ends of the range the contract allows (0001-01-01T00:00:00Z, Go's zero time,
to 9999-12-31T23:59:59.999999Z) are stored and answered exactly, with their offset; past the
range they are refused by line; export then import is the identity."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.ext.asyncio import AsyncEngine

from data.engine import make_engine
from data.migrate import alembic_config, migrate
from indexer import lexical
from indexer.lexical import LexicalEmbedder
from tests.support.cli import run_import
from tests.support.comparisons import bearer, graphql
from tests.support.transfer_files import counts, dump, write_file
from tests.support.world import World
from transfer.errors import ImportRefused
from transfer.importing import import_file

EARLIEST, LATEST = "0001-01-01T00:00:00+00:00", "9999-12-31T23:59:59.999999+00:00"
MODEL = str(lexical.UNFITTED)
PASSAGE = "the migration failed with a lock timeout on the orders table"


def boundary_world() -> tuple[World, str, dict[str, str]]:
    """A viewed session and two like it, one started at each end of the range, with passages
    and replay turns at those instants too."""
    world = World()
    account, key = world.account(model=MODEL)
    sessions = {name: world.session(account, name) for name in ("viewed", "earliest", "latest")}
    for line in world.lines:
        at = {"earliest": EARLIEST, "latest": LATEST}.get(line.get("title", ""))
        if at is not None:
            line.update(started_at=at, last_activity_at=at)
    vector = [float(x) for x in LexicalEmbedder().vector(PASSAGE)]
    for name, session in sessions.items():
        world.chunk(session, vector, content=f"{PASSAGE} ({name})", model=MODEL)
        world.activity(session, 0, PASSAGE)
    for line in world.lines:
        at = {"earliest": EARLIEST, "latest": LATEST}.get(_session_name(line, sessions))
        if at is not None and line["type"] in {"chunk", "activity"}:
            line["occurred_at"] = at
    return world, key, sessions


def _session_name(line: dict[str, Any], sessions: dict[str, str]) -> str | None:
    owner = line.get("runtime_session_id")
    return next((name for name, sid in sessions.items() if sid == owner), None)


async def test_sessions_at_both_ends_are_neighbours_answered_with_their_offset(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    world, key, sessions = boundary_world()
    await world.write(engine)
    rest = await client.get(
        f"/api/v1/runtime-sessions/{sessions['viewed']}/similar", headers=bearer(key)
    )
    assert rest.status_code == 200, rest.text
    started = {r["title"]: (r["started_at"], r["last_activity_at"]) for r in rest.json()["results"]}
    assert started["earliest"] == (EARLIEST, EARLIEST)
    assert started["latest"] == (LATEST, LATEST)
    matches = [m for r in rest.json()["results"] for m in r["matches"]]
    assert {m["occurred_at"] for m in matches} == {EARLIEST, LATEST}
    search = await client.get(
        "/api/v1/runtime-sessions/search", params={"q": PASSAGE}, headers=bearer(key)
    )
    assert search.status_code == 200, search.text
    assert {r["started_at"] for r in search.json()["results"]} >= {EARLIEST, LATEST}


@pytest.mark.parametrize("bucket", ["DAY", "WEEK", "MONTH"])
async def test_graphql_answers_the_neighbours_timeline_and_replay(
    engine: AsyncEngine, client: httpx.AsyncClient, bucket: str
) -> None:
    world, key, sessions = boundary_world()
    await world.write(engine)
    query = (
        "query($id: UUID!, $b: TimelineBucket!) { runtimeSession(id: $id) { startedAt"
        " replay { occurredAt } similarSessions { results { startedAt session { replay {"
        " occurredAt } } } timeline(bucket: $b) { sessions buckets { start sessions } } } } }"
    )
    body = await graphql(client, key, query, id=sessions["viewed"], b=bucket)
    assert "errors" not in body, body
    similar = body["data"]["runtimeSession"]["similarSessions"]
    assert {r["startedAt"] for r in similar["results"]} == {EARLIEST, LATEST}
    replays = {r["session"]["replay"][0]["occurredAt"] for r in similar["results"]}
    assert replays == {EARLIEST, LATEST}
    starts = [b["start"] for b in similar["timeline"]["buckets"]]
    assert similar["timeline"]["sessions"] == 2
    assert starts[0] == EARLIEST  # year 1 starts on a Monday, the 1st of its month
    assert starts[-1].startswith("9999-12-")


async def test_export_then_import_is_the_identity(
    engine: AsyncEngine, new_database: Any, tmp_path: Path
) -> None:
    world, _, _ = boundary_world()
    await world.write(engine)
    exported = await dump(engine)
    assert EARLIEST in exported and LATEST in exported
    path = tmp_path / "export.jsonl"
    path.write_text(exported, encoding="utf-8")
    other = make_engine(await new_database())
    try:
        await import_file(other, path)
        assert await dump(other) == exported
    finally:
        await other.dispose()


@pytest.mark.parametrize(
    "started_at",
    ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-01:00", "10000-01-01T00:00:00Z"],
)
async def test_a_time_past_the_range_is_refused_by_line(
    engine: AsyncEngine, tmp_path: Path, started_at: str
) -> None:
    world, _, _ = boundary_world()
    world.lines[1]["started_at"] = started_at
    before = await counts(engine)
    with pytest.raises(ImportRefused) as refused:
        await import_file(engine, write_file(tmp_path, world.jsonl()))
    assert refused.value.errors[0].line == 2
    assert "started_at" in refused.value.errors[0].reason
    assert await counts(engine) == before


def messages_line(started_at: str | None, *timestamps: str | None) -> str:
    messages = [
        {"role": "user", "content": f"step {n}", **({"timestamp": t} if t else {})}
        for n, t in enumerate(timestamps)
    ]
    return json.dumps({"session_id": "s-1", "started_at": started_at, "messages": messages})


async def test_messages_at_both_ends_import_and_a_turn_past_the_end_is_refused(
    engine: AsyncEngine, database_url: str, tmp_path: Path
) -> None:
    world = World()
    account, _ = world.account(model=MODEL)
    await world.write(engine)
    ok = write_file(tmp_path, [messages_line(EARLIEST, None, None)], "early.jsonl")
    done = run_import(database_url, "--format", "messages", "--account", account, str(ok))
    assert done.returncode == 0, done.stderr
    async with engine.connect() as conn:
        times = await conn.execute(
            sa.text("SELECT occurred_at FROM runtime_session_activity ORDER BY ordinal")
        )
        assert [t.isoformat() for (t,) in times] == [EARLIEST, "0001-01-01T00:00:01+00:00"]
    before = await counts(engine)
    late = write_file(tmp_path, ["", messages_line(None, LATEST, None)], "late.jsonl")
    done = run_import(database_url, "--format", "messages", "--account", account, str(late))
    assert done.returncode == 1
    assert f"{late}:2: turn 1: has no time" in done.stderr
    assert "Traceback" not in done.stderr
    assert await counts(engine) == before


async def test_the_migration_gives_infinities_the_instants_they_were_imported_as(
    engine: AsyncEngine,
) -> None:
    world, _, sessions = boundary_world()
    await world.write(engine)
    async with engine.begin() as conn:  # as stored before data/times.py
        await conn.run_sync(lambda sync: command.downgrade(alembic_config(sync), "0007"))
        for table, column, value in (
            ("runtime_sessions", "started_at", "-infinity"),
            ("runtime_sessions", "last_activity_at", "infinity"),
            ("session_chunks", "occurred_at", "infinity"),
            ("runtime_session_activity", "occurred_at", "-infinity"),
        ):
            await conn.execute(sa.text(f"UPDATE {table} SET {column} = '{value}'"))
    await migrate(engine)
    async with engine.connect() as conn:
        session = (
            await conn.execute(
                sa.text("SELECT started_at, last_activity_at FROM runtime_sessions WHERE id = :id"),
                {"id": sessions["viewed"]},
            )
        ).one()
        assert (session[0].isoformat(), session[1].isoformat()) == (EARLIEST, LATEST)
        with pytest.raises(sa.exc.IntegrityError):
            await conn.execute(sa.text("UPDATE runtime_sessions SET started_at = 'infinity'"))
