"""Import and export: whole files or nothing, idempotent, and a faithful round trip."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.engine import make_engine
from tests.support.transfer_files import counts, dump, sample_world, write_file
from tests.support.world import World, blend, direction
from transfer.errors import ImportRefused
from transfer.importing import import_file


async def row_versions(engine: AsyncEngine) -> list[tuple[str, str]]:
    """(id, xmin) of every session, activity and chunk row: a rewrite changes its xmin."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT id::text, xmin::text FROM runtime_sessions UNION ALL "
                "SELECT id::text, xmin::text FROM runtime_session_activity UNION ALL "
                "SELECT id::text, xmin::text FROM session_chunks ORDER BY 1"
            )
        )
        return [(row[0], row[1]) for row in rows]


async def test_importing_twice_changes_nothing(engine: AsyncEngine, tmp_path: Path) -> None:
    path = write_file(tmp_path, sample_world().jsonl())
    await import_file(engine, path)
    first, first_counts = await dump(engine), await counts(engine)
    versions = await row_versions(engine)
    again = await import_file(engine, path)
    assert await dump(engine) == first
    assert await counts(engine) == first_counts
    assert first_counts["session_chunks"] == 6 and first_counts["embedding_models"] == 1
    assert again.changed == {"session": 0, "activity": 0, "chunk": 0}
    assert await row_versions(engine) == versions, "an unchanged row is not rewritten"


async def test_an_export_imports_into_an_empty_database_unchanged(
    engine: AsyncEngine, new_database: Callable[[], Awaitable[str]], tmp_path: Path
) -> None:
    await import_file(engine, write_file(tmp_path, sample_world().jsonl()))
    exported = await dump(engine)
    assert "sk-test" not in exported, "API keys are never exported"
    empty = make_engine(await new_database())
    try:
        await import_file(empty, write_file(tmp_path, exported.splitlines(), "export.jsonl"))
        assert await dump(empty) == exported
        assert await counts(empty) == {**await counts(engine), "api_keys": 0}
    finally:
        await empty.dispose()


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda lines: [*lines[:-1], "{not json"], "malformed JSON"),
        (lambda lines: [*lines[:-1], '{"type": "planet", "id": "x"}'], "unknown type"),
        (
            lambda lines: [
                *lines[:-1],
                json.dumps({**json.loads(lines[-1]), "embedding": [0.1] * 3}),
            ],
            "embedding has 3 dimensions, model local:hash-384@384 needs 384",
        ),
        (
            lambda lines: [
                *lines[:-1],
                json.dumps(
                    {
                        **json.loads(lines[-1]),
                        "runtime_session_id": "00000000-0000-4000-8000-000000000000",
                    }
                ),
            ],
            "runtime_session_id: unknown session",
        ),
        (
            lambda lines: [
                *lines[:-1],
                json.dumps({**json.loads(lines[-1]), "embedding_model": "hash 384"}),
            ],
            "is not of the form <provider>:<model>@<dimensions>",
        ),
        (
            lambda lines: [
                *lines[:-1],
                json.dumps({**json.loads(lines[-1]), "occurred_at": "2026-01-01T00:00:00"}),
            ],
            "occurred_at: Input should have timezone info",
        ),
    ],
)
async def test_a_bad_line_is_reported_and_nothing_of_the_file_is_written(
    engine: AsyncEngine, tmp_path: Path, mutate: object, reason: str
) -> None:
    world = World()
    account, _ = world.account()
    session = world.session(account)
    world.chunk(session, blend(direction(1), direction(2), 0.2))
    lines = mutate(world.jsonl())  # type: ignore[operator]
    path = write_file(tmp_path, lines)
    before = await counts(engine)
    with pytest.raises(ImportRefused) as refused:
        await import_file(engine, path)
    [error] = refused.value.errors
    assert (error.path, error.line) == (str(path), len(lines))
    assert reason in error.reason
    assert f"{path}:{len(lines)}:" in str(refused.value)
    assert await counts(engine) == before


async def test_sessions_of_an_unknown_account_are_refused(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    world = World()
    world.session("00000000-0000-4000-8000-000000000001")
    with pytest.raises(ImportRefused, match="unknown account"):
        await import_file(engine, write_file(tmp_path, world.jsonl()))


async def test_import_lists_exactly_that_accounts_sessions(
    engine: AsyncEngine, tmp_path: Path, client: object
) -> None:
    import httpx

    assert isinstance(client, httpx.AsyncClient)
    await import_file(engine, write_file(tmp_path, sample_world().jsonl()))
    query = "{ runtimeSessions(first: 10) { nodes { title } } viewer { name } }"
    for key, name in (("sk-test-acme-000001", "acme"), ("sk-test-globex-00001", "globex")):
        body = (
            await client.post(
                "/graphql", json={"query": query}, headers={"authorization": f"Bearer {key}"}
            )
        ).json()
        assert body["data"]["viewer"]["name"] == name
        assert len(body["data"]["runtimeSessions"]["nodes"]) == 1


async def test_a_key_of_another_account_is_refused(engine: AsyncEngine, tmp_path: Path) -> None:
    first, second = World(), World()
    first.account("one", key="sk-test-shared-key-001")
    second.account("two", key="sk-test-shared-key-001")
    await import_file(engine, write_file(tmp_path, first.jsonl(), "one.jsonl"))
    with pytest.raises(ImportRefused, match="already belongs to another account"):
        await import_file(engine, write_file(tmp_path, second.jsonl(), "two.jsonl"))
