"""Turns a session's activity into chunks: windows of consecutive turns sized for the
embedder. Pure: rows in, chunks out, no database and no model."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID, uuid5

from config.settings import default_of

# Chunk ids are uuid5(CHUNK_NAMESPACE, "<session id>:<chunk index>"), so a chunk the
# indexer made can be told from one a file imported, and re-chunking updates in place.
CHUNK_NAMESPACE = UUID("5f0b3c3e-8a4e-4d4f-9a57-6f1d0c2b7e10")

# Activity kinds that are passages of their own, never windowed with their neighbours.
STANDALONE_KINDS = {
    "summary": "session_summary",
    "session_summary": "session_summary",
    "note": "operator_note",
    "operator_note": "operator_note",
    "flow_log": "flow_log",
    "artifact": "artifact",
}
TOOL_KINDS = frozenset({"tool_call", "tool_result", "tool"})

TokenCost = Callable[[str], int]
_WORD = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class Turn:
    """One runtime_session_activity row, as the chunker reads it."""

    id: UUID
    ordinal: int
    occurred_at: datetime
    role: str
    kind: str
    content: str
    api_usage_id: UUID | None = None


@dataclass(frozen=True, slots=True)
class ChunkPolicy:
    """How turns become chunks; each field is a setting, its default the declared one."""

    window_tokens: int = default_of("chunk_tokens")
    overlap_turns: int = default_of("chunk_overlap_turns")
    split_overlap_tokens: int = default_of("split_overlap_tokens")
    tool_result_tokens: int = default_of("tool_result_tokens")
    chunk_system_prompts: bool = default_of("chunk_system_prompts")
    role_labels: bool = default_of("chunk_role_labels")

    def fingerprint(self) -> str:
        return (
            f"w{self.window_tokens}-o{self.overlap_turns}-s{self.split_overlap_tokens}"
            f"-t{self.tool_result_tokens}-sys{int(self.chunk_system_prompts)}"
            f"-r{int(self.role_labels)}"
        )


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_index: int
    source_kind: str
    source_id: UUID
    occurred_at: datetime
    role: str | None
    content: str


@dataclass(frozen=True, slots=True)
class _Piece:
    """A turn, or a part of a long turn, with its text and its cost in embedder tokens."""

    turn: Turn
    source_kind: str
    text: str
    cost: int


def chunk_id(session_id: UUID, chunk_index: int) -> UUID:
    return uuid5(CHUNK_NAMESPACE, f"{session_id}:{chunk_index}")


def source_kind(turn: Turn) -> str:
    """The contract's source kind of a turn."""
    if turn.api_usage_id is not None:
        return "gateway_interaction"
    if turn.kind in STANDALONE_KINDS:
        return STANDALONE_KINDS[turn.kind]
    if turn.kind in TOOL_KINDS or turn.role == "tool":
        return "tool_call"
    if turn.kind == "browser_step":
        return "browser_step"
    return "transcript_message"


def is_tool_result(turn: Turn) -> bool:
    return turn.kind in ("tool_result", "tool") or turn.role == "tool"


def _head(turn: Turn, tokens: int, cost: TokenCost) -> Turn:
    """A tool result cut to its first tokens: they name what was looked up; the rest is
    detail that recurs in every session that looks up the same record."""
    words: list[str] = []
    used = 0
    for word in _WORD.findall(turn.content):
        used += max(1, cost(word))
        if used > tokens:
            return replace(turn, content=" ".join(words) + " …")
        words.append(word)
    return turn


def label(turn: Turn, policy: ChunkPolicy) -> str:
    text = turn.content.strip()
    if not policy.role_labels:
        return text
    if turn.kind == "tool_call":
        return f"{turn.role} calls {text}"
    return f"{turn.role}: {text}"


def chunk_session(turns: Sequence[Turn], policy: ChunkPolicy, cost: TokenCost) -> list[Chunk]:
    """The session's chunks in order: runs of conversational turns packed into windows of
    at most policy.window_tokens, stand-alone kinds alone, long turns split with overlap."""
    chunks: list[Chunk] = []
    run: list[_Piece] = []
    for turn in sorted(turns, key=lambda t: (t.ordinal, t.occurred_at, t.id)):
        if not turn.content.strip():
            continue
        if turn.role == "system" and not policy.chunk_system_prompts:
            continue
        kind = source_kind(turn)
        if is_tool_result(turn):
            if policy.tool_result_tokens == 0:
                continue
            turn = _head(turn, policy.tool_result_tokens, cost)
        pieces = _pieces(turn, kind, label(turn, policy), policy, cost)
        if kind in STANDALONE_KINDS.values():
            _emit_windows(run, policy, chunks)
            run = []
            for piece in pieces:
                _emit(chunks, [piece])
        else:
            run.extend(pieces)
    _emit_windows(run, policy, chunks)
    return chunks


def _pieces(turn: Turn, kind: str, text: str, policy: ChunkPolicy, cost: TokenCost) -> list[_Piece]:
    """The turn whole when it fits a window, else parts of it overlapping by some tokens."""
    words = _WORD.findall(text)
    costs = [max(1, cost(w)) for w in words]
    total = sum(costs)
    if total <= policy.window_tokens:
        return [_Piece(turn, kind, text, total)]
    parts, start = [], 0
    while start < len(words):
        end, used = start, 0
        while end < len(words) and (used + costs[end] <= policy.window_tokens or end == start):
            used += costs[end]
            end += 1
        parts.append(_Piece(turn, kind, " ".join(words[start:end]), used))
        if end >= len(words):
            break
        back, kept = end, 0
        while back - 1 > start and kept + costs[back - 1] <= policy.split_overlap_tokens:
            back -= 1
            kept += costs[back]
        start = back
    return parts


def _emit_windows(run: list[_Piece], policy: ChunkPolicy, chunks: list[Chunk]) -> None:
    """Pack a run of pieces into windows of about even size, none over window_tokens, so no
    window is a short leftover of generic turns; a window may begin with the last
    overlap_turns pieces of the one before."""
    if not run:
        return
    total = sum(p.cost for p in run)
    target = math.ceil(total / math.ceil(total / policy.window_tokens))
    windows: list[list[_Piece]] = [[]]
    used = 0
    for piece in run:
        window = windows[-1]
        if window and (used >= target or used + piece.cost > policy.window_tokens):
            carried = window[len(window) - policy.overlap_turns :] if policy.overlap_turns else []
            if sum(p.cost for p in carried) + piece.cost > policy.window_tokens:
                carried = []
            windows.append(list(carried))
            window, used = windows[-1], sum(p.cost for p in carried)
        window.append(piece)
        used += piece.cost
    if len(windows) > 1:
        last, before = windows[-1], windows[-2]
        fresh = [p for p in last if p not in before]
        if (
            sum(p.cost for p in fresh) < target / 2
            and _cost(before) + _cost(fresh) <= policy.window_tokens
        ):
            before.extend(fresh)
            windows.pop()
    for window in windows:
        _emit(chunks, window)


def _cost(pieces: list[_Piece]) -> int:
    return sum(p.cost for p in pieces)


def _emit(chunks: list[Chunk], window: list[_Piece]) -> None:
    first = window[0]
    chunks.append(
        Chunk(
            chunk_index=len(chunks),
            source_kind=first.source_kind,
            source_id=first.turn.api_usage_id or first.turn.id,
            occurred_at=first.turn.occurred_at,
            role=first.turn.role,
            content="\n".join(p.text for p in window),
        )
    )
