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
from indexer.chunking import ChunkPolicy, Turn, chunk_id, chunk_session
from indexer.embedders import Embedder


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

    Only chunks whose id the indexer derived are replaced or deleted: imported chunks stay."""
    sized = policy_for(policy, embedder)
    async with engine.begin() as conn:
        if not await sql.lock_session(conn, account_id, session.id):
            return None
        rows = (await activity_by_session(conn, account_id, [session.id]))[session.id]
        turns = [
            Turn(r.id, r.ordinal, r.occurred_at, r.role, r.kind, r.content, r.api_usage_id)
            for r in rows
        ]
        chunks = chunk_session(turns, sized, embedder.token_cost)
        stored = {c.id: c for c in await sql.stored_chunks(conn, account_id, session.id)}
        wanted: dict[UUID, dict[str, Any]] = {}
        for chunk in chunks:
            cid = chunk_id(session.id, chunk.chunk_index)
            wanted[cid] = {
                "account_id": account_id,
                "id": cid,
                "runtime_session_id": session.id,
                "source_kind": chunk.source_kind,
                "source_id": chunk.source_id,
                "chunk_index": chunk.chunk_index,
                "occurred_at": chunk.occurred_at,
                "role": chunk.role,
                "content": chunk.content,
                "content_hash": content_hash(chunk.content),
            }
        changed = _to_write(wanted, stored, embedder.identity)
        ours = [c.id for c in stored.values() if c.id == chunk_id(session.id, c.chunk_index)]
        await sql.upsert_chunks(conn, changed)
        await sql.delete_chunks(conn, account_id, [cid for cid in ours if cid not in wanted])
        await sql.record_chunking(
            conn, account_id, session, fingerprint(policy, embedder), len(chunks)
        )
    return len(changed)


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
