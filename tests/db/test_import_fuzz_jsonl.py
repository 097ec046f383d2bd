"""Times at the edges in jsonl, generated: every time of a session, its replay and a chunk
at and past both ends of the range the contract allows (0001-01-01T00:00:00Z to
9999-12-31T23:59:59.999999Z), and any value where a time goes. Each imports, times exactly,
or is refused by line with nothing written; nothing raises."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from hypothesis import example, given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.db.test_import_fuzz import JSON_VALUES
from tests.support.import_edges import (
    DB_FUZZ,
    OFFSETS,
    WALL_TIMES,
    instant,
    refused_or_none,
    time_text,
)
from tests.support.transfer_files import write_file
from tests.support.world import World, blend, direction

# Times past what the format can write: outside the range, or not ISO 8601 with a zone.
MALFORMED_TIMES = st.sampled_from(
    [
        "0000-12-31T23:59:59Z",
        "10000-01-01T00:00:00Z",
        "-0001-01-01T00:00:00Z",
        "9999-12-31T24:00:00Z",
        "9999-12-31T23:59:60Z",
        "0001-01-01T00:00:00",
        "0001-01-01T00:00:00+24:00",
        "",
    ]
)


async def stored_time(engine: AsyncEngine, table: str, column: str, row_id: Any) -> datetime:
    async with engine.connect() as conn:
        query = sa.text(f"SELECT {column} FROM {table} WHERE id = :id")
        return (await conn.execute(query, {"id": row_id})).scalar_one()


JSONL_TIMES = [  # (line, field, table) of each time in a session, its replay and a chunk
    (2, "started_at", "runtime_sessions"),
    (2, "last_activity_at", "runtime_sessions"),
    (3, "occurred_at", "runtime_session_activity"),
    (4, "occurred_at", "session_chunks"),
    (4, "embedded_at", "session_chunks"),
]


@DB_FUZZ
@given(wall=WALL_TIMES, offset=OFFSETS, where=st.sampled_from(JSONL_TIMES))
@example(wall=datetime.min, offset=-1, where=JSONL_TIMES[0])  # Go's zero time, a minute west
@example(wall=datetime.max, offset=1, where=JSONL_TIMES[3])
async def test_jsonl_times_at_the_ends_import_exactly_or_are_refused_by_line(
    engine: AsyncEngine, tmp_path: Path, wall: datetime, offset: int | None, where: Any
) -> None:
    line, name, table = where
    world = World()
    account_id, _ = world.account()
    session = world.session(account_id)
    world.activity(session, 0, "the migration fails")
    world.chunk(session, blend(direction(1), direction(2), 0.2))
    world.lines[line - 1][name] = time_text(wall, offset)
    path = write_file(tmp_path, world.jsonl())
    refused = await refused_or_none(engine, path)
    expected = instant(wall, offset)
    if expected is None:
        assert refused is not None and [
            (e.line, e.reason[: len(name)]) for e in refused.errors
        ] == [(line, name)]
    else:
        assert refused is None
        stored = await stored_time(engine, table, name, world.lines[line - 1]["id"])
        assert stored == expected and stored.utcoffset() == timedelta(0)


@DB_FUZZ
@given(time=st.one_of(st.builds(time_text, WALL_TIMES, OFFSETS), MALFORMED_TIMES, JSON_VALUES))
async def test_any_jsonl_time_value_imports_or_is_refused_by_line(
    engine: AsyncEngine, tmp_path: Path, time: Any
) -> None:
    world = World()
    account_id, _ = world.account()
    world.session(account_id)
    world.lines[1]["started_at"] = time
    refused = await refused_or_none(engine, write_file(tmp_path, world.jsonl()))
    if refused is not None:
        assert [e.line for e in refused.errors] == [2]
