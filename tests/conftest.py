"""Fixtures: one PostgreSQL server per run (embedded unless DATABASE_URL is set), a migrated
template database, and a fresh clone of it for every test that asks for `engine`."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from resolvers.services import utc_now
from similar_sessions.app import create_app
from tests.support.otlp import making_sessions

_counter = itertools.count()
configure_logging("WARNING")
LANES = ("unit", "db", "browser")  # tests/<lane>/, marked so by directory


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its lane (its directory under tests/); one in no lane fails."""
    root = config.rootpath / "tests"
    for item in items:
        lane = item.path.relative_to(root).parts[0] if item.path.is_relative_to(root) else ""
        if lane not in LANES:
            raise pytest.UsageError(f"{item.nodeid}: in no lane; a test lives in tests/{LANES}")
        item.add_marker(getattr(pytest.mark, lane))


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, the controller starts the embedded server once, before its workers (each
    would otherwise race to start it); each worker then makes its own databases."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    settings = Settings.from_env()
    resolve_url(settings.database_url, settings.data_dir)


def _with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))


def _asyncpg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


@pytest.fixture(scope="session")
def server_url() -> str:
    """The server's URL. No database, no test: this fails loudly rather than skipping."""
    settings = Settings.from_env()
    return resolve_url(settings.database_url, settings.data_dir)


@pytest.fixture(scope="session")
def template_db(server_url: str) -> Iterator[str]:
    name = f"sstest_template_{os.getpid()}"

    async def create() -> None:
        admin = await asyncpg.connect(_asyncpg_dsn(_with_database(server_url, "postgres")))
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()
        engine = make_engine(_with_database(server_url, name))
        await migrate(engine)
        await engine.dispose()

    asyncio.run(create())
    yield name
    asyncio.run(_drop(server_url, name))


async def _drop(server_url: str, name: str) -> None:
    admin = await asyncpg.connect(_asyncpg_dsn(_with_database(server_url, "postgres")))
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def new_database(
    server_url: str, template_db: str
) -> AsyncIterator[Callable[[], Awaitable[str]]]:
    """Makes fresh databases cloned from the migrated template; drops them afterwards."""
    made: list[str] = []

    async def make() -> str:
        name = f"sstest_{os.getpid()}_{next(_counter)}"
        admin = await asyncpg.connect(_asyncpg_dsn(_with_database(server_url, "postgres")))
        try:
            await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_db}"')
        finally:
            await admin.close()
        made.append(name)
        return _with_database(server_url, name)

    yield make
    for name in made:
        await _drop(server_url, name)


@pytest.fixture
async def database_url(new_database: Callable[[], Awaitable[str]]) -> str:
    return await new_database()


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url, pool_size=5)
    yield engine
    await engine.dispose()


@pytest.fixture
def settings() -> Settings:
    return Settings.from_env({"SIMILAR_SESSIONS_LOG_LEVEL": "WARNING"})


@pytest.fixture
def clock() -> Callable[[], datetime]:
    """The time the app's windows and pins are counted back from; a module that must read
    one instant overrides it."""
    return utc_now


@pytest.fixture
async def client(
    engine: AsyncEngine, settings: Settings, clock: Callable[[], datetime]
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, engine=engine, run_migrations=False)
    app.state.services = replace(app.state.services, clock=clock)
    transport = httpx.ASGITransport(app=app)
    hooks = making_sessions(engine, settings)  # spans it acknowledges become sessions at once
    # The start-up a server runs (ASGITransport runs none): it reads the cursor secret.
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=transport, base_url="http://testserver", event_hooks=hooks
        ) as http,
    ):
        yield http


# The tracer provider exporting to memory (`spans`). The browser tests' fixtures are in
# tests/browser/conftest.py, so that no other test needs playwright.
pytest_plugins = ["tests.support.tracing"]
