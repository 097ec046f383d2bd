"""Logs: the app served by uvicorn, its access log, our own lines and SQLAlchemy's records
all come out as JSON lines carrying the request's id; no key and no content."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from config.logs import configure_logging
from config.settings import Settings
from similar_sessions.app import create_app
from tests.support.comparisons import bearer
from tests.support.world import World, blend, direction

SECRET_TEXT = "the customer's passport number is X1234567"


@contextmanager
def served(database_url: str) -> Iterator[str]:
    """The app under uvicorn as `serve` runs it (log_config=None, access log on)."""
    import uvicorn

    settings = Settings.from_env(
        {"DATABASE_URL": database_url, "SIMILAR_SESSIONS_LOG_LEVEL": "INFO"}
    )
    app = create_app(settings, run_migrations=False)  # configures the logs at INFO
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_config=None, log_level="info", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()


def json_lines(text: str) -> list[dict[str, Any]]:
    lines = [line for line in text.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line is JSON, or this fails


async def test_uvicorn_and_our_lines_are_json_with_the_request_id(
    engine: AsyncEngine, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    world = World()
    account, key = world.account(key="sk-test-logged-never-01")
    viewed, other = world.session(account), world.session(account)
    world.chunk(viewed, blend(direction(1), direction(2), 0.2), content=SECRET_TEXT)
    world.chunk(other, blend(direction(1), direction(3), 0.2), content=SECRET_TEXT)
    await world.write(engine)
    capsys.readouterr()
    try:
        with served(database_url) as base:
            async with httpx.AsyncClient(base_url=base) as http:
                answer = await http.get(
                    f"/api/v1/runtime-sessions/{viewed}/similar",
                    headers={**bearer(key), "X-Request-ID": "req-logged-1"},
                )
                other_answer = await http.get("/healthz")
    finally:
        configure_logging("WARNING")
    assert answer.status_code == 200 and SECRET_TEXT in answer.text
    generated = other_answer.headers["x-request-id"]
    logs = json_lines(capsys.readouterr().err)
    ours = [line for line in logs if line.get("request_id") == "req-logged-1"]
    by_logger = {line["logger"] for line in ours}
    assert {"uvicorn.access", "resolvers.comparison.phases"} <= by_logger, logs
    [access] = [line for line in ours if line["logger"] == "uvicorn.access"]
    assert access["level"] == "info" and "/similar" in access["event"] and "200" in access["event"]
    assert any(
        line["logger"] == "uvicorn.access" and line.get("request_id") == generated for line in logs
    )
    assert any(line["logger"] == "uvicorn.error" for line in logs)  # its start-up lines too
    text = json.dumps(logs)
    for secret in (SECRET_TEXT, "passport", "sk-test-logged-never-01"):
        assert secret not in text


def test_sqlalchemys_records_are_json_and_never_its_statements(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging("INFO")
    try:
        with structlog.contextvars.bound_contextvars(request_id="req-sql-1"):
            logging.getLogger("sqlalchemy.pool.impl.AsyncAdaptedQueuePool").warning(
                "Exception during reset or similar"
            )
            statements = logging.getLogger("sqlalchemy.engine.Engine")
            assert not statements.isEnabledFor(logging.INFO)  # it would log parameters
    finally:
        configure_logging("WARNING")
    [line] = json_lines(capsys.readouterr().err)
    assert line["logger"] == "sqlalchemy.pool.impl.AsyncAdaptedQueuePool"
    assert (line["level"], line["request_id"]) == ("warning", "req-sql-1")
    assert line["event"] == "Exception during reset or similar"
