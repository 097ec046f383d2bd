"""Malformed lines, generated: every reader turns any line into records or `line: reason`,
never an exception; the import refuses the exact line and writes nothing, or imports it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.fuzz import examples
from tests.support.transfer_files import counts, write_file
from tests.support.world import World, blend, direction
from transfer.errors import ErrorLog, ImportRefused
from transfer.formats import FORMATS
from transfer.import_format import ChunkRecord
from transfer.importing import import_file

JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(),  # NaN, infinities, 1e308, subnormals
        st.sampled_from([1e39, -1e39, 1e-45, 0.0, -0.0, 2**31, 2**63]),
        st.text(max_size=20),
        st.sampled_from(
            [
                "\x00",
                "a\x00b",
                "0001-01-01T00:00:00+01:00",
                "9999-12-31T23:59:59-01:00",
                "2026-01-01T00:00:00",
                "2026-13-01T00:00:00Z",
                "local:x@2001",
                "NaN",
            ]
        ),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
VECTORS = st.lists(
    st.floats(width=32) | st.sampled_from([0.0, 1e39, float("nan"), True, "0.5", None, 1]),
    min_size=383,
    max_size=385,
)


OTLP_LINE = (Path(__file__).parents[1] / "data" / "genai-traces.otlp.jsonl").read_text()


def valid_lines(file_format: str = "jsonl") -> list[Any]:
    """A small valid file of the format, as JSON values."""
    if file_format == "otlp":
        return [json.loads(line) for line in OTLP_LINE.splitlines()]
    world = World()
    account, _ = world.account()
    if file_format == "messages":
        calls = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
        messages = [
            {"role": "user", "content": [{"type": "text", "text": "the build fails"}]},
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c1", "content": "exit 1"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]},
        ]
        return [{"session_id": "s1", "account_id": account, "messages": messages}]
    session = world.session(account)
    world.activity(session, 0, "the migration fails")
    world.chunk(session, blend(direction(1), direction(2), 0.2))
    return world.lines


def _replace_somewhere(value: Any, data: st.DataObject) -> Any:
    """The value with one node somewhere in its tree replaced, removed or kept."""
    if not isinstance(value, dict | list) or not value or data.draw(st.integers(0, 3)) == 0:
        return data.draw(JSON_VALUES)
    children = list(value) if isinstance(value, dict) else list(range(len(value)))
    key = data.draw(st.sampled_from(children))
    copy = dict(value) if isinstance(value, dict) else list(value)
    if data.draw(st.integers(0, 5)) == 0:
        del copy[key]
    else:
        copy[key] = _replace_somewhere(value[key], data)
    return copy


def mutate(lines: list[Any], data: st.DataObject) -> tuple[list[str], int]:
    """One line changed: a node anywhere in it set to any JSON value or removed, a chunk's
    vector replaced, or the line replaced by arbitrary bytes. Returns the texts and the
    changed line's number."""
    index = data.draw(st.integers(0, len(lines) - 1))
    line = lines[index]
    how = data.draw(st.sampled_from(["tree", "tree", "vector", "bytes"]))
    if how == "tree":
        line = _replace_somewhere(line, data)
    elif how == "vector" and isinstance(line, dict) and line.get("type") == "chunk":
        line = {**line, "embedding": data.draw(VECTORS)}
    texts = [json.dumps(x) for x in lines]
    texts[index] = json.dumps(line)
    if how == "bytes":
        raw = data.draw(st.binary(max_size=60)).replace(b"\n", b" ")  # still one line
        texts[index] = raw.decode("utf-8", "surrogateescape")
    return texts, index + 1


@settings(max_examples=examples(400), deadline=None)
@given(data=st.data(), file_format=st.sampled_from(sorted(FORMATS)))
def test_every_reader_turns_any_line_into_records_or_reasons(
    data: st.DataObject, file_format: str
) -> None:
    texts, _ = mutate(valid_lines(file_format), data)
    errors = ErrorLog("fuzz.jsonl")
    numbered = [(n, t.encode("utf-8", "surrogateescape")) for n, t in enumerate(texts, 1)]
    records = list(FORMATS[file_format](numbered, errors, uuid.uuid4()))
    for _, record in records:
        if isinstance(record, ChunkRecord) and record.embedding is not None:
            assert record.embedding_text is not None
    assert all(": " in str(e) for e in errors.kept)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), file_format=st.sampled_from(["jsonl", "jsonl", "messages"]))
async def test_a_malformed_line_is_refused_by_number_and_nothing_is_written(
    engine: AsyncEngine, tmp_path: Path, data: st.DataObject, file_format: str
) -> None:
    lines = valid_lines(file_format)
    if file_format == "messages":  # its account first, in a file of its own
        world = World()
        lines[0]["account_id"], _ = world.account()
        await import_file(engine, write_file(tmp_path, world.jsonl(), "account.jsonl"))
    texts, changed = mutate(lines, data)
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"\n".join(t.encode("utf-8", "surrogateescape") for t in texts) + b"\n")
    before = await counts(engine)
    try:
        await import_file(engine, path, file_format=file_format)
    except ImportRefused as refused:
        # the changed line, or lines after it that name what it declared
        assert {e.line for e in refused.errors} <= set(range(changed, len(lines) + 1)), refused
        assert all(str(e).startswith(f"{path}:{e.line}: ") for e in refused.errors)
        assert await counts(engine) == before
