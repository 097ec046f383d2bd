"""The chunks waiting in a vector slot (data/vector_slots.py): counted, claimed (FOR UPDATE
SKIP LOCKED, the most recently written first), their vectors and windows written, skipped
for want of a direction, their failures counted and retried. A staged fit's slot is a table
of its own, whose count, claim and write are data/next_fits.py's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data import next_fits
from data.model_identity import ModelIdentity
from data.vector_slots import NO_DIRECTION, ClaimedChunk, VectorSlot

__all__ = [
    "ClaimedChunk",
    "claim_pending",
    "pending_count",
    "record_failure",
    "retry_failed",
    "skip_chunks",
    "write_vectors",
    "write_windows",
]

_SUMMARY_ONLY = "(NOT :summaries_only OR source_kind = 'session_summary')"


async def skip_chunks(
    conn: AsyncConnection,
    account_id: UUID,
    ids: Sequence[UUID],
    slot: VectorSlot = VectorSlot.PRIMARY,
) -> int:
    """Mark claimed chunks `skipped` in the slot: their vector would have no direction (their
    error says so, NO_DIRECTION: unlike a repeated chunk, a search still reads it)."""
    if not ids:
        return 0
    result = await conn.execute(
        sa.text(
            f"UPDATE {slot.table} SET {slot.state} = 'skipped', {slot.vector} = NULL, "
            f"{slot.model} = NULL, {slot.embedded_at} = NULL, {slot.error} = :why "
            f"WHERE account_id = :a AND {slot.key} = ANY(CAST(:ids AS uuid[]))"
        ),
        {"a": account_id, "ids": list(ids), "why": NO_DIRECTION},
    )
    return int(result.rowcount)


async def pending_count(
    conn: AsyncConnection,
    account_id: UUID,
    summaries_only: bool,
    slot: VectorSlot = VectorSlot.PRIMARY,
) -> int:
    if slot is VectorSlot.NEXT:
        return await next_fits.waiting(conn, account_id)
    return int(
        (
            await conn.execute(
                sa.text(
                    "SELECT count(*) FROM session_chunks WHERE account_id = :account_id "
                    f"AND {slot.waiting} AND redaction_state = 'clear' AND {_SUMMARY_ONLY}"
                ),
                {"account_id": account_id, "summaries_only": summaries_only},
            )
        ).scalar_one()
    )


async def claim_pending(
    conn: AsyncConnection,
    account_id: UUID,
    summaries_only: bool,
    limit: int,
    slot: VectorSlot = VectorSlot.PRIMARY,
    sessions: Sequence[UUID] | None = None,
) -> list[ClaimedChunk]:
    """Lock up to `limit` clear chunks in scope waiting for the slot's model that no other
    worker holds (of the named sessions only, when named), the most recently written first
    (a staged fit's: data/next_fits.claim):
    after a new fit, the passages of the sessions running or just ended are embedded again
    before the account's older ones. (DESC NULLS LAST is no order of the written index, so
    the planner takes the waiting chunks' partial index and sorts them.)"""
    if slot is VectorSlot.NEXT:
        return await next_fits.claim(conn, account_id, limit, sessions)
    of_sessions = (
        "" if sessions is None else "AND runtime_session_id = ANY(CAST(:sessions AS uuid[])) "
    )
    rows = await conn.execute(
        sa.text(
            "SELECT id, content, runtime_session_id FROM session_chunks "
            "WHERE account_id = :account_id "
            f"AND {slot.waiting} AND redaction_state = 'clear' AND {_SUMMARY_ONLY} "
            f"{of_sessions}"
            "ORDER BY written_seq DESC NULLS LAST, runtime_session_id, chunk_index, id "
            "LIMIT :limit FOR UPDATE SKIP LOCKED"
        ),
        {
            "account_id": account_id,
            "summaries_only": summaries_only,
            "limit": limit,
            **({"sessions": list(sessions)} if sessions else {}),
        },
    )
    return [ClaimedChunk(*row) for row in rows]


async def write_vectors(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    ids: Sequence[UUID],
    vectors: Sequence[str],
    slot: VectorSlot = VectorSlot.PRIMARY,
) -> int:
    """Store the vectors (pgvector text form) of claimed chunks that are still clear."""
    if slot is VectorSlot.NEXT:
        return await next_fits.write(conn, account_id, identity, ids, vectors)
    result = await conn.execute(
        sa.text(
            f"UPDATE session_chunks c SET {slot.vector} = CAST(v.vec AS vector), "
            f"{slot.model} = :model, {slot.state} = 'embedded', {slot.embedded_at} = now(), "
            f"{slot.attempts} = 0, {slot.error} = NULL "
            "FROM unnest(CAST(:ids AS uuid[]), CAST(:vecs AS text[])) AS v(id, vec) "
            "WHERE c.account_id = :account_id AND c.id = v.id AND c.redaction_state = 'clear'"
        ),
        {"account_id": account_id, "model": str(identity), "ids": list(ids), "vecs": list(vectors)},
    )
    return int(result.rowcount)


async def write_windows(
    conn: AsyncConnection,
    account_id: UUID,
    windows: Mapping[UUID, Sequence[str]],
) -> None:
    """The dense model's windows (pgvector text form) of the chunks just embedded in its
    slot, in place of any they had; a chunk of one window has none (it is its own vector)."""
    await conn.execute(
        sa.text(
            "DELETE FROM session_chunk_windows "
            "WHERE account_id = :a AND chunk_id = ANY(CAST(:ids AS uuid[]))"
        ),
        {"a": account_id, "ids": list(windows)},
    )
    rows = [(chunk, n, v) for chunk, vs in windows.items() if len(vs) > 1 for n, v in enumerate(vs)]
    if rows:
        chunks, numbers, vectors = zip(*rows, strict=True)
        await conn.execute(
            sa.text(
                "INSERT INTO session_chunk_windows (account_id, chunk_id, window_index, embedding) "
                "SELECT :a, w.chunk_id, w.n, CAST(w.vec AS vector) "
                "FROM unnest(CAST(:ids AS uuid[]), CAST(:ns AS int[]), CAST(:vecs AS text[])) "
                "AS w(chunk_id, n, vec) JOIN session_chunks c "
                "ON c.account_id = :a AND c.id = w.chunk_id AND c.redaction_state = 'clear'"
            ),
            {"a": account_id, "ids": list(chunks), "ns": list(numbers), "vecs": list(vectors)},
        )


async def record_failure(
    conn: AsyncConnection,
    account_id: UUID,
    ids: Sequence[UUID],
    error: str,
    max_attempts: int,
    slot: VectorSlot = VectorSlot.PRIMARY,
) -> int:
    """Count a failed attempt on claimed chunks and keep its error; those at max_attempts
    become `failed`. Returns how many did."""
    a, state = slot.attempts, slot.state
    result = await conn.execute(
        sa.text(
            f"UPDATE {slot.table} SET {a} = {a} + 1, {slot.error} = :error, "
            f"{state} = CASE WHEN {a} + 1 >= :max_attempts THEN 'failed' ELSE {state} END "
            f"WHERE account_id = :account_id AND {slot.key} = ANY(CAST(:ids AS uuid[])) "
            f"AND {state} = 'pending' RETURNING {state}"
        ),
        {"account_id": account_id, "ids": list(ids), "error": error, "max_attempts": max_attempts},
    )
    return sum(1 for (state_now,) in result if state_now == "failed")


async def retry_failed(conn: AsyncConnection, account_ids: Sequence[UUID] | None) -> int:
    """Put `failed` chunks (of the accounts named, or all) back to `pending`, attempts reset,
    in every slot."""
    where = "" if account_ids is None else "AND account_id = ANY(CAST(:ids AS uuid[])) "
    total = 0
    for slot in VectorSlot:
        result = await conn.execute(
            sa.text(
                f"UPDATE {slot.table} SET {slot.state} = 'pending', {slot.attempts} = 0, "
                f"{slot.error} = NULL WHERE {slot.state} = 'failed' {where}"
            ),
            {} if account_ids is None else {"ids": list(account_ids)},
        )
        total += int(result.rowcount)
    return total
