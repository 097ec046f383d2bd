"""Chunking: windows of turns, system prompts left out, tool results cut, long turns split."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from indexer.chunking import ChunkPolicy, Turn, chunk_id, chunk_session, source_kind

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def words(n: int, stem: str = "w") -> str:
    return " ".join(f"{stem}{i}" for i in range(n))


def turn(
    ordinal: int, role: str, content: str, kind: str = "message", usage: UUID | None = None
) -> Turn:
    return Turn(uuid4(), ordinal, T0 + timedelta(seconds=ordinal), role, kind, content, usage)


def one(word: str) -> int:
    return 1


def test_consecutive_turns_share_a_window_up_to_the_budget() -> None:
    turns = [turn(i, "user" if i % 2 else "assistant", words(30, f"t{i}_")) for i in range(10)]
    chunks = chunk_session(turns, ChunkPolicy(window_tokens=100), one)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert all(len(c.content.split()) <= 100 for c in chunks)
    assert sum(len(c.content.split()) for c in chunks) == 300  # every word once, no overlap
    assert len(chunks) == 4  # 300 tokens in windows of about 75, none a short leftover
    assert chunks[0].source_id == turns[0].id and chunks[0].occurred_at == turns[0].occurred_at


def test_system_prompts_are_not_chunked_unless_asked() -> None:
    turns = [turn(0, "system", "You are an airline agent."), turn(1, "user", "cancel my flight")]
    assert [c.content for c in chunk_session(turns, ChunkPolicy(), one)] == ["cancel my flight"]
    both = chunk_session(turns, ChunkPolicy(chunk_system_prompts=True), one)
    assert "airline agent" in both[0].content


def test_a_long_turn_is_split_with_overlap() -> None:
    chunks = chunk_session(
        [turn(0, "assistant", words(250))],
        ChunkPolicy(window_tokens=100, split_overlap_tokens=10),
        one,
    )
    parts = [c.content.split() for c in chunks]
    assert all(len(p) <= 100 for p in parts)
    assert parts[0][-10:] == parts[1][:10]
    assert parts[-1][-1] == "w249"


def test_tool_results_are_cut_to_their_head_or_left_out() -> None:
    turns = [
        turn(0, "assistant", 'get_user_details {"user_id": "mia_li_3668"}', kind="tool_call"),
        turn(1, "tool", words(100, "field"), kind="tool_result"),
    ]
    cut = chunk_session(turns, ChunkPolicy(tool_result_tokens=8), one)
    assert len(cut) == 1 and "field7" in cut[0].content and "field8" not in cut[0].content
    assert cut[0].source_kind == "tool_call"
    dropped = chunk_session(turns, ChunkPolicy(tool_result_tokens=0), one)
    assert "field0" not in dropped[0].content


def test_role_labels_are_a_setting() -> None:
    turns = [turn(0, "user", "hello"), turn(1, "assistant", "refund", kind="tool_call")]
    labelled = chunk_session(turns, ChunkPolicy(role_labels=True), one)[0].content
    assert labelled == "user: hello\nassistant calls refund"
    assert chunk_session(turns, ChunkPolicy(), one)[0].content == "hello\nrefund"


def test_summaries_and_notes_stand_alone() -> None:
    turns = [
        turn(0, "user", "a"),
        turn(1, "assistant", "summary text", kind="summary"),
        turn(2, "user", "b"),
        turn(3, "operator", "a note", kind="operator_note"),
    ]
    kinds = [c.source_kind for c in chunk_session(turns, ChunkPolicy(), one)]
    assert kinds == ["transcript_message", "session_summary", "transcript_message", "operator_note"]


def test_source_kinds_follow_the_contract() -> None:
    usage = uuid4()
    gateway = turn(0, "assistant", "x", usage=usage)
    assert source_kind(gateway) == "gateway_interaction"
    assert chunk_session([gateway], ChunkPolicy(), one)[0].source_id == usage
    assert source_kind(turn(0, "tool", "x", kind="tool_result")) == "tool_call"
    assert source_kind(turn(0, "agent", "x", kind="browser_step")) == "browser_step"


def test_token_cost_comes_from_the_embedder() -> None:
    expensive = chunk_session(
        [turn(0, "user", words(40))],
        ChunkPolicy(window_tokens=50, split_overlap_tokens=0),
        lambda w: 3,
    )
    assert len(expensive) == 3  # 120 tokens in windows of at most 50


def test_chunking_is_deterministic_and_ids_are_derived() -> None:
    turns = [turn(i, "user", words(50, f"x{i}")) for i in range(6)]
    first = chunk_session(turns, ChunkPolicy(window_tokens=120), one)
    assert first == chunk_session(list(reversed(turns)), ChunkPolicy(window_tokens=120), one)
    session = uuid4()
    assert chunk_id(session, 3) == chunk_id(session, 3) != chunk_id(session, 4)


def test_blank_turns_and_empty_sessions_give_no_chunks() -> None:
    assert chunk_session([], ChunkPolicy(), one) == []
    assert chunk_session([turn(0, "user", "   ")], ChunkPolicy(), one) == []


def test_overlap_turns_repeat_the_last_turn() -> None:
    turns = [turn(i, "user", words(40, f"t{i}_")) for i in range(4)]
    chunks = chunk_session(turns, ChunkPolicy(window_tokens=90, overlap_turns=1), one)
    assert chunks[1].content.startswith(chunks[0].content.split("\n")[-1])
