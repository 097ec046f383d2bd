"""examples/otel_agent.py, run as a newcomer runs it: the OpenTelemetry SDK's exporter
sends its GenAI spans to a served app, and the conversation is a session with its turns."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.db.test_ingest import BOTH, accounts
from tests.support.console_server import serving
from transfer.formats.spans import session_id
from transfer.live import make_sessions

EXAMPLE = Path(__file__).parents[2] / "examples" / "otel_agent.py"


async def test_the_example_agent_sends_a_session_through_the_sdk(
    engine: AsyncEngine, database_url: str
) -> None:
    [(account, key)] = await accounts(engine, BOTH)
    with serving(database_url) as base:
        env = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_ENDPOINT": base,
            "OTEL_EXPORTER_OTLP_HEADERS": f"Authorization=Bearer {key}",
        }
        agent = await asyncio.create_subprocess_exec(
            sys.executable,
            str(EXAMPLE),
            "--conversation",
            "example-1",
            "--fail",
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(agent.communicate(), timeout=120)
    assert agent.returncode == 0, err.decode()
    await make_sessions(engine, timedelta(minutes=30))  # the indexer's part (none runs here)
    assert "sent conversation example-1" in out.decode()
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                sa.text("SELECT title, status, source_id FROM runtime_sessions WHERE id = :id"),
                {"id": session_id(account, "example-1")},
            )
        ).one()
        kinds = (
            await conn.execute(
                sa.text(
                    "SELECT role, kind FROM runtime_session_activity "
                    "WHERE runtime_session_id = :id ORDER BY ordinal"
                ),
                {"id": session_id(account, "example-1")},
            )
        ).all()
    assert row.source_id == "example-1"
    assert row.status == "failed"  # --fail: its last tool call ended in error
    assert row.title.startswith("Hi, I need to cancel my reservation ZFA04Y")
    step = [
        ("user", "message"),
        ("assistant", "tool_call"),
        ("tool", "tool_result"),
        ("assistant", "message"),
    ]
    assert [tuple(k) for k in kinds] == [("system", "message"), *step, *step]
