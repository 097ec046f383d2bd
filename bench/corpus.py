"""A synthetic multi-tenant corpus: Zipf-sized accounts, sessions of 5 to 400 chunks,
clustered topics shared across accounts, a share of chunks not clear; loaded by COPY."""

from __future__ import annotations

import hashlib
import math
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np

DIMS = 384
MODEL = "local:hash-384@384"
TOPICS = 400
SUBTOPICS = 6
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


def _unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


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


def generate_account(
    corpus: Corpus, index: int, centres: np.ndarray, subs: np.ndarray, now: datetime
) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """(session rows, chunk rows) of one account, in COPY column order."""
    account = corpus.accounts[index]
    rng = np.random.default_rng([corpus.seed, index])
    lengths = session_lengths(rng, account.size, account.longest)
    # each account runs a handful of workflows: topics drawn Zipf from a random subset
    own = rng.choice(TOPICS, size=min(TOPICS, 2 + len(lengths) // 10), replace=False)
    weights = 1 / np.arange(1, len(own) + 1) ** 1.1
    topic_of = own[rng.choice(len(own), size=len(lengths), p=weights / weights.sum())]
    session_dirs = _unit_rows(rng, len(lengths))
    sessions, chunks = [], []
    account.sessions = []
    for s, n in enumerate(lengths):
        sid = _uuid(rng)
        account.sessions.append(sid)
        started = now - timedelta(days=float(rng.uniform(0, 180)))
        sessions.append(
            (
                account.id,
                sid,
                f"bench session {s} of {account.name}",
                "agent",
                f"src-{str(sid)[:8]}",
                f"ref-{str(sid)[:8]}",
                "completed",
                started,
                started + timedelta(minutes=n),
            )
        )
        t = int(topic_of[s])
        phase = np.minimum((np.arange(n) * SUBTOPICS) // max(n, 1), SUBTOPICS - 1)
        jitter = rng.random(n) < 0.25
        phase = np.where(jitter, rng.integers(0, SUBTOPICS, n), phase)
        vectors = (
            centres[t]
            + W_SUB * subs[t, phase]
            + W_SESSION * session_dirs[s]
            + W_NOISE * _unit_rows(rng, n)
        )
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        fate = rng.random(n)
        for j in range(n):
            cid = _uuid(rng)
            content = f"passage {j} of session {s} of {account.name} on topic {t}"
            if fate[j] < SHARE_PENDING:
                redaction, state, vector, model, embedded_at = "clear", "pending", None, None, None
            else:
                redaction = "withheld" if fate[j] < SHARE_PENDING + SHARE_NOT_CLEAR else "clear"
                state, vector, model = "embedded", vectors[j], MODEL
                embedded_at = started
            chunks.append(
                (
                    account.id,
                    cid,
                    sid,
                    "transcript_message",
                    _uuid(rng),
                    j,
                    started + timedelta(minutes=j),
                    "assistant",
                    content,
                    hashlib.sha256(content.encode()).digest(),
                    redaction,
                    state,
                    vector,
                    model,
                    embedded_at,
                )
            )
    return sessions, chunks


SESSION_COLUMNS = [
    "account_id",
    "id",
    "title",
    "source_type",
    "source_id",
    "reference",
    "status",
    "started_at",
    "last_activity_at",
]
CHUNK_COLUMNS = [
    "account_id",
    "id",
    "runtime_session_id",
    "source_kind",
    "source_id",
    "chunk_index",
    "occurred_at",
    "role",
    "content",
    "content_hash",
    "redaction_state",
    "embedding_state",
    "embedding",
    "embedding_model",
    "embedded_at",
]


def topic_space(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, 999_999])
    centres = _unit_rows(rng, TOPICS)
    subs = _unit_rows(rng, TOPICS * SUBTOPICS).reshape(TOPICS, SUBTOPICS, DIMS)
    return centres, subs


def now_utc() -> datetime:
    return datetime.now(UTC)
