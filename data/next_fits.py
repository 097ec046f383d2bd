"""A lexical refit staged beside the served fit (migration 0023): `index --watch` stages the
account's new fit, embeds its passages under it into the chunks' `NEXT` slot while every
comparison reads the served fit's vectors, and swaps them in by one transaction once none
waits. Installed at once, a new fit left every passage without a vector until it was
embedded again, and a session not yet embedded again listed nobody (168 s for 28,000
passages beside a stream)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.model_identity import ModelIdentity
from data.vector_slots import repeated

# The NEXT slot's columns put back to none (outside a refit, and for a passage whose text
# changed: its next vector, if any, was of another text).
NEXT_RESET = {
    "next_embedding": None,
    "next_model": None,
    "next_state": None,
    "next_embedded_at": None,
    "next_attempts": 0,
    "next_error": None,
}
_CLEARED = ", ".join(f"{k} = {'0' if v == 0 else 'NULL'}" for k, v in NEXT_RESET.items())


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
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, sessions: int, weights: bytes
) -> int:
    """Stage the fit beside the account's served one (which it must have), every passage to
    embed under it waiting in the NEXT slot; how many wait."""
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
    return await mark_waiting(conn, account_id)


async def clear(conn: AsyncConnection, account_id: UUID) -> None:
    """The account's NEXT slot emptied (a new fit staged, or one installed at once)."""
    await conn.execute(
        sa.text(
            f"UPDATE session_chunks SET {_CLEARED} WHERE account_id = :a AND next_state IS NOT NULL"
        ),
        {"a": account_id},
    )


async def mark_waiting(conn: AsyncConnection, account_id: UUID) -> int:
    """The account's clear passages not yet in the NEXT slot (written, or changed, since the
    fit was staged) put to wait in it; how many. A repeated passage, which the served model
    skips, is not embedded (the swap counts it again)."""
    result = await conn.execute(
        sa.text(
            "UPDATE session_chunks SET next_state = 'pending' "
            "WHERE account_id = :a AND next_state IS NULL AND redaction_state = 'clear' "
            f"AND embedding_state <> 'failed' AND NOT {repeated()}"
        ),
        {"a": account_id},
    )
    return int(result.rowcount)


async def waiting(conn: AsyncConnection, account_id: UUID) -> int:
    """The account's passages waiting in the NEXT slot."""
    found = await conn.execute(
        sa.text(
            "SELECT count(*) FROM session_chunks "
            "WHERE account_id = :a AND next_state IN ('pending', 'in_progress')"
        ),
        {"a": account_id},
    )
    return int(found.scalar_one())


async def embedded_count(conn: AsyncConnection, account_id: UUID, identity: str) -> int:
    """The account's passages the staged fit has a vector of."""
    found = await conn.execute(
        sa.text(
            "SELECT count(*) FROM session_chunks WHERE account_id = :a "
            "AND next_state = 'embedded' AND next_model = :m"
        ),
        {"a": account_id, "m": identity},
    )
    return int(found.scalar_one())


async def swap(
    conn: AsyncConnection, account_id: UUID, family_prefix: str, identity: str, shared: bool
) -> int:
    """The staged fit made the served one: each passage's NEXT vector moved into its primary
    slot (a passage the staged fit skipped is skipped; one it has no vector of, a repeated
    one, and one holding another fit's vector wait, as a fit installed at once leaves them),
    the slot emptied, the fit and the account's setting moved. `shared`: the passages go
    into the model's shared index (else the account's own index, registered by the caller,
    is built for them). How many passages were swapped in or put to wait."""
    embedded = "next_state = 'embedded' AND next_model = :m AND redaction_state = 'clear'"
    result = await conn.execute(
        sa.text(
            "UPDATE session_chunks SET "
            f"embedding = CASE WHEN {embedded} THEN next_embedding END, "
            f"embedding_model = CASE WHEN {embedded} THEN next_model END, "
            f"embedded_at = CASE WHEN {embedded} THEN next_embedded_at END, "
            f"embedding_state = CASE WHEN {embedded} THEN 'embedded' "
            "  WHEN next_state = 'skipped' THEN 'skipped' ELSE 'pending' END, "
            "embed_error = CASE WHEN next_state = 'skipped' THEN next_error END, "
            f"embed_attempts = 0, in_shared_index = :shared, {_CLEARED} "
            "WHERE account_id = :a AND (next_state IS NOT NULL OR embedding_state = 'skipped' "
            "  OR (embedding_state = 'embedded' AND embedding_model LIKE :family "
            "      AND embedding_model <> :m))"
        ),
        {"a": account_id, "m": identity, "family": family_prefix + "%", "shared": shared},
    )
    await conn.execute(
        sa.text(
            "UPDATE lexical_fits SET model_identity = next_identity, sessions = next_sessions, "
            "weights = next_weights, fitted_at = next_fitted_at, next_identity = NULL, "
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
