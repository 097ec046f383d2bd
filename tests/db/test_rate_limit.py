"""Per-key rate limits: past the configured rate a key is answered 429 with Retry-After,
other keys are not, and the key may go on once the window has moved."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings, SettingsError
from similar_sessions.app import create_app
from tests.support.comparisons import bearer
from tests.support.world import World


def limited_client(engine: AsyncEngine, rate: str) -> httpx.AsyncClient:
    settings = Settings.from_env({"SIMILAR_SESSIONS_RATE_LIMIT": rate})
    app = create_app(settings, engine=engine, run_migrations=False)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def two_keys(engine: AsyncEngine) -> tuple[str, str, str]:
    world = World()
    account, key = world.account("busy")
    session = world.session(account)
    _, other_key = world.account("quiet")
    await world.write(engine)
    return session, key, other_key


async def test_a_key_past_its_rate_is_answered_429_with_retry_after(engine: AsyncEngine) -> None:
    session, key, other_key = await two_keys(engine)
    viewer = {"query": "{ viewer { name } }"}
    async with limited_client(engine, "3/minute") as c:
        assert (await c.get("/api/v1/runtime-sessions/x/similar")).status_code == 401
        assert (await c.post("/graphql", json=viewer, headers=bearer(key))).status_code == 200
        rest = f"/api/v1/runtime-sessions/{session}/similar"
        assert (await c.get(rest, headers=bearer(key))).status_code == 200
        assert (await c.post("/graphql", json=viewer, headers=bearer(key))).status_code == 200
        for refused in (
            await c.post("/graphql", json=viewer, headers=bearer(key)),
            await c.get(rest, headers=bearer(key)),
        ):
            assert refused.status_code == 429
            assert 1 <= int(refused.headers["retry-after"]) <= 60
            assert refused.json()["error"] == "rate_limited"
            assert refused.json()["limit"] == "3/minute"
        # Another key of the same process has its own count.
        assert (await c.post("/graphql", json=viewer, headers=bearer(other_key))).status_code == 200


async def test_a_key_may_go_on_once_its_window_has_moved(engine: AsyncEngine) -> None:
    _, key, _ = await two_keys(engine)
    viewer = {"query": "{ viewer { name } }"}
    async with limited_client(engine, "2/second;100/minute") as c:
        for _ in range(2):
            assert (await c.post("/graphql", json=viewer, headers=bearer(key))).status_code == 200
        refused = await c.post("/graphql", json=viewer, headers=bearer(key))
        assert refused.status_code == 429 and refused.json()["limit"] == "2/second"
        await asyncio.sleep(int(refused.headers["retry-after"]) + 0.1)
        assert (await c.post("/graphql", json=viewer, headers=bearer(key))).status_code == 200


def test_the_rate_setting_is_checked_and_can_be_turned_off() -> None:
    assert Settings.from_env({"SIMILAR_SESSIONS_RATE_LIMIT": "off"}).rate_limit is None
    with pytest.raises(SettingsError, match="SIMILAR_SESSIONS_RATE_LIMIT"):
        Settings.from_env({"SIMILAR_SESSIONS_RATE_LIMIT": "lots"})
