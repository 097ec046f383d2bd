"""Values at the edges in `--format messages`, generated: started_at and a turn's timestamp
at and past both ends of the range the contract allows (0001-01-01T00:00:00Z to
9999-12-31T23:59:59.999999Z), the next turn a second later, import exactly or are refused by
line with nothing written; JSON nested at every depth in a line of messages (or of jsonl) is
read or refused by its number. Nothing raises."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import example, given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from data.times import LATEST
from tests.support.import_edges import (
    DB_FUZZ,
    OFFSETS,
    READER_FUZZ,
    WALL_TIMES,
    fuzz_account,
    instant,
    nested_json,
    refused_or_none,
    time_text,
)
from tests.support.transfer_files import write_file
from transfer.errors import ErrorLog
from transfer.formats import FORMATS


@pytest.fixture
async def account(engine: AsyncEngine, tmp_path: Path) -> uuid.UUID:
    """An account for the formats whose lines name none (created once per test)."""
    return await fuzz_account(engine, tmp_path)


@DB_FUZZ
@given(wall=WALL_TIMES, offset=OFFSETS, field=st.sampled_from(["started_at", "timestamp"]))
# A clock ahead of UTC at the year's last instant: the next turn, a second later, is in range.
@example(wall=datetime.max, offset=1, field="started_at")
async def test_messages_times_at_the_ends_import_exactly_or_are_refused_by_line(
    engine: AsyncEngine,
    tmp_path: Path,
    account: uuid.UUID,
    wall: datetime,
    offset: int | None,
    field: str,
) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "x"}, {"role": "user"}]
    messages[1]["content"] = "one second later"
    line: dict[str, Any] = {"session_id": str(uuid.uuid4()), "messages": messages}
    (line if field == "started_at" else messages[0])[field] = time_text(wall, offset)
    path = write_file(tmp_path, ["", json.dumps(line)])
    refused = await refused_or_none(engine, path, file_format="messages", account_id=account)
    first = instant(wall, offset)
    if first is None or first > LATEST - timedelta(seconds=1):
        assert refused is not None and [e.line for e in refused.errors] == [2]
        reason = refused.errors[0].reason
        assert reason.startswith("turn 1: has no time") if first else field in reason
        return
    assert refused is None
    async with engine.connect() as conn:
        times = await conn.execute(
            sa.text(
                "SELECT r.started_at, a.occurred_at FROM runtime_sessions r"
                " JOIN runtime_session_activity a ON a.runtime_session_id = r.id"
                " WHERE r.source_id = :sid ORDER BY a.ordinal"
            ),
            {"sid": line["session_id"]},
        )
        assert [tuple(t) for t in times] == [(first, first), (first, first + timedelta(seconds=1))]


@READER_FUZZ
@given(nested=nested_json(), file_format=st.sampled_from(["messages", "jsonl"]))
def test_deep_json_in_a_line_is_read_or_refused_by_its_number(
    nested: tuple[str, int], file_format: str
) -> None:
    text, _ = nested
    line = (
        f'{{"session_id": "s", "messages": [{{"role": "user", "content": {text}}}]}}'
        if file_format == "messages"
        else f'{{"type": "session", "id": "{uuid.uuid4()}", "title": {text}}}'
    )
    errors = ErrorLog("fuzz.jsonl")
    list(FORMATS[file_format]([(1, line.encode())], errors, uuid.uuid4()))
    assert all(str(e).startswith("fuzz.jsonl:1: ") for e in errors.kept)
