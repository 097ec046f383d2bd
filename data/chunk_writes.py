"""The indexer's chunk writes: the sessions whose activity changed since they were chunked,
their stored chunks, the chunks written and deleted, and what was chunked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.indexing import DENSE_RESET


@dataclass(frozen=True, slots=True)
class StaleSession:
    id: UUID
    activity_count: int
    last_ordinal: int | None


@dataclass(frozen=True, slots=True)
class StoredChunk:
    id: UUID
    chunk_index: int
    content_hash: bytes | None
    embedding_model: str | None


async def stale_sessions(
    conn: AsyncConnection, account_id: UUID, policy: str, only: UUID | None = None
) -> list[StaleSession]:
    """Sessions never chunked, whose activity or chunking policy changed since, or whose
    turns the live receiver changed (session_changes); with `only`, that session if it is."""
    rows = await conn.execute(
        sa.text(
            "SELECT s.id, act.n, act.last FROM runtime_sessions s "
            "CROSS JOIN LATERAL (SELECT count(*)::int AS n, max(a.ordinal) AS last "
            "  FROM runtime_session_activity a "
            "  WHERE a.account_id = s.account_id AND a.runtime_session_id = s.id) AS act "
            "LEFT JOIN session_chunking k "
            "  ON k.account_id = s.account_id AND k.runtime_session_id = s.id "
            "WHERE s.account_id = :account_id AND (s.id = :only OR :only IS NULL) "
            "  AND (k.runtime_session_id IS NULL "
            "  OR k.policy <> :policy OR k.activity_count <> act.n "
            "  OR k.last_ordinal IS DISTINCT FROM act.last "
            "  OR EXISTS (SELECT 1 FROM session_changes ch WHERE ch.account_id = s.account_id "
            "    AND ch.runtime_session_id = s.id)) "
            "ORDER BY s.started_at, s.id"
        ),
        {"account_id": account_id, "policy": policy, "only": only},
    )
    return [StaleSession(*row) for row in rows]


async def changed_sessions(conn: AsyncConnection, account_id: UUID) -> list[StaleSession]:
    """The sessions whose turns the live receiver changed (session_changes), the stale ones a
    pass woken by it chunks: read from their marks, not from every session of the account."""
    rows = await conn.execute(
        sa.text(
            "SELECT s.id, act.n, act.last FROM session_changes ch "
            "JOIN runtime_sessions s ON s.account_id = ch.account_id "
            "  AND s.id = ch.runtime_session_id "
            "CROSS JOIN LATERAL (SELECT count(*)::int AS n, max(a.ordinal) AS last "
            "  FROM runtime_session_activity a "
            "  WHERE a.account_id = s.account_id AND a.runtime_session_id = s.id) AS act "
            "WHERE ch.account_id = :account_id ORDER BY s.started_at, s.id"
        ),
        {"account_id": account_id},
    )
    return [StaleSession(*row) for row in rows]


@dataclass(frozen=True, slots=True)
class Restart:
    """Where a session changed only at its end is chunked again from: the first turn of its
    last stored chunk (`ordinal`), written from chunk index `chunk_index` on; the chunks
    before it are kept, with their ids and vectors."""

    ordinal: int
    chunk_index: int


async def restart_of(
    conn: AsyncConnection, account_id: UUID, session_id: UUID, policy: str
) -> Restart | None:
    """Where the session can be chunked again from, if only its end changed: the live
    receiver marked it changed from a turn at or after its last chunk's first turn, it was
    chunked under this policy, and its chunks are all the indexer's, each from a turn.
    None: it is chunked whole. The change mark is taken (deleted) in the caller's
    transaction either way."""
    row = (
        await conn.execute(
            sa.text(
                "WITH change AS (DELETE FROM session_changes "
                "  WHERE account_id = :a AND runtime_session_id = :s RETURNING from_ordinal), "
                "chunks AS (SELECT c.chunk_index, c.id, a.ordinal FROM session_chunks c "
                "  LEFT JOIN runtime_session_activity a "
                "    ON a.account_id = c.account_id AND a.id = c.source_id "
                "  WHERE c.account_id = :a AND c.runtime_session_id = :s), "
                "last AS (SELECT ordinal FROM chunks ORDER BY chunk_index DESC LIMIT 1) "
                "SELECT (SELECT from_ordinal FROM change), (SELECT ordinal FROM last), "
                "  (SELECT min(chunk_index) FROM chunks "
                "    WHERE ordinal >= (SELECT ordinal FROM last)), "
                "  (SELECT count(*) FILTER (WHERE ordinal IS NULL) FROM chunks), "
                "  EXISTS (SELECT 1 FROM session_chunking k WHERE k.account_id = :a "
                "    AND k.runtime_session_id = :s AND k.policy = :policy)"
            ),
            {"a": account_id, "s": session_id, "policy": policy},
        )
    ).one()
    changed, last, first_index, unmatched, same_policy = row
    if changed is None or last is None or unmatched or not same_policy or changed < last:
        return None
    return Restart(last, first_index)


async def activity_extent(
    conn: AsyncConnection, account_id: UUID, session_id: UUID
) -> tuple[int, int | None]:
    """The session's turns: how many, and the last ordinal (what its chunking records)."""
    a = t.runtime_session_activity.c
    row = await conn.execute(
        sa.select(sa.func.count(), sa.func.max(a.ordinal)).where(
            a.account_id == account_id, a.runtime_session_id == session_id
        )
    )
    count, last = row.one()
    return int(count), last


async def lock_session(conn: AsyncConnection, account_id: UUID, session_id: UUID) -> bool:
    """Lock the session row for this transaction; False when another worker holds it."""
    row = await conn.execute(
        sa.text(
            "SELECT 1 FROM runtime_sessions WHERE account_id = :account_id AND id = :id "
            "FOR NO KEY UPDATE SKIP LOCKED"
        ),
        {"account_id": account_id, "id": session_id},
    )
    return row.first() is not None


async def stored_chunks(
    conn: AsyncConnection, account_id: UUID, session_id: UUID
) -> list[StoredChunk]:
    c = t.session_chunks.c
    rows = await conn.execute(
        sa.select(c.id, c.chunk_index, c.content_hash, c.embedding_model).where(
            c.account_id == account_id, c.runtime_session_id == session_id
        )
    )
    return [StoredChunk(*row) for row in rows]


async def upsert_chunks(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> None:
    """Write new or changed chunks: their text changed, so any vector of theirs goes (the
    dense model's too). One statement, compiled once, run for every row."""
    if rows:
        await conn.execute(_UPSERT, [{**row, **_RESET} for row in rows])


_RESET = {
    "embedding_state": "pending",
    "embedding": None,
    "embedding_model": None,
    "embedded_at": None,
    "embed_attempts": 0,
    "embed_error": None,
    **DENSE_RESET,
}


def _upsert() -> sa.Insert:
    """Each row's `searchable` (its content with the credentials left out) becomes its
    search words."""
    stmt = insert(t.session_chunks).values(
        search_terms=sa.func.search_terms_of(sa.bindparam("searchable", type_=sa.Text))
    )
    kept = ("account_id", "id", "redaction_state")
    updated = {
        c.name: stmt.excluded[c.name]
        for c in t.session_chunks.columns
        if c.name not in kept and not c.computed
    }
    return stmt.on_conflict_do_update(index_elements=["account_id", "id"], set_=updated)


_UPSERT = _upsert()


async def delete_chunks(conn: AsyncConnection, account_id: UUID, ids: Sequence[UUID]) -> None:
    if ids:
        c = t.session_chunks.c
        await conn.execute(
            sa.delete(t.session_chunks).where(c.account_id == account_id, c.id.in_(list(ids)))
        )


async def record_chunking(
    conn: AsyncConnection, account_id: UUID, session: StaleSession, policy: str, chunk_count: int
) -> None:
    await conn.execute(
        _RECORD,
        {
            "account_id": account_id,
            "runtime_session_id": session.id,
            "policy": policy,
            "activity_count": session.activity_count,
            "last_ordinal": session.last_ordinal,
            "chunk_count": chunk_count,
        },
    )


def _record() -> sa.Insert:
    stmt = insert(t.session_chunking).values(chunked_at=sa.func.now())
    changed = ("policy", "activity_count", "last_ordinal", "chunk_count", "chunked_at")
    return stmt.on_conflict_do_update(
        index_elements=["account_id", "runtime_session_id"],
        set_={k: stmt.excluded[k] for k in changed},
    )


_RECORD = _record()
