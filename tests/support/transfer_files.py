"""Sample import files and table counts for the import and fault tests."""

from __future__ import annotations

import io
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.world import World, blend, direction
from transfer.exporting import export

TABLES = (
    "accounts",
    "api_keys",
    "account_features",
    "embedding_settings",
    "runtime_sessions",
    "runtime_session_activity",
    "session_chunks",
    "embedding_models",
)


def sample_world() -> World:
    world = World()
    account, _ = world.account("acme", key="sk-test-acme-000001")
    other, _ = world.account("globex", key="sk-test-globex-00001", model=None, features=())
    for owner in (account, other):
        session = world.session(owner, "fixing the migration")
        world.lines.append(
            {
                "type": "activity",
                "id": f"7c0c1a3e-55a3-4c21-9e1c-{len(world.lines):012d}",
                "runtime_session_id": session,
                "ordinal": 0,
                "occurred_at": "2026-01-01T00:00:00+00:00",
                "role": "user",
                "kind": "message",
                "content": "the migration fails",
                "api_usage_id": None,
            }
        )
        world.chunk(session, blend(direction(1), direction(2), 0.3), index=0)
        world.chunk(session, None, index=1)
        world.chunk(session, blend(direction(1), direction(3), 0.3), index=2, redaction="withheld")
    return world


def write_file(tmp_path: Path, lines: list[str], name: str = "data.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def counts(engine: AsyncEngine) -> dict[str, int]:
    async with engine.connect() as conn:
        return {
            t: (await conn.execute(sa.text(f"SELECT count(*) FROM {t}"))).scalar_one()
            for t in TABLES
        }


async def dump(engine: AsyncEngine) -> str:
    out = io.StringIO()
    await export(engine, out)
    return out.getvalue()
