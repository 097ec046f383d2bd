"""`import --account B` confines every line of the file to account B: a line naming another
account, or pointing at another account's session, is refused by its number and nothing of
the file is written. Without --account a file may hold any accounts, as before."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.cli import run_import
from tests.support.transfer_files import counts, write_file
from tests.support.world import World, blend, direction
from transfer.formats.replay import session_uuid
from transfer.importing import import_file

DATA = Path(__file__).parents[1] / "data"


async def two_accounts(engine: AsyncEngine, tmp_path: Path) -> tuple[World, dict[str, str]]:
    """The demo account with a session (replay and a chunk) and account B with one, stored;
    the world keeps B's account line, to import again."""
    world = World()
    ids: dict[str, str] = {}
    ids["demo"], _ = world.account("demo")
    ids["demo_session"] = world.session(ids["demo"], "the demo's session")
    world.activity(ids["demo_session"], 0, "the demo's replay")
    world.chunk(ids["demo_session"], blend(direction(1), direction(2), 0.2))
    ids["b"], _ = world.account("b")
    ids["b_session"] = world.session(ids["b"], "b's session")
    await import_file(engine, write_file(tmp_path, world.jsonl(), "accounts.jsonl"))
    b_account = World(lines=[dict(world.lines[4])])
    return b_account, ids


def refused_lines(done: subprocess.CompletedProcess[str], path: Path) -> dict[int, str]:
    """The refusal of each line the command named, from its stderr."""
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    prefix = f"{path}:"
    named = [line.split(prefix, 1)[1] for line in done.stderr.splitlines() if prefix in line]
    return {int(n): reason for n, reason in (item.split(": ", 1) for item in named)}


async def test_lines_naming_another_account_are_refused_and_nothing_is_written(
    engine: AsyncEngine, database_url: str, tmp_path: Path
) -> None:
    world, ids = await two_accounts(engine, tmp_path)  # line 1: B's own account, allowed
    world.account("another")  # line 2
    world.session(ids["demo"], "into the demo")  # line 3
    world.session(ids["b"], "b's second session")  # line 4, allowed
    path = write_file(tmp_path, world.jsonl())
    before = await counts(engine)
    done = run_import(database_url, "--account", ids["b"], str(path))
    refused = refused_lines(done, path)
    assert sorted(refused) == [2, 3]
    assert refused[2].startswith(f"id: account {world.lines[1]['id']} is not the --account")
    assert refused[3] == (
        f"account_id: account {ids['demo']} is not the --account of this import ({ids['b']})"
    )
    assert await counts(engine) == before


async def test_replay_and_chunks_of_another_accounts_session_are_refused(
    engine: AsyncEngine, database_url: str, tmp_path: Path
) -> None:
    _, ids = await two_accounts(engine, tmp_path)
    world = World()
    world.activity(ids["demo_session"], 1, "written into the demo's replay")  # line 1
    world.chunk(ids["demo_session"], blend(direction(1), direction(3), 0.2), index=1)  # line 2
    world.activity(ids["b_session"], 0, "b's own replay")  # line 3, allowed
    path = write_file(tmp_path, world.jsonl())
    before = await counts(engine)
    done = run_import(database_url, "--account", ids["b"], str(path))
    refused = refused_lines(done, path)
    assert sorted(refused) == [1, 2]
    assert refused[1] == (
        f"runtime_session_id: session {ids['demo_session']} belongs to another account than "
        f"the --account of this import ({ids['b']})"
    )
    assert await counts(engine) == before


async def test_a_messages_line_naming_another_account_is_refused(
    engine: AsyncEngine, database_url: str, tmp_path: Path
) -> None:
    _, ids = await two_accounts(engine, tmp_path)
    lines = [
        {"session_id": "s-1", "messages": [{"role": "user", "content": "b's own"}]},
        {
            "session_id": "s-2",
            "account_id": ids["demo"],
            "messages": [{"role": "user", "content": "x"}],
        },
        {
            "session_id": "s-3",
            "account_id": ids["b"],
            "messages": [{"role": "user", "content": "y"}],
        },
    ]
    path = write_file(tmp_path, [json.dumps(line) for line in lines])
    before = await counts(engine)
    done = run_import(database_url, "--format", "messages", "--account", ids["b"], str(path))
    assert refused_lines(done, path) == {
        2: f"account_id: account {ids['demo']} is not the --account of this import ({ids['b']})"
    }
    assert await counts(engine) == before


async def stored_sessions(engine: AsyncEngine) -> dict[uuid.UUID, uuid.UUID]:
    async with engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT id, account_id FROM runtime_sessions"))
        return {row.id: row.account_id for row in rows}


async def test_a_file_of_the_account_alone_imports_in_every_format(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    world, ids = await two_accounts(engine, tmp_path)
    b = uuid.UUID(ids["b"])
    session = world.session(ids["b"], "b's second session")
    world.activity(session, 0, "b's replay")
    world.chunk(ids["b_session"], blend(direction(1), direction(3), 0.2))
    await import_file(engine, write_file(tmp_path, world.jsonl()), account_id=b)
    line: dict[str, Any] = {"session_id": "s-1", "messages": [{"role": "user", "content": "x"}]}
    named = {**line, "session_id": "s-2", "account_id": ids["b"]}
    chat = write_file(tmp_path, [json.dumps(line), json.dumps(named)], "chat.jsonl")
    await import_file(engine, chat, file_format="messages", account_id=b)
    otlp = await import_file(
        engine, DATA / "genai-traces.otlp.jsonl", file_format="otlp", account_id=b
    )
    owners = await stored_sessions(engine)
    assert owners[uuid.UUID(session)] == owners[session_uuid(b, "s-1")] == b
    assert otlp.lines["session"] > 0
    assert sum(owner == b for owner in owners.values()) == 4 + otlp.lines["session"]


async def test_without_account_a_file_may_hold_several_accounts(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    _, ids = await two_accounts(engine, tmp_path)
    world = World()
    demo_session = world.session(ids["demo"], "the demo's second session")
    world.session(ids["b"], "b's second session")
    world.activity(ids["demo_session"], 1, "more of the demo's replay")
    await import_file(engine, write_file(tmp_path, world.jsonl()))
    owners = await stored_sessions(engine)
    assert owners[uuid.UUID(demo_session)] == uuid.UUID(ids["demo"])
