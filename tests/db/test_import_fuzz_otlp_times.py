"""Times at the edges in `--format otlp`, generated: a span's start and end in nanoseconds,
as a number or as text, at and past both ends of the range (the Unix epoch to
9999-12-31T23:59:59.999999999Z) import exactly or are refused by line with nothing written;
nothing raises."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import example, given
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from data.times import LATEST
from tests.support.import_edges import DB_FUZZ, fuzz_account, refused_or_none
from tests.support.transfer_files import write_file
from transfer.formats.anyvalue import INT64_MAX

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_NANOS = (LATEST - EPOCH) // timedelta(microseconds=1) * 1000 + 999


@pytest.fixture
async def account(engine: AsyncEngine, tmp_path: Path) -> uuid.UUID:
    """An account for the formats whose lines name none (created once per test)."""
    return await fuzz_account(engine, tmp_path)


NANOS = st.one_of(
    st.integers(-10, 10**6),
    st.integers(LATEST_NANOS - 10**6, LATEST_NANOS + 10**6),
    st.integers(0, 2**70),
    st.sampled_from([0, LATEST_NANOS, LATEST_NANOS + 1, INT64_MAX, 2**64 - 1, 2**64, -(2**63)]),
)


def span_document(trace_id: str, start: Any, end: Any, text: str = "x") -> str:
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": text}]}])
    attributes = [{"key": "gen_ai.input.messages", "value": {"stringValue": messages}}]
    span = {
        **{"traceId": trace_id, "spanId": "00f067aa0ba902b7", "name": "chat"},
        **{"startTimeUnixNano": start, "endTimeUnixNano": end, "attributes": attributes},
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


@DB_FUZZ
@given(nanos=NANOS, as_text=st.booleans())
@example(nanos=LATEST_NANOS, as_text=True)
async def test_otlp_times_at_the_ends_import_exactly_or_are_refused_by_line(
    engine: AsyncEngine, tmp_path: Path, account: uuid.UUID, nanos: int, as_text: bool
) -> None:
    trace_id = uuid.uuid4().hex
    value = str(nanos) if as_text else nanos
    path = write_file(tmp_path, ["", span_document(trace_id, value, value)], "traces.jsonl")
    refused = await refused_or_none(engine, path, file_format="otlp", account_id=account)
    if not 0 <= nanos <= LATEST_NANOS:
        assert refused is not None and [e.line for e in refused.errors] == [2]
        return
    assert refused is None
    expected = EPOCH + timedelta(microseconds=nanos // 1000)
    async with engine.connect() as conn:
        started = await conn.execute(
            sa.text(
                "SELECT started_at, last_activity_at FROM runtime_sessions WHERE source_id = :t"
            ),
            {"t": trace_id},
        )
        assert tuple(started.one()) == (expected, expected)
