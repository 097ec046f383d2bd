"""The formats agents already write: chat messages (both corpora) and OTLP GenAI traces, as
sessions and replay turns; ids derived, so importing twice changes nothing."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer import demo
from tests.support.transfer_files import counts, write_file
from tests.support.world import World
from transfer.errors import ImportRefused
from transfer.formats.conversation import cut_between_words
from transfer.formats.replay import session_uuid
from transfer.importing import import_file

DATA = Path(__file__).parents[1] / "data"
CODING = DATA / "coding-agents" / "sessions-sample.jsonl"
OTLP = DATA / "genai-traces.otlp.jsonl"


async def an_account(engine: AsyncEngine, tmp_path: Path) -> uuid.UUID:
    world = World()
    account, _ = world.account("team")
    await import_file(engine, write_file(tmp_path, world.jsonl(), "account.jsonl"))
    return uuid.UUID(account)


async def replay(engine: AsyncEngine, session_id: uuid.UUID) -> list[tuple[str, str, str]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT role, kind, content FROM runtime_session_activity "
                "WHERE runtime_session_id = :id ORDER BY ordinal"
            ),
            {"id": session_id},
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


async def sessions(engine: AsyncEngine) -> dict[str, sa.Row[tuple[object, ...]]]:
    async with engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT * FROM runtime_sessions"))
        return {row.source_id: row for row in rows}


async def test_the_coding_agents_corpus_imports_as_messages_and_again_changes_nothing(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account = await an_account(engine, tmp_path)
    lines = [json.loads(line) for line in CODING.read_text().splitlines()]
    imported = await import_file(engine, CODING, file_format="messages", account_id=account)
    assert imported.lines["session"] == len(lines) == 10
    stored = await sessions(engine)
    for line in lines:
        row = stored[line["session_id"]]
        assert row.id == session_uuid(account, line["session_id"])
        assert (row.source_type, row.reference) == (line["agent"], line["source"])
        first_user = next(m["content"] for m in line["messages"] if m["role"] == "user")
        collapsed = " ".join(first_user.split())
        assert row.title == cut_between_words(collapsed, 100) and row.title.endswith("…")
        assert collapsed.startswith(row.title[:-1]) and len(row.title) <= 100
        turns = await replay(engine, row.id)
        kept = [m for m in line["messages"] if m["content"].strip()]
        assert [t[2] for t in turns] == [m["content"] for m in kept]
        assert {t[1] for t in turns if t[0] == "tool"} == {"tool_result"}
    before = await counts(engine)
    again = await import_file(engine, CODING, file_format="messages", account_id=account)
    assert again.changed == {"session": 0, "activity": 0, "chunk": 0}
    assert await counts(engine) == before


async def test_tau_bench_chats_as_messages_replay_exactly_as_the_demo_does(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """OpenAI-shaped chats with tool calls: the same turns as the demo's own mapping."""
    account = await an_account(engine, tmp_path)
    corpus = demo.load_corpus()
    lines = [
        json.dumps({"session_id": f"task-{c['task_id']}/{c['trial']}", "messages": c["traj"]})
        for c in corpus
    ]
    path = write_file(tmp_path, lines, "tau.jsonl")
    await import_file(engine, path, file_format="messages", account_id=account)
    for item in corpus[:40]:
        sid = session_uuid(account, f"task-{item['task_id']}/{item['trial']}")
        assert await replay(engine, sid) == list(demo.activity_of(item))


async def test_an_otlp_export_imports_one_session_per_trace(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account = await an_account(engine, tmp_path)
    imported = await import_file(engine, OTLP, file_format="otlp", account_id=account)
    assert imported.lines["session"] == 2
    stored = await sessions(engine)
    billing = stored["4bf92f3577b34da6a3ce929d0e0e4736"]
    assert billing.title == "My invoice for March was charged twice."
    assert (billing.status, billing.source_type) == ("completed", "otlp")
    assert billing.reference == "billing-agent invoke_agent billing-bot"
    assert (billing.last_activity_at - billing.started_at).total_seconds() == 10
    charges = '{"charges": [{"id": "ch_1", "amount": 42}, {"id": "ch_2", "amount": 42}]}'
    assert await replay(engine, billing.id) == [
        ("system", "message", "You are a billing assistant."),
        ("user", "message", "My invoice for March was charged twice."),
        ("assistant", "tool_call", 'lookup_invoice {"month": "2025-03"}'),
        ("tool", "tool_result", charges),
        (
            "assistant",
            "message",
            "I found two charges of $42 for March and refunded the duplicate (ch_2).",
        ),
    ]
    coding = stored["0af7651916cd43dd8448eb211c80319c"]
    assert coding.status == "failed"
    assert await replay(engine, coding.id) == [
        ("system", "message", "You are a coding agent."),
        (
            "user",
            "message",
            "The test suite fails with ImportError: cannot import name 'parse_header'.",
        ),
        ("assistant", "message", "Let me run the failing test first."),
        ("assistant", "tool_call", 'run_tests {"path": "tests/test_io.py"}'),
    ]
    before = await counts(engine)
    again = await import_file(engine, OTLP, file_format="otlp", account_id=account)
    assert sum(again.changed.values()) == 0 and await counts(engine) == before


async def test_a_pretty_printed_otlp_document_reads_as_one(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    account = await an_account(engine, tmp_path)
    first = json.loads(OTLP.read_text().splitlines()[1])
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(first, indent=2))
    imported = await import_file(engine, path, file_format="otlp", account_id=account)
    assert imported.lines == {"account": 0, "session": 1, "activity": 4, "chunk": 0}


@pytest.mark.parametrize(
    ("file_format", "line", "reason"),
    [
        ("messages", '{"session_id": "s1", "messages": []}', "messages: List should have at "),
        ("messages", '{"messages": [{"content": "hi"}]}', "messages.0.role: Field required"),
        ("messages", '{"messages": [{"role": "user", "content": "a\\u0000b"}]}', "NUL"),
        ("messages", "[1, 2]", "one JSON object"),
        (
            "otlp",
            '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz"}]}]}]}',
            "traceId: String should match pattern",
        ),
        ("otlp", '{"resourceSpans": 3}', "resourceSpans: Input should be a valid list"),
    ],
)
async def test_a_bad_line_of_a_format_is_refused_by_its_number(
    engine: AsyncEngine, tmp_path: Path, file_format: str, line: str, reason: str
) -> None:
    account = await an_account(engine, tmp_path)
    good = CODING.read_text().splitlines()[0] if file_format == "messages" else ""
    path = write_file(tmp_path, [good, line] if good else ["", line], "bad.jsonl")
    before = await counts(engine)
    with pytest.raises(ImportRefused) as refused:
        await import_file(engine, path, file_format=file_format, account_id=account)
    [error] = refused.value.errors
    assert error.line == 2 and reason in error.reason, error
    assert await counts(engine) == before


async def test_sessions_of_a_format_need_an_account(engine: AsyncEngine, tmp_path: Path) -> None:
    with pytest.raises(ImportRefused, match="no --account was given"):
        await import_file(engine, CODING, file_format="messages")
    with pytest.raises(ImportRefused, match="unknown account"):
        await import_file(engine, OTLP, file_format="otlp", account_id=uuid.uuid4())
