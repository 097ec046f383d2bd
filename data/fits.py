"""The lexical embedder's fit per account: read it, write it, and move the account to the
identity a new fit gives (its setting names it; the chunks embedded under another lexical
identity wait to be embedded again)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.model_identity import ModelIdentity
from data.model_indexes import IndexKind, beside, index_name


@dataclass(frozen=True, slots=True)
class StoredFit:
    identity: str
    sessions: int
    weights: bytes
    fitted_at: datetime
    staged: bool = False  # a new fit is staged beside it (data/next_fits.py)
    swapped_at: datetime | None = None  # when it was swapped in, staged since `fitted_at`


async def load_fit(conn: AsyncConnection, account_id: UUID) -> StoredFit | None:
    f = t.lexical_fits.c
    row = (
        await conn.execute(
            sa.select(
                f.model_identity,
                f.sessions,
                f.weights,
                f.fitted_at,
                f.next_identity.is_not(None),
                f.swapped_at,
            ).where(f.account_id == account_id)
        )
    ).first()
    return None if row is None else StoredFit(row[0], row[1], bytes(row[2]), *row[3:])


async def fit_identity(conn: AsyncConnection, account_id: UUID) -> str | None:
    """The model identity of the account's fit (its weights not read); None without one."""
    f = t.lexical_fits.c
    found = await conn.execute(sa.select(f.model_identity).where(f.account_id == account_id))
    return found.scalar()


async def sessions_with_clear_chunks(conn: AsyncConnection, account_id: UUID) -> int:
    return int(
        (
            await conn.execute(
                sa.text(
                    "SELECT count(DISTINCT runtime_session_id) FROM session_chunks "
                    "WHERE account_id = :a AND redaction_state = 'clear'"
                ),
                {"a": account_id},
            )
        ).scalar_one()
    )


async def clear_passages(conn: AsyncConnection, account_id: UUID) -> AsyncIterator[list[str]]:
    """Each session's clear chunk texts, one list per session, streamed."""
    result = await conn.stream(
        sa.text(
            "SELECT runtime_session_id, content FROM session_chunks "
            "WHERE account_id = :a AND redaction_state = 'clear' "
            "ORDER BY runtime_session_id, chunk_index"
        ),
        {"a": account_id},
    )
    current: UUID | None = None
    texts: list[str] = []
    async for session_id, content in result:
        if session_id != current and texts:
            yield texts
            texts = []
        current = session_id
        texts.append(content)
    if texts:
        yield texts


async def save_fit(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, sessions: int, weights: bytes
) -> None:
    stmt = insert(t.lexical_fits).values(
        account_id=account_id,
        model_identity=str(identity),
        sessions=sessions,
        weights=weights,
        fitted_at=sa.func.now(),
    )
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["account_id"],
            set_={k: stmt.excluded[k] for k in ("model_identity", "sessions", "weights")}
            | {"fitted_at": sa.func.now()}
            # a fit installed at once replaces any staged one (data/next_fits.py), and rests
            # for no staging
            | dict.fromkeys(
                ("next_identity", "next_sessions", "next_weights", "next_fitted_at", "swapped_at")
            ),
        )
    )


async def use_model(
    conn: AsyncConnection,
    account_id: UUID,
    identity: ModelIdentity,
    family_prefix: str,
    *,
    retry_skipped: bool,
) -> int:
    """Name the identity in the account's setting; chunks embedded under another identity of
    the family (and skipped ones, when asked: a new fit may give them a direction) wait
    again. The number of chunks put back to wait."""
    await conn.execute(
        sa.update(t.embedding_settings)
        .where(t.embedding_settings.c.account_id == account_id)
        .values(model=identity.model, updated_at=sa.func.now())
    )
    result = await conn.execute(
        sa.text(
            "UPDATE session_chunks SET embedding_state = 'pending', embedding = NULL, "
            "embedding_model = NULL, embedded_at = NULL, in_shared_index = true "
            "WHERE account_id = :a AND ((:retry AND embedding_state = 'skipped') "
            "  OR (embedding_state = 'embedded' AND embedding_model LIKE :family "
            "      AND embedding_model <> :model))"
        ),
        {
            "a": account_id,
            "retry": retry_skipped,
            "family": family_prefix + "%",
            "model": str(identity),
        },
    )
    return int(result.rowcount)


async def drop_unused_model(conn: AsyncConnection, identity: str) -> bool:
    """Drop the per-model and per-account HNSW indexes of an identity no chunk holds."""
    held = (
        await conn.execute(
            sa.text("SELECT 1 FROM session_chunks WHERE embedding_model = :m LIMIT 1"),
            {"m": identity},
        )
    ).first()
    if held is not None:
        return False
    names = (
        (
            await conn.execute(
                sa.text(
                    "SELECT index_name FROM embedding_models WHERE model_identity = :m "
                    "UNION ALL "
                    "SELECT index_name FROM account_model_indexes WHERE model_identity = :m"
                ),
                {"m": identity},
            )
        )
        .scalars()
        .all()
    )
    # with the shared index's names of each kind, and beside them: a move that failed left
    # one unregistered
    shared = [index_name(ModelIdentity.parse(identity), kind) for kind in IndexKind]
    names = [*names, *shared, *(beside(name) for name in shared)]
    for name in dict.fromkeys(names):
        await conn.execute(sa.text(f"DROP INDEX IF EXISTS {name}"))
    for table in ("account_model_indexes", "embedding_models"):
        await conn.execute(
            sa.text(f"DELETE FROM {table} WHERE model_identity = :m"), {"m": identity}
        )
    return True
