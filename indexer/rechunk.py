"""Brings a session's stored chunks in line with its activity, in one transaction per
session, under a row lock so two workers never chunk the same session at once."""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncEngine

from data import chunk_writes as sql
from data.import_rows import content_hash
from data.model_identity import ModelIdentity
from data.sessions import activity_by_session
from indexer import lexical
from indexer.chunking import Chunk, ChunkPolicy, Turn, chunk_id, chunk_session
from indexer.embedders import Embedder
from indexer.masked import without_credentials


def policy_for(policy: ChunkPolicy, embedder: Embedder) -> ChunkPolicy:
    """The policy with windows no longer than the embedder reads."""
    if embedder.max_tokens is None or embedder.max_tokens >= policy.window_tokens:
        return policy
    return replace(policy, window_tokens=embedder.max_tokens)


def fingerprint(policy: ChunkPolicy, embedder: Embedder) -> str:
    return f"{embedder.identity}|{policy_for(policy, embedder).fingerprint()}"


async def rechunk_session(
    engine: AsyncEngine,
    account_id: UUID,
    session: sql.StaleSession,
    policy: ChunkPolicy,
    embedder: Embedder,
) -> int | None:
    """Write the session's chunks; the number written, or None when another worker has it.

    Only chunks whose id the indexer derived are replaced or deleted: imported chunks stay.
    A session the live receiver changed only at its end is chunked from its last chunk's
    first turn on: its earlier chunks keep their ids and vectors (data/chunk_writes.Restart)."""
    sized, print_ = policy_for(policy, embedder), fingerprint(policy, embedder)
    async with engine.begin() as conn:
        if not await sql.lock_session(conn, account_id, session.id):
            return None
        if not await sql.stale_sessions(conn, account_id, print_, session.id):
            return None  # another worker chunked it since it was listed
        stored = {c.id: c for c in await sql.stored_chunks(conn, account_id, session.id)}
        restart = await sql.restart_of(conn, account_id, session.id, print_)
        if restart is not None and not all(_derived(session.id, c) for c in stored.values()):
            restart = None
        since = restart.ordinal if restart is not None else 0
        rows = (await activity_by_session(conn, account_id, [session.id], since))[session.id]
        turns = [
            Turn(r.id, r.ordinal, r.occurred_at, r.role, r.kind, r.content, r.api_usage_id)
            for r in rows
        ]
        offset = restart.chunk_index if restart is not None else 0
        chunks = chunk_session(turns, sized, embedder.token_cost)
        wanted = {
            row["id"]: row for row in (_row(account_id, session.id, c, offset) for c in chunks)
        }
        changed = [
            {**row, "searchable": without_credentials(row["content"])}
            for row in _to_write(wanted, stored, embedder.identity)
        ]
        ours = [
            c.id for c in stored.values() if _derived(session.id, c) and c.chunk_index >= offset
        ]
        await sql.upsert_chunks(conn, changed)
        await sql.delete_chunks(conn, account_id, [cid for cid in ours if cid not in wanted])
        count, last = await sql.activity_extent(conn, account_id, session.id)
        done = sql.StaleSession(session.id, count, last)
        await sql.record_chunking(conn, account_id, done, print_, offset + len(chunks))
    return len(changed)


def _derived(session_id: UUID, chunk: sql.StoredChunk) -> bool:
    """Whether the indexer made the chunk (its id derived from the session and its index)."""
    return chunk.id == chunk_id(session_id, chunk.chunk_index)


def _row(account_id: UUID, session_id: UUID, chunk: Chunk, offset: int) -> dict[str, Any]:
    index = offset + chunk.chunk_index
    return {
        "account_id": account_id,
        "id": chunk_id(session_id, index),
        "runtime_session_id": session_id,
        "source_kind": chunk.source_kind,
        "source_id": chunk.source_id,
        "chunk_index": index,
        "occurred_at": chunk.occurred_at,
        "role": chunk.role,
        "content": chunk.content,
        "content_hash": content_hash(chunk.content),
    }


def _to_write(
    wanted: dict[UUID, dict[str, Any]], stored: dict[UUID, sql.StoredChunk], identity: ModelIdentity
) -> list[dict[str, Any]]:
    """The chunks to write: new ones, those whose text changed, and those another model
    embedded."""
    return [
        row
        for cid, row in wanted.items()
        if cid not in stored
        or stored[cid].content_hash != row["content_hash"]
        or not _embedded_by(stored[cid], identity)
    ]


def _embedded_by(chunk: sql.StoredChunk, identity: ModelIdentity) -> bool:
    """Whether the chunk's vector (if any) is of the model the account now uses: a chunk
    embedded by another model (the account switched models) is written again, to be
    embedded by this one. The lexical family's fits are one model here: a refit re-embeds
    the account itself (indexer/fitting.py)."""
    if chunk.embedding_model is None:
        return True
    if lexical.is_lexical(identity):
        return lexical.is_lexical(ModelIdentity.parse(chunk.embedding_model))
    return chunk.embedding_model == str(identity)
