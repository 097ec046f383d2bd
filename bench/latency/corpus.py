"""A synthetic multi-tenant corpus: Zipf-sized accounts, sessions of 5 to 400 chunks,
clustered topics shared across accounts, a share of chunks not clear; loaded by COPY."""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import numpy as np

from bench.common.synthetic import MODEL, SUBTOPICS, TOPICS, unit_rows
from data.import_rows import IMPORT_COLUMNS
from data.model_identity import ModelIdentity

IDENTITY = ModelIdentity.parse(MODEL)
# weights of the parts of a chunk vector: topic centre, sub-topic (the phase of the
# workflow), the session's own direction, per-chunk noise
W_SUB, W_SESSION, W_NOISE = 0.8, 0.5, 0.55
SHARE_NOT_CLEAR = 0.04
SHARE_PENDING = 0.02
SMALLEST_ACCOUNT = 300
# Beside the Zipf accounts, one account of short chat-like sessions that stays on the exact
# path (its comparable chunks under the default exact-scan size) with more than 50 sessions:
# what a page of 50 on the exact path is measured on.
CHAT_CHUNKS, CHAT_LONGEST = 900, 30


@dataclass
class Account:
    id: uuid.UUID
    name: str
    key: str
    size: int  # chunks
    longest: int = 400  # chunks of its longest session
    sessions: list[uuid.UUID] = field(default_factory=list)


def account_sizes(total: int, smallest: int = SMALLEST_ACCOUNT) -> list[int]:
    """Zipf sizes k^-s: the largest a third of the table, the smallest about `smallest`."""
    best: tuple[float, int, float] | None = None
    for k in range(3, 2000):
        s = math.log(total / 3 / smallest) / math.log(k)
        mass = sum(i**-s for i in range(1, k + 1))
        gap = abs(mass - 3.0)
        if best is None or gap < best[0]:
            best = (gap, k, s)
    assert best is not None
    _, k, s = best
    raw = np.array([i**-s for i in range(1, k + 1)])
    sizes = np.maximum(np.round(raw / raw.sum() * total).astype(int), smallest)
    sizes[0] += total - int(sizes.sum())
    return [int(x) for x in sizes]


def _uuid(rng: np.random.Generator) -> uuid.UUID:
    return uuid.UUID(bytes=rng.bytes(16), version=4)


@dataclass
class Corpus:
    accounts: list[Account]
    seed: int
    total: int

    @classmethod
    def plan(cls, total: int, seed: int = 7) -> Corpus:
        rng = np.random.default_rng(seed)
        accounts = [
            Account(_uuid(rng), f"bench-{i:03d}", f"sk-bench-{i:03d}-{seed}", size)
            for i, size in enumerate(account_sizes(total))
        ]
        chat = Account(_uuid(rng), "chat-000", f"sk-bench-chat-{seed}", CHAT_CHUNKS, CHAT_LONGEST)
        return cls([*accounts, chat], seed, total)


def session_lengths(rng: np.random.Generator, size: int, longest: int = 400) -> list[int]:
    """Log-uniform lengths in [5, longest] summing to size."""
    lengths: list[int] = []
    left = size
    while left > 0:
        n = round(math.exp(rng.uniform(math.log(5), math.log(longest))))
        n = min(n, left)
        if left - n < 5:
            n = left
        lengths.append(n)
        left -= n
    return lengths


# The columns an import writes, in its order: the COPY here writes the same, but for a
# chunk's search words (made in the database from its content): nothing here searches.
SESSION_COLUMNS = IMPORT_COLUMNS["session"]
CHUNK_COLUMNS = tuple(c for c in IMPORT_COLUMNS["chunk"] if c != "search_terms")
_SESSION_KEYS, _CHUNK_KEYS = frozenset(SESSION_COLUMNS), frozenset(CHUNK_COLUMNS)
Row = tuple[object, ...]


def session_row(
    account: uuid.UUID, session: uuid.UUID, title: str, source: str, started: datetime, n: int
) -> Row:
    """A completed agent session of n minutes, in COPY column order."""
    values = {
        "account_id": account,
        "id": session,
        "title": title,
        "source_type": "agent",
        "source_id": f"src-{source}",
        "reference": f"ref-{source}",
        "status": "completed",
        "started_at": started,
        "last_activity_at": started + timedelta(minutes=n),
    }
    return _ordered(SESSION_COLUMNS, _SESSION_KEYS, values)


def chunk_row(
    account: uuid.UUID,
    chunk: uuid.UUID,
    session: uuid.UUID,
    source: uuid.UUID,
    index: int,
    at: datetime,
    content: str,
    vector: np.ndarray | None,
    embedded_at: datetime,
    redaction: str = "clear",
) -> Row:
    """An assistant's transcript message, in COPY column order: embedded with MODEL at
    embedded_at, or pending when it has no vector."""
    values = {
        "account_id": account,
        "id": chunk,
        "runtime_session_id": session,
        "source_kind": "transcript_message",
        "source_id": source,
        "chunk_index": index,
        "occurred_at": at,
        "role": "assistant",
        "content": content,
        "content_hash": hashlib.sha256(content.encode()).digest(),
        "redaction_state": redaction,
        "embedding_state": "pending" if vector is None else "embedded",
        "embedding": vector,
        "embedding_model": None if vector is None else MODEL,
        "embedded_at": None if vector is None else embedded_at,
    }
    return _ordered(CHUNK_COLUMNS, _CHUNK_KEYS, values)


def _ordered(columns: tuple[str, ...], keys: frozenset[str], values: dict[str, object]) -> Row:
    if values.keys() != keys:
        raise ValueError(f"columns {sorted(keys ^ values.keys())} are not the import's")
    return tuple(values[c] for c in columns)


async def copy_rows(conn: asyncpg.Connection, sessions: list[Row], chunks: list[Row]) -> None:
    """Sessions, then their chunks, by binary COPY (the connection knows pgvector's type)."""
    await conn.copy_records_to_table("runtime_sessions", records=sessions, columns=SESSION_COLUMNS)
    await conn.copy_records_to_table("session_chunks", records=chunks, columns=CHUNK_COLUMNS)


# a column of the rows that the import file does not carry: the line's account (a chunk's
# is its session's) and the hash the import computes
_NOT_IN_FILE = {"session": set(), "chunk": {"account_id", "content_hash"}}


def _line(kind: str, columns: tuple[str, ...], row: Row) -> str:
    record: dict[str, object] = {"type": kind}
    for column, value in zip(columns, row, strict=True):
        if column in _NOT_IN_FILE[kind]:
            continue
        if isinstance(value, np.ndarray):
            value = [float(f"{x:.6g}") for x in value.tolist()]  # as agents write them
        elif isinstance(value, (uuid.UUID, datetime)):
            value = value.isoformat() if isinstance(value, datetime) else str(value)
        record[column] = value
    return json.dumps(record, separators=(",", ":"))


def write_import_file(path: Path, sessions: list[Row], chunks: list[Row]) -> Path:
    """The rows as a `similar-sessions import` file (JSON lines): sessions, then chunks."""
    with path.open("w") as out:
        for row in sessions:
            out.write(_line("session", SESSION_COLUMNS, row) + "\n")
        for row in chunks:
            out.write(_line("chunk", CHUNK_COLUMNS, row) + "\n")
    return path


def generate_account(
    corpus: Corpus, index: int, centres: np.ndarray, subs: np.ndarray, now: datetime
) -> tuple[list[Row], list[Row]]:
    """(session rows, chunk rows) of one account, in COPY column order."""
    account = corpus.accounts[index]
    rng = np.random.default_rng([corpus.seed, index])
    lengths = session_lengths(rng, account.size, account.longest)
    # each account runs a handful of workflows: topics drawn Zipf from a random subset
    own = rng.choice(TOPICS, size=min(TOPICS, 2 + len(lengths) // 10), replace=False)
    weights = 1 / np.arange(1, len(own) + 1) ** 1.1
    topic_of = own[rng.choice(len(own), size=len(lengths), p=weights / weights.sum())]
    session_dirs = unit_rows(rng, len(lengths))
    sessions, chunks = [], []
    account.sessions = []
    for s, n in enumerate(lengths):
        sid = _uuid(rng)
        account.sessions.append(sid)
        started = now - timedelta(days=float(rng.uniform(0, 180)))
        title = f"bench session {s} of {account.name}"
        sessions.append(session_row(account.id, sid, title, str(sid)[:8], started, n))
        t = int(topic_of[s])
        phase = np.minimum((np.arange(n) * SUBTOPICS) // max(n, 1), SUBTOPICS - 1)
        jitter = rng.random(n) < 0.25
        phase = np.where(jitter, rng.integers(0, SUBTOPICS, n), phase)
        vectors = (
            centres[t]
            + W_SUB * subs[t, phase]
            + W_SESSION * session_dirs[s]
            + W_NOISE * unit_rows(rng, n)
        )
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        fate = rng.random(n)
        for j in range(n):
            cid = _uuid(rng)
            content = f"passage {j} of session {s} of {account.name} on topic {t}"
            vector = None if fate[j] < SHARE_PENDING else vectors[j]
            withheld = SHARE_PENDING <= fate[j] < SHARE_PENDING + SHARE_NOT_CLEAR
            redaction = "withheld" if withheld else "clear"
            at = started + timedelta(minutes=j)
            source = _uuid(rng)  # drawn after the chunk's id, as ever: the corpus stays the same
            chunks.append(
                chunk_row(account.id, cid, sid, source, j, at, content, vector, started, redaction)
            )
    return sessions, chunks


def now_utc() -> datetime:
    return datetime.now(UTC)
