"""What the import fuzz-at-the-edges tests (tests/db/test_import_fuzz_*.py) share: their
hypothesis settings, times at and past both ends of the range the contract allows and the
instant each names, an account for the formats whose lines name none, an import that returns
its refusal, and JSON nested at every depth."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.fuzz import examples
from tests.support.transfer_files import counts, write_file
from tests.support.world import World
from transfer.errors import ImportRefused
from transfer.formats.genai import MAX_JSON_DEPTH
from transfer.importing import import_file

TWO_DAYS = 2 * 86_400 * 10**6  # microseconds
DB_FUZZ = settings(
    max_examples=examples(15),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
READER_FUZZ = settings(max_examples=examples(80), deadline=None)

WALL_TIMES = st.one_of(
    st.integers(0, TWO_DAYS).map(lambda us: datetime.min + timedelta(microseconds=us)),
    st.integers(0, TWO_DAYS).map(lambda us: datetime.max - timedelta(microseconds=us)),
    st.sampled_from([datetime.min, datetime.max]),
    st.datetimes(),
)
OFFSETS = st.none() | st.integers(-(24 * 60 - 1), 24 * 60 - 1)  # minutes; None writes "Z"


def time_text(wall: datetime, offset: int | None) -> str:
    if offset is None:
        return f"{wall.isoformat()}Z"
    hours, minutes = divmod(abs(offset), 60)
    return f"{wall.isoformat()}{'-' if offset < 0 else '+'}{hours:02d}:{minutes:02d}"


def instant(wall: datetime, offset: int | None) -> datetime | None:
    """The instant the text names, or None when it lies outside the range in UTC."""
    try:
        return wall.replace(tzinfo=timezone(timedelta(minutes=offset or 0))).astimezone(UTC)
    except OverflowError:
        return None


async def fuzz_account(engine: AsyncEngine, tmp_path: Path) -> uuid.UUID:
    """An account for the formats whose lines name none, imported from a file of its own."""
    world = World()
    account_id, _ = world.account("fuzz")
    await import_file(engine, write_file(tmp_path, world.jsonl(), "account.jsonl"))
    return uuid.UUID(account_id)


async def refused_or_none(engine: AsyncEngine, path: Path, **options: Any) -> ImportRefused | None:
    """Import the file; its refusal (after checking nothing was written), or None."""
    before = await counts(engine)
    try:
        await import_file(engine, path, **options)
    except ImportRefused as refused:
        assert all(str(e).startswith(f"{path}:{e.line}: ") for e in refused.errors)
        assert await counts(engine) == before
        return refused
    return None


@st.composite
def nested_json(draw: st.DrawFn) -> tuple[str, int]:
    """JSON text of arrays and objects `depth` levels inside each other, perhaps cut short,
    with brackets and escaped quotes inside strings: (text, depth)."""
    limit = MAX_JSON_DEPTH
    depth = draw(st.integers(0, 3 * limit) | st.integers(limit - 1, limit + 1))
    inner = json.dumps(draw(st.sampled_from(["[[[{", '"]]"', "\\", '\\"[', "x"])) * 20)
    text = inner
    for _ in range(depth):
        opening = draw(st.sampled_from(["[", '{"k": ', '["[", ', '{"\\"{": ']))
        text = opening + text + ("]" if opening.startswith("[") else "}")
    if draw(st.booleans()):
        text = text[: len(text) - draw(st.integers(0, depth))]
    return text, depth
