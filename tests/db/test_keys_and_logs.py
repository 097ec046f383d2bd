"""Keys are stored hashed and refused at once when revoked; logs carry no key and no content."""

from __future__ import annotations

import logging

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from config.logs import configure_logging
from data.accounts import revoke_key
from tests.support.comparisons import bearer, graphql
from tests.support.world import World, blend, direction

SECRET_TEXT = "the customer's passport number is X1234567"


async def test_keys_are_stored_only_as_hashes(engine: AsyncEngine) -> None:
    world = World()
    world.account(key="sk-test-plain-text-key-1")
    await world.write(engine)
    async with engine.connect() as conn:
        dump = (
            await conn.execute(sa.text("SELECT row_to_json(k)::text FROM api_keys k"))
        ).scalar_one()
    assert "sk-test-plain-text-key-1" not in dump


async def test_a_revoked_key_is_refused_at_once(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = World()
    world.account(key="sk-test-soon-revoked-01")
    await world.write(engine)
    assert (
        await client.post(
            "/graphql",
            json={"query": "{ viewer { name } }"},
            headers=bearer("sk-test-soon-revoked-01"),
        )
    ).status_code == 200
    async with engine.begin() as conn:
        assert await revoke_key(conn, "sk-test-soon-revoked-01")
    refused = await client.post(
        "/graphql", json={"query": "{ viewer { name } }"}, headers=bearer("sk-test-soon-revoked-01")
    )
    assert refused.status_code == 401


async def test_logs_carry_no_key_and_no_content(
    client: httpx.AsyncClient, engine: AsyncEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging("DEBUG")
    try:
        world = World()
        account, key = world.account(key="sk-test-never-logged-1")
        viewed, other = world.session(account), world.session(account)
        world.chunk(viewed, blend(direction(1), direction(2), 0.2), content=SECRET_TEXT)
        world.chunk(other, blend(direction(1), direction(3), 0.2), content=SECRET_TEXT)
        await world.write(engine)
        await client.get(f"/api/v1/runtime-sessions/{viewed}/similar", headers=bearer(key))
        await client.get(f"/api/v1/runtime-sessions/{viewed}/similar?limit=99", headers=bearer(key))
        await client.get(
            f"/api/v1/runtime-sessions/{viewed}/similar", headers=bearer("sk-wrong-key-123")
        )
        body = await graphql(
            client,
            key,
            "query($id: UUID!) { runtimeSession(id: $id) { similarSessions { results {"
            " matches { text } } } } }",
            id=viewed,
        )
        assert SECRET_TEXT in str(body), "the answer itself does carry the text"
        await graphql(client, key, "{ runtimeSessions(first: 0) { nodes { id } } }")
        logging.getLogger("similar_sessions").debug("flush")
    finally:
        configure_logging("WARNING")
    captured = capsys.readouterr()
    logs = captured.out + captured.err
    assert "similar_sessions" in logs, "the debug run must have logged something to scan"
    for secret in ("sk-test-never-logged-1", "sk-wrong-key-123", SECRET_TEXT, "passport"):
        assert secret not in logs
