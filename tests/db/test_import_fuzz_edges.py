"""Values at the edges, generated: times at and past both ends of the range the contract
allows (0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z) in all three formats; OTLP
attribute values of every shape and of wrong ones; JSON nested in attribute strings at every
depth. Each imports, times exactly, or is refused by line; nothing raises."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic_core import from_json
from sqlalchemy.ext.asyncio import AsyncEngine

from data.times import LATEST
from tests.db.test_import_fuzz import JSON_VALUES
from tests.support.fuzz import examples
from tests.support.transfer_files import counts, write_file
from tests.support.world import World, blend, direction
from transfer.errors import ErrorLog, ImportRefused
from transfer.formats import FORMATS
from transfer.formats.anyvalue import INT64_MAX, INT64_MIN, AnyValue
from transfer.formats.genai import MAX_JSON_DEPTH
from transfer.import_format import describe
from transfer.importing import import_file

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TWO_DAYS = 2 * 86_400 * 10**6  # microseconds
LATEST_NANOS = (LATEST - EPOCH) // timedelta(microseconds=1) * 1000 + 999
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


# Times past what the format can write: outside the range, or not ISO 8601 with a zone.
MALFORMED_TIMES = st.sampled_from(
    [
        "0000-12-31T23:59:59Z",
        "10000-01-01T00:00:00Z",
        "-0001-01-01T00:00:00Z",
        "9999-12-31T24:00:00Z",
        "9999-12-31T23:59:60Z",
        "0001-01-01T00:00:00",
        "0001-01-01T00:00:00+24:00",
        "",
    ]
)


@pytest.fixture
async def account(engine: AsyncEngine, tmp_path: Path) -> uuid.UUID:
    """An account for the formats whose lines name none (created once per test)."""
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


async def stored_time(engine: AsyncEngine, table: str, column: str, row_id: Any) -> datetime:
    async with engine.connect() as conn:
        query = sa.text(f"SELECT {column} FROM {table} WHERE id = :id")
        return (await conn.execute(query, {"id": row_id})).scalar_one()


JSONL_TIMES = [  # (line, field, table) of each time in a session, its replay and a chunk
    (2, "started_at", "runtime_sessions"),
    (2, "last_activity_at", "runtime_sessions"),
    (3, "occurred_at", "runtime_session_activity"),
    (4, "occurred_at", "session_chunks"),
    (4, "embedded_at", "session_chunks"),
]


@DB_FUZZ
@given(wall=WALL_TIMES, offset=OFFSETS, where=st.sampled_from(JSONL_TIMES))
@example(wall=datetime.min, offset=-1, where=JSONL_TIMES[0])  # Go's zero time, a minute west
@example(wall=datetime.max, offset=1, where=JSONL_TIMES[3])
async def test_jsonl_times_at_the_ends_import_exactly_or_are_refused_by_line(
    engine: AsyncEngine, tmp_path: Path, wall: datetime, offset: int | None, where: Any
) -> None:
    line, name, table = where
    world = World()
    account_id, _ = world.account()
    session = world.session(account_id)
    world.activity(session, 0, "the migration fails")
    world.chunk(session, blend(direction(1), direction(2), 0.2))
    world.lines[line - 1][name] = time_text(wall, offset)
    path = write_file(tmp_path, world.jsonl())
    refused = await refused_or_none(engine, path)
    expected = instant(wall, offset)
    if expected is None:
        assert refused is not None and [
            (e.line, e.reason[: len(name)]) for e in refused.errors
        ] == [(line, name)]
    else:
        assert refused is None
        stored = await stored_time(engine, table, name, world.lines[line - 1]["id"])
        assert stored == expected and stored.utcoffset() == timedelta(0)


@DB_FUZZ
@given(time=st.one_of(st.builds(time_text, WALL_TIMES, OFFSETS), MALFORMED_TIMES, JSON_VALUES))
async def test_any_jsonl_time_value_imports_or_is_refused_by_line(
    engine: AsyncEngine, tmp_path: Path, time: Any
) -> None:
    world = World()
    account_id, _ = world.account()
    world.session(account_id)
    world.lines[1]["started_at"] = time
    refused = await refused_or_none(engine, write_file(tmp_path, world.jsonl()))
    if refused is not None:
        assert [e.line for e in refused.errors] == [2]


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


def _scalar_values() -> st.SearchStrategy[tuple[Any, Any]]:
    """(OTLP/JSON AnyValue, the value it holds) of each scalar shape; bytes hold their text."""
    ints = st.integers(INT64_MIN, INT64_MAX)
    base64_text = st.binary(max_size=8).map(lambda b: base64.b64encode(b).decode())
    return st.one_of(
        st.text(max_size=10).map(lambda s: ({"stringValue": s}, s)),
        st.booleans().map(lambda b: ({"boolValue": b}, b)),
        ints.map(lambda i: ({"intValue": i}, i)),
        ints.map(lambda i: ({"intValue": str(i)}, i)),
        st.floats(allow_nan=False).map(lambda f: ({"doubleValue": f}, f)),
        base64_text.map(lambda t: ({"bytesValue": t}, t)),
        st.just(({}, None)),
    )


def _containers(children: st.SearchStrategy[tuple[Any, Any]]) -> st.SearchStrategy[Any]:
    keyed = st.lists(st.tuples(st.text(max_size=4), children), max_size=3, unique_by=lambda p: p[0])
    return st.one_of(
        st.lists(children, max_size=3).map(
            lambda items: ({"arrayValue": {"values": [v for v, _ in items]}}, [h for _, h in items])
        ),
        keyed.map(
            lambda pairs: (
                {"kvlistValue": {"values": [{"key": k, "value": v} for k, (v, _) in pairs]}},
                {k: h for k, (_, h) in pairs},
            )
        ),
    )


ANY_VALUES = st.recursive(_scalar_values(), _containers, max_leaves=10)


@READER_FUZZ
@given(pair=ANY_VALUES)
def test_every_shape_of_attribute_value_is_read_as_the_value_it_holds(pair: Any) -> None:
    written, held = pair
    assert AnyValue.model_validate(from_json(json.dumps(written))).plain() == held


def _replaced_somewhere(value: Any, data: st.DataObject) -> Any:
    """The value with one node of its tree set to any JSON value."""
    if not isinstance(value, dict | list) or not value or data.draw(st.integers(0, 3)) == 0:
        return data.draw(JSON_VALUES)
    key = data.draw(st.sampled_from(list(value) if isinstance(value, dict) else range(len(value))))
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[key] = _replaced_somewhere(value[key], data)
    return copy


@READER_FUZZ
@given(pair=ANY_VALUES, data=st.data())
def test_a_wrong_shape_is_refused_naming_where(pair: Any, data: st.DataObject) -> None:
    written = _replaced_somewhere(pair[0], data)
    try:
        AnyValue.model_validate(written).plain()
    except ValidationError as refused:
        assert describe(refused)


# Where the reader looks for attributes, and what it makes of them.
READ_KEYS = [
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.call.id",
    "gen_ai.tool.name",
    "gen_ai.operation.name",
    "gen_ai.event.content",
    "service.name",
]
EVENTS = ["gen_ai.user.message", "gen_ai.choice", "gen_ai.tool.message"]


def _document(key: str, value: Any, event: str) -> str:
    """A trace of one tool-executing span whose attribute `key` is `value`: on the resource,
    on an event of the span, or on the span itself."""
    attribute = {"key": key, "value": value}
    span: dict[str, Any] = {
        **{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7"},
        **{"startTimeUnixNano": "1735689600000000000", "endTimeUnixNano": 1735689601000000000},
        "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "f"}}],
    }
    resource: dict[str, Any] = {"attributes": []}
    if key == "service.name":
        resource["attributes"].append(attribute)
    elif key == "gen_ai.event.content":
        span["events"] = [{"name": event, "timeUnixNano": "1", "attributes": [attribute]}]
    else:
        span["attributes"].append(attribute)
    return json.dumps(
        {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}
    )


def read_otlp(*documents: str) -> tuple[list[Any], ErrorLog]:
    errors = ErrorLog("fuzz.otlp.jsonl")
    numbered = [(n, d.encode("utf-8", "surrogateescape")) for n, d in enumerate(documents, 1)]
    records = list(FORMATS["otlp"](numbered, errors, uuid.uuid4()))
    assert all(str(e).startswith(f"fuzz.otlp.jsonl:{e.line}: ") for e in errors.kept)
    return records, errors


@READER_FUZZ
@given(
    key=st.sampled_from(READ_KEYS),
    event=st.sampled_from(EVENTS),
    pair=ANY_VALUES,
    data=st.data(),
)
def test_any_attribute_value_where_the_reader_looks_reads_or_is_refused(
    key: str, event: str, pair: Any, data: st.DataObject
) -> None:
    value = pair[0] if data.draw(st.booleans()) else _replaced_somewhere(pair[0], data)
    read_otlp(_document(key, value, event))


JSON_KEYS = [
    k
    for k in READ_KEYS
    if k.endswith(("messages", "instructions", "arguments", "result", "content"))
]


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


@READER_FUZZ
@given(key=st.sampled_from(JSON_KEYS), event=st.sampled_from(EVENTS), nested=nested_json())
def test_json_in_an_attribute_is_read_up_to_the_limit_and_refused_past_it(
    key: str, event: str, nested: tuple[str, int]
) -> None:
    text, depth = nested
    _, errors = read_otlp(_document(key, {"stringValue": text}, event))
    too_deep = [e for e in errors.kept if "JSON nested deeper than" in e.reason]
    assert bool(too_deep) == (depth > MAX_JSON_DEPTH)
    if depth <= MAX_JSON_DEPTH:
        assert errors.total == 0, errors.kept


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
