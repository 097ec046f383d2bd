"""A lexical refit staged beside the served fit (migration 0023): `index --watch` stages the
account's new fit, embeds its passages under it into session_chunk_next while every
comparison reads the served fit's vectors, and swaps them in by one transaction once none
waits. Installed at once, a new fit left every passage without a vector until it was
embedded again, and a session not yet embedded again listed nobody (168 s for 28,000
passages beside a stream)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.model_identity import ModelIdentity
from data.vector_slots import ClaimedChunk, repeated


@dataclass(frozen=True, slots=True)
class StagedFit:
    identity: str
    sessions: int
    weights: bytes | None  # None: not read


async def staged_fit(
    conn: AsyncConnection, account_id: UUID, lock: bool = False, weights: bool = False
) -> StagedFit | None:
    """The account's staged fit, its weights read only when asked (a pass's embedder is
    kept by its process); None when none is. With `lock`, its row is locked until the
    transaction ends (one swap at a time)."""
    f = t.lexical_fits.c
    query = sa.select(
        f.next_identity, f.next_sessions, f.next_weights if weights else sa.null()
    ).where(f.account_id == account_id, f.next_identity.is_not(None))
    row = (await conn.execute(query.with_for_update() if lock else query)).first()
    if row is None:
        return None
    return StagedFit(row[0], row[1], None if row[2] is None else bytes(row[2]))


async def stage(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    sessions: int,
    weights: bytes,
    summaries_only: bool,
) -> int:
    """Stage the fit beside the account's served one (which it must have), every passage to
    embed under it waiting (its summaries only, in that scope); how many wait."""
    await conn.execute(
        sa.update(t.lexical_fits)
        .where(t.lexical_fits.c.account_id == account_id)
        .values(
            next_identity=str(identity),
            next_sessions=sessions,
            next_weights=weights,
            next_fitted_at=sa.func.now(),
        )
    )
    await clear(conn, account_id)
    return await mark_waiting(conn, account_id, summaries_only, every=True)


async def clear(conn: AsyncConnection, account_id: UUID) -> None:
    """The account's staged vectors deleted (a new fit staged, swapped in, or one installed
    at once)."""
    await conn.execute(
        sa.text("DELETE FROM session_chunk_next WHERE account_id = :a"), {"a": account_id}
    )


async def mark_waiting(
    conn: AsyncConnection, account_id: UUID, summaries_only: bool, every: bool = False
) -> int:
    """The account's clear passages in scope the staged fit has no vector of their text of
    (written, or changed, since it was staged) put to wait; how many. A repeated passage,
    which the served model skips, is not embedded (the swap counts it again). Unless
    `every`, only the chunks written after the last one marked are read (a pass's marking;
    one that commits out of order waits for the swap, which marks every one)."""
    result = await conn.execute(
        sa.text(
            "INSERT INTO session_chunk_next AS n (account_id, chunk_id, written_seq) "
            "SELECT c.account_id, c.id, c.written_seq FROM session_chunks c "
            "WHERE c.account_id = :a AND c.redaction_state = 'clear' "
            "AND (:every OR c.written_seq > (SELECT coalesce(max(l.written_seq), 0) "
            "  FROM session_chunk_next l WHERE l.account_id = :a)) "
            f"AND c.embedding_state <> 'failed' AND NOT {repeated('c')} "
            "AND (NOT :summaries_only OR c.source_kind = 'session_summary') "
            "AND NOT EXISTS (SELECT 1 FROM session_chunk_next m "
            "  WHERE m.account_id = :a AND m.chunk_id = c.id "
            "  AND (m.state = 'pending' OR m.content_hash IS NOT DISTINCT FROM c.content_hash)) "
            "ON CONFLICT (account_id, chunk_id) DO UPDATE SET state = 'pending', "
            "embedding = NULL, model = NULL, content_hash = NULL, embedded_at = NULL, "
            "attempts = 0, error = NULL, written_seq = EXCLUDED.written_seq"
        ),
        {"a": account_id, "summaries_only": summaries_only, "every": every},
    )
    return int(result.rowcount)


async def waiting(conn: AsyncConnection, account_id: UUID) -> int:
    """The account's passages waiting under its staged fit."""
    found = await conn.execute(
        sa.text(
            "SELECT count(*) FROM session_chunk_next WHERE account_id = :a AND state = 'pending'"
        ),
        {"a": account_id},
    )
    return int(found.scalar_one())


async def claim(
    conn: AsyncConnection, account_id: UUID, limit: int, sessions: Sequence[UUID] | None
) -> list[ClaimedChunk]:
    """Lock up to `limit` clear passages waiting under the staged fit, and their chunks (so
    that their text cannot change before their vectors are written), that no other worker
    holds, of the named sessions only when named, the most recently written first (in the
    order of the waiting ones' index: a sort of them all took 160 ms at 15,000). Each
    keeps the hash of the text it is embedded from, whatever comes of it (a vector, skipped,
    failed): a passage is marked to wait again only once its text changed."""
    of_sessions = "" if sessions is None else "AND c.runtime_session_id = ANY(:sessions) "
    rows = await conn.execute(
        sa.text(
            "SELECT c.id, c.content, c.runtime_session_id FROM session_chunk_next n "
            "JOIN session_chunks c ON c.account_id = n.account_id AND c.id = n.chunk_id "
            "WHERE n.account_id = :a AND n.state = 'pending' AND c.redaction_state = 'clear' "
            f"{of_sessions}"
            "ORDER BY n.written_seq DESC NULLS LAST, n.chunk_id "
            "LIMIT :limit FOR UPDATE OF n, c SKIP LOCKED"
        ),
        {"a": account_id, "limit": limit, **({"sessions": list(sessions)} if sessions else {})},
    )
    claimed = [ClaimedChunk(*row) for row in rows]
    await conn.execute(
        sa.text(
            "UPDATE session_chunk_next n SET content_hash = c.content_hash FROM session_chunks c "
            "WHERE n.account_id = :a AND n.chunk_id = ANY(CAST(:ids AS uuid[])) "
            "AND c.account_id = :a AND c.id = n.chunk_id"
        ),
        {"a": account_id, "ids": [c.id for c in claimed]},
    )
    return claimed


async def write(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    ids: Sequence[UUID],
    vectors: Sequence[str],
) -> int:
    """Store the staged fit's vectors (pgvector text form) of claimed passages."""
    result = await conn.execute(
        sa.text(
            "UPDATE session_chunk_next n SET embedding = CAST(v.vec AS vector), model = :m, "
            "state = 'embedded', embedded_at = now(), attempts = 0, error = NULL "
            "FROM unnest(CAST(:ids AS uuid[]), CAST(:vecs AS text[])) AS v(id, vec) "
            "WHERE n.account_id = :a AND n.chunk_id = v.id"
        ),
        {"a": account_id, "m": str(identity), "ids": list(ids), "vecs": list(vectors)},
    )
    return int(result.rowcount)


async def embedded_count(conn: AsyncConnection, account_id: UUID, identity: str) -> int:
    """The account's passages the staged fit has a vector of."""
    found = await conn.execute(
        sa.text(
            "SELECT count(*) FROM session_chunk_next WHERE account_id = :a "
            "AND state = 'embedded' AND model = :m"
        ),
        {"a": account_id, "m": identity},
    )
    return int(found.scalar_one())


async def swap(
    conn: AsyncConnection, account_id: UUID, family_prefix: str, identity: str, shared: bool
) -> int:
    """The staged fit made the served one: each passage the staged fit has a vector of its
    text of gets it (one it skipped is skipped); the others of the account that hold another
    fit's vector, or were skipped, wait, as a fit installed at once leaves them. The staged
    vectors deleted, the fit and the account's setting moved. `shared`: the passages go into
    the model's shared index (else the account's own index, registered by the caller, is
    built for them). How many passages were swapped in or put to wait."""
    result = await conn.execute(
        sa.text(
            "UPDATE session_chunks c SET embedding = s.embedding, embedding_model = s.model, "
            "embedded_at = s.embedded_at, embedding_state = coalesce(s.state, 'pending'), "
            "embed_error = s.error, embed_attempts = 0, in_shared_index = :shared "
            "FROM (SELECT c2.id, n.embedding, n.model, n.embedded_at, n.state, n.error "
            "  FROM session_chunks c2 LEFT JOIN session_chunk_next n "
            "  ON n.account_id = :a AND n.chunk_id = c2.id AND c2.redaction_state = 'clear' "
            "  AND n.content_hash IS NOT DISTINCT FROM c2.content_hash "
            "  AND ((n.state = 'embedded' AND n.model = :m) OR n.state = 'skipped') "
            "  WHERE c2.account_id = :a AND (n.chunk_id IS NOT NULL "
            "    OR c2.embedding_state = 'skipped' OR (c2.embedding_state = 'embedded' "
            "    AND c2.embedding_model LIKE :family AND c2.embedding_model <> :m))) AS s "
            "WHERE c.account_id = :a AND c.id = s.id"
        ),
        {"a": account_id, "m": identity, "family": family_prefix + "%", "shared": shared},
    )
    await clear(conn, account_id)
    await conn.execute(
        sa.text(
            "UPDATE lexical_fits SET model_identity = next_identity, sessions = next_sessions, "
            "weights = next_weights, fitted_at = next_fitted_at, swapped_at = now(), "
            "next_identity = NULL, "
            "next_sessions = NULL, next_weights = NULL, next_fitted_at = NULL "
            "WHERE account_id = :a"
        ),
        {"a": account_id},
    )
    await conn.execute(
        sa.update(t.embedding_settings)
        .where(t.embedding_settings.c.account_id == account_id)
        .values(model=ModelIdentity.parse(identity).model, updated_at=sa.func.now())
    )
    return int(result.rowcount)
