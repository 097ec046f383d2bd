"""Every line that cannot be imported is refused as `file:line: reason`, and nothing of its
file is written; files of any size pass the checks (no bind parameter per id)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.engine import make_engine
from data.errors import StatementTimedOut
from data.model_indexes import build_memory, prepare_build
from tests.support.transfer_files import counts, write_file
from tests.support.world import World, blend, direction
from transfer import importing
from transfer.errors import MAX_REPORTED_ERRORS, ImportRefused
from transfer.importing import import_file

Line = dict[str, Any]


def small_world() -> tuple[World, str, str]:
    world = World()
    account, _ = world.account()
    session = world.session(account)
    world.activity(session, 0, "the migration fails")
    world.chunk(session, blend(direction(1), direction(2), 0.2))
    return world, account, session


LINE_OF = {"account": 1, "session": 2, "activity": 3, "chunk": 4}  # in small_world()
Change = Callable[[list[Line]], list[Line]]


def last(kind: str, change: Callable[[Line], None]) -> tuple[Change, int]:
    """Change the line of a kind; it is the one refused."""

    def apply(lines: list[Line]) -> list[Line]:
        change(lines[LINE_OF[kind] - 1])
        return lines

    return apply, LINE_OF[kind]


def twice(kind: str, change: Callable[[Line], None] = lambda line: None) -> tuple[Change, int]:
    """Repeat the line of a kind at the end of the file (line 5), changed; it is refused."""

    def apply(lines: list[Line]) -> list[Line]:
        copy = json.loads(json.dumps(lines[LINE_OF[kind] - 1]))
        change(copy)
        return [*lines, copy]

    return apply, 5


def vector(values: list[float]) -> Callable[[Line], None]:
    return lambda chunk: chunk.update(embedding=values)


def field(**values: Any) -> Callable[[Line], None]:
    return lambda line: line.update(values)


def wide(chunk: Line) -> None:
    chunk.update(embedding_model="local:wide@2001", embedding=[0.1] * 2001)


def setting(**values: Any) -> Callable[[Line], None]:
    return lambda account: account["embedding"].update(values)


REFUSALS: dict[str, tuple[tuple[Change, int], str]] = {
    "nan": (last("chunk", vector([float("nan")] * 384)), "embedding.0: Input should be a finite"),
    "infinity": (last("chunk", vector([float("inf")] * 384)), "Input should be a finite number"),
    "beyond single precision": (last("chunk", vector([1e39] * 384)), "outside single precision"),
    "zero vector": (last("chunk", vector([0.0] * 384)), "a zero vector has no direction"),
    "vanishing vector": (last("chunk", vector([1e-20] * 384)), "outside what single precision"),
    "a vector of strings": (last("chunk", vector(["0.5"] * 384)), "Input should be a valid number"),
    "a vector with a boolean": (last("chunk", vector([True] * 384)), "should be a valid number"),
    "wider than its model": (last("chunk", vector([0.1] * 385)), "385 dimensions, model"),
    "wider than an HNSW index": (last("chunk", wide), "HNSW index holds at most 2000"),
    "setting wider than an index": (last("account", setting(dimensions=3000)), "at most 2000"),
    "NUL in content": (last("chunk", field(content="a\x00b")), "content: contains a NUL"),
    "NUL in a title": (last("session", field(title="\x00")), "title: contains a NUL"),
    "ordinal past int4": (last("activity", field(ordinal=2**31)), "ordinal: Input should be less"),
    "negative chunk index": (last("chunk", field(chunk_index=-1)), "chunk_index: Input should"),
    "time before year 1 in UTC": (
        last("activity", field(occurred_at="0001-01-01T00:30:00+01:00")),
        "outside the years 1 to 9999",
    ),
    "time past year 9999 in UTC": (
        last("session", field(started_at="9999-12-31T23:30:00-01:00")),
        "outside the years 1 to 9999",
    ),
    "a cap past numeric(12, 4)": (
        last("account", setting(daily_cap_usd=1e12)),
        "daily_cap_usd: Input should be less",
    ),
    "a turn too large to index": (
        last("activity", field(content="word " * 200_001)),
        "content: 1,000,005 characters; a turn or chunk holds at most 1,000,000 (MAX_TURN_CHARS)",
    ),
    "a chunk too large to index": (
        last("chunk", field(content="x" * 1_000_001)),
        "(MAX_TURN_CHARS): split it into several",
    ),
    "an epoch number for a time": (
        last("activity", field(occurred_at=1_700_000_000)),
        "occurred_at: 1700000000 is not a time: write ISO 8601 with a zone",
    ),
    "duplicate chunk id": (twice("chunk"), "is also on line 4"),
    "duplicate activity id": (twice("activity"), "is also on line 3"),
    "duplicate account id": (twice("account"), "is also on line 1"),
    "a key given to two accounts": (
        twice("account", field(id=str(uuid.uuid4()))),
        "api_keys: a key also given on line 1",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
async def test_each_invalid_line_is_refused_by_file_and_line(
    engine: AsyncEngine, tmp_path: Path, case: str
) -> None:
    world, _, _ = small_world()
    (change, line), reason = REFUSALS[case]
    path = write_file(tmp_path, [json.dumps(x) for x in change(world.lines)])
    before = await counts(engine)
    with pytest.raises(ImportRefused) as refused:
        await import_file(engine, path)
    [error] = refused.value.errors
    assert (error.line, reason in error.reason) == (line, True), error
    assert str(error).startswith(f"{path}:{line}: ")
    assert await counts(engine) == before


async def test_one_session_id_under_two_accounts_in_a_file_is_refused(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    world, _, session = small_world()
    other, _ = world.account("other", key="sk-test-other-account-1")
    line = {**world.lines[1], "account_id": other}
    path = write_file(tmp_path, [*world.jsonl(), json.dumps(line)])
    before = await counts(engine)
    with pytest.raises(ImportRefused) as refused:
        await import_file(engine, path)
    [error] = refused.value.errors
    assert error.line == 6 and f"session {session} is also on line 2" in error.reason
    assert await counts(engine) == before


async def test_a_session_of_another_account_in_the_database_is_refused(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    world, _, session = small_world()
    await import_file(engine, write_file(tmp_path, world.jsonl(), "first.jsonl"))
    other = World()
    account, _ = other.account("other")
    line = {**next(x for x in world.lines if x["type"] == "session"), "account_id": account}
    path = write_file(tmp_path, [*other.jsonl(), json.dumps(line)], "second.jsonl")
    before = await counts(engine)
    with pytest.raises(ImportRefused, match=rf"second.jsonl:2: id: session {session} already"):
        await import_file(engine, path)
    assert await counts(engine) == before


async def test_a_file_of_many_bad_lines_shows_the_first_and_counts_the_rest(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    path = write_file(tmp_path, ["{not json"] * (MAX_REPORTED_ERRORS + 7))
    with pytest.raises(ImportRefused) as refused:
        await import_file(engine, path)
    assert [e.line for e in refused.value.errors] == list(range(1, MAX_REPORTED_ERRORS + 1))
    assert str(refused.value).endswith("\n... and 7 more")


async def test_a_line_past_the_length_limit_is_refused_not_read(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importing, "MAX_LINE_BYTES", 1000)
    world, _, _ = small_world()
    lines = world.jsonl()
    with pytest.raises(ImportRefused, match=r":4: line longer than"):
        await import_file(engine, write_file(tmp_path, lines))
    assert (await counts(engine))["accounts"] == 0


async def test_more_ids_than_bind_parameters_import_and_import_again(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """40,000 chunk lines: every ownership check is a join, never a parameter per id."""
    world = World()
    account, _ = world.account(model="local:tiny@2")
    sessions = [world.session(account) for _ in range(40)]
    for n in range(40_000):
        world.chunk(sessions[n % 40], [1.0, n + 1.0], index=n, model="local:tiny@2")
    path = write_file(tmp_path, world.jsonl())
    first = await import_file(engine, path)
    again = await import_file(engine, path)
    assert first.changed["chunk"] == 40_000 and again.changed["chunk"] == 0
    assert (await counts(engine))["session_chunks"] == 40_000


async def test_an_import_and_its_index_builds_run_outside_the_request_budget(
    database_url: str, tmp_path: Path
) -> None:
    """A budget of 50 ms: the COPY, the upserts and both HNSW builds take longer."""
    engine = make_engine(database_url, statement_timeout_ms=50)
    try:
        world = World()
        account, _ = world.account()
        session = world.session(account)
        for n in range(3000):
            world.chunk(session, blend(direction(n), direction(n + 1), 0.3), index=n)
        imported = await import_file(engine, write_file(tmp_path, world.jsonl()), 1000)
        assert imported.indexes == ["local:hash-384@384", f"{account} local:hash-384@384"]
        async with engine.connect() as conn:
            with pytest.raises(StatementTimedOut):  # the request budget still holds
                await conn.execute(sa.text("SELECT pg_sleep(0.2)"))
    finally:
        await engine.dispose()


async def test_an_index_build_gets_the_memory_its_graph_needs(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await prepare_build(conn, 1_000_000, 384)
        memory = await conn.execute(
            sa.text("SELECT pg_size_bytes(current_setting('maintenance_work_mem'))")
        )
        timeout = (await conn.execute(sa.text("SHOW statement_timeout"))).scalar_one()
    assert memory.scalar_one() >= build_memory(1_000_000, 384) // 1024 * 1024  # never less
    assert timeout == "0"
    async with engine.connect() as conn:  # only for the transaction that builds
        assert (await conn.execute(sa.text("SHOW statement_timeout"))).scalar_one() == "5s"


def test_the_command_line_reports_bad_lines_without_a_traceback(
    database_url: str, tmp_path: Path
) -> None:
    world, _, _ = small_world()
    lines = world.jsonl()
    lines[3] = lines[3].replace('"embedding": [', '"embedding": [NaN, ', 1)  # 385 values
    path = write_file(tmp_path, lines)
    done = subprocess.run(
        [sys.executable, "-m", "similar_sessions.cli", "import", str(path)],
        env={"DATABASE_URL": database_url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert f"similar-sessions import: {path}:4: embedding.0: Input should be a finite" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


async def test_a_byte_order_mark_and_blank_lines_are_not_lines_to_refuse(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    world, _, _ = small_world()
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "\n\n".join(world.jsonl()).encode() + b"\n\n")
    imported = await import_file(engine, path)
    assert imported.counts == {"accounts": 1, "sessions": 1, "activity": 1, "chunks": 1}
