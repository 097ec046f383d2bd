"""`--format otlp` reads every shape of attribute value OTLP/JSON writes, refuses the shapes
it does not by `file:line: reason`, and refuses JSON nested deeper than MAX_JSON_DEPTH in an
attribute: exit code 1, no traceback, nothing written."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.cli import run_import
from tests.support.transfer_files import counts, write_file
from tests.support.world import World
from transfer.formats.genai import MAX_JSON_DEPTH
from transfer.importing import import_file

START = 1735689600000000000  # 2025-01-01T00:00:00Z


def trace_line(trace: int, attributes: list[dict[str, Any]]) -> str:
    """One OTLP/JSON document of one span with these attributes, in trace number `trace`."""
    span = {
        "traceId": f"{trace:032x}",
        "spanId": f"{trace:016x}",
        "name": "chat",
        "startTimeUnixNano": str(START),
        "endTimeUnixNano": str(START + 10**9),
        "attributes": attributes,
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


def attribute(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": value}


def user_says(text: str) -> dict[str, Any]:
    messages = [{"role": "user", "parts": [{"type": "text", "content": text}]}]
    return attribute("gen_ai.input.messages", {"stringValue": json.dumps(messages)})


def tool_call(arguments: Any) -> list[dict[str, Any]]:
    return [
        attribute("gen_ai.tool.name", {"stringValue": "lookup"}),
        attribute("gen_ai.tool.call.arguments", arguments),
    ]


async def an_account(engine: AsyncEngine, tmp_path: Path) -> str:
    world = World()
    account, _ = world.account("team")
    await import_file(engine, write_file(tmp_path, world.jsonl(), "account.jsonl"))
    return account


async def test_bad_attribute_values_are_refused_by_line_through_the_command_line(
    engine: AsyncEngine, database_url: str, tmp_path: Path
) -> None:
    account = await an_account(engine, tmp_path)
    deep = "[" * 3000
    lines = [
        trace_line(1, [user_says("fine")]),
        trace_line(2, [attribute("gen_ai.input.messages", {"arrayValue": [1]})]),
        trace_line(3, [attribute("gen_ai.input.messages", {"kvlistValue": "s"})]),
        trace_line(4, [attribute("gen_ai.input.messages", [1])]),
        trace_line(5, [attribute("gen_ai.input.messages", {"stringValue": deep})]),
        trace_line(6, tool_call({"stringValue": deep})),
    ]
    path = write_file(tmp_path, lines, "traces.otlp.jsonl")
    before = await counts(engine)
    done = run_import(database_url, "--format", "otlp", "--account", account, str(path))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    where = "resourceSpans.0.scopeSpans.0.spans.0.attributes.0.value"
    for expected in (
        f"{path}:2: {where}.arrayValue: Input should be a valid dictionary",
        f"{path}:3: {where}.kvlistValue: Input should be a valid dictionary",
        f"{path}:4: {where}: Input should be a valid dictionary",
        f"{path}:5: span {5:016x}: gen_ai.input.messages: JSON nested deeper than "
        f"{MAX_JSON_DEPTH} levels",
        f"{path}:6: span {6:016x}: gen_ai.tool.call.arguments: JSON nested deeper than "
        f"{MAX_JSON_DEPTH} levels",
    ):
        assert expected in done.stderr, done.stderr
    assert f"{path}:1:" not in done.stderr
    assert await counts(engine) == before


def nested(depth: int) -> str:
    """JSON text of `depth` arrays and objects inside each other, around one number."""
    text = "1"
    for level in range(depth):
        text = f"[{text}]" if level % 2 else f'{{"a": {text}}}'
    return text


async def test_every_shape_of_value_is_read_and_json_up_to_the_limit_is_structure(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account = await an_account(engine, tmp_path)
    shapes = {
        "stringValue": "s",
        "boolValue": True,
        "intValue": "-9223372036854775808",
        "doubleValue": "NaN",
        "bytesValue": "aGk",
        "arrayValue": {"values": [{"intValue": 7}, {}]},
        "kvlistValue": {"values": [{"key": "k", "value": {"doubleValue": 1.5}}, {"key": "e"}]},
    }
    arguments = {"kvlistValue": {"values": [attribute(k, {k: v}) for k, v in shapes.items()]}}
    deepest = nested(MAX_JSON_DEPTH)
    lines = [
        trace_line(1, [user_says("every shape"), *tool_call(arguments)]),
        trace_line(2, [user_says("deep arguments"), *tool_call({"stringValue": deepest})]),
    ]
    path = write_file(tmp_path, lines, "traces.otlp.jsonl")
    await import_file(engine, path, file_format="otlp", account_id=uuid.UUID(account))
    async with engine.connect() as conn:
        calls = await conn.execute(
            sa.text(
                "SELECT s.title, a.content FROM runtime_session_activity a JOIN runtime_sessions s"
                " ON s.id = a.runtime_session_id WHERE a.kind = 'tool_call'"
            )
        )
        content = {title: text for title, text in calls}
    assert content["every shape"] == "lookup " + json.dumps(
        {
            "stringValue": "s",
            "boolValue": True,
            "intValue": -(2**63),
            "doubleValue": float("nan"),
            "bytesValue": "aGk",
            "arrayValue": [7, None],
            "kvlistValue": {"k": 1.5, "e": None},
        }
    )
    assert content["deep arguments"] == "lookup " + json.dumps(json.loads(deepest))
