"""The indexer's SQL about an account: the accounts to index, repeated content, vectors that
must go (a chunk no longer clear, a dense model no longer named), spend and the degraded mark.
What to chunk and the chunk writes are data/chunk_writes.py's; the chunks waiting in a vector
slot, claimed and written, data/slot_chunks.py's."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data import tables as t
from data.model_identity import ModelIdentity

# A chunk's dense vector as it is before the dense model embeds it.
DENSE_RESET: dict[str, Any] = {
    "dense_state": "pending",
    "dense_embedding": None,
    "dense_model": None,
    "dense_embedded_at": None,
    "dense_attempts": 0,
    "dense_error": None,
}


@dataclass(frozen=True, slots=True)
class AccountWork:
    """An account whose embedding setting is enabled, as the indexer reads it."""

    account_id: UUID
    identity: ModelIdentity
    scope: str
    daily_cap_usd: float | None
    degraded_reason: str | None
    degraded_until: datetime | None
    dense: ModelIdentity | None = None  # the dense model beside the configured one

    @property
    def summaries_only(self) -> bool:
        """Whether only the account's session summaries are embedded (its scope)."""
        return self.scope == "summaries_only"


@dataclass(frozen=True, slots=True)
class RepeatRule:
    """Content is repeated (boilerplate) when it recurs in at least min_sessions sessions
    and in at least min_share_percent of the account's sessions."""

    min_sessions: int = 5
    min_share_percent: int = 5


async def enabled_accounts(
    conn: AsyncConnection, account_ids: Sequence[UUID] | None
) -> list[AccountWork]:
    s = t.embedding_settings.c
    query = (
        sa.select(
            s.account_id,
            s.provider,
            s.model,
            s.dimensions,
            s.scope,
            s.daily_cap_usd,
            s.degraded_reason,
            s.degraded_until,
            s.dense_provider,
            s.dense_model,
            s.dense_dimensions,
        )
        .where(s.enabled.is_(True))
        .order_by(s.account_id)
    )
    if account_ids is not None:
        query = query.where(s.account_id.in_(list(account_ids)))
    return [
        AccountWork(
            row.account_id,
            ModelIdentity.of(row.provider, row.model, row.dimensions),
            row.scope,
            None if row.daily_cap_usd is None else float(row.daily_cap_usd),
            row.degraded_reason,
            row.degraded_until,
            None
            if row.dense_model is None
            else ModelIdentity.of(row.dense_provider, row.dense_model, row.dense_dimensions),
        )
        for row in await conn.execute(query)
    ]


async def set_degraded(
    conn: AsyncConnection, account_id: UUID, reason: str | None, until: datetime | None
) -> None:
    """Mark the setting degraded (reason, until when), or clear the mark with None."""
    await conn.execute(
        sa.update(t.embedding_settings)
        .where(t.embedding_settings.c.account_id == account_id)
        .values(degraded_reason=reason, degraded_until=until, updated_at=sa.func.now())
    )


async def strip_unclear_vectors(conn: AsyncConnection, account_id: UUID) -> int:
    """A chunk that left `clear` loses its vectors (every slot) and waits (pending) in case
    it comes back (under a staged fit too: clear again, the next pass marks it to wait)."""
    result = await conn.execute(
        sa.text(
            "UPDATE session_chunks SET embedding = NULL, embedding_model = NULL, "
            "in_shared_index = true, "
            "embedded_at = NULL, embedding_state = 'pending', dense_embedding = NULL, "
            "dense_model = NULL, dense_embedded_at = NULL, dense_state = 'pending' "
            "WHERE account_id = :account_id AND redaction_state <> 'clear' "
            "AND (embedding IS NOT NULL OR embedding_state IN ('embedded', 'in_progress') "
            "     OR dense_embedding IS NOT NULL OR dense_state IN ('embedded', 'in_progress'))"
        ),
        {"account_id": account_id},
    )
    await conn.execute(
        sa.text(
            "DELETE FROM session_chunk_next n USING session_chunks c "
            "WHERE n.account_id = :account_id AND c.account_id = :account_id "
            "AND c.id = n.chunk_id AND c.redaction_state <> 'clear'"
        ),
        {"account_id": account_id},
    )
    return int(result.rowcount)


async def forget_other_dense_models(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity
) -> int:
    """Dense vectors of a model the account no longer names wait to be embedded again (and
    their windows go)."""
    await conn.execute(
        sa.text(
            "DELETE FROM session_chunk_windows w USING session_chunks c "
            "WHERE w.account_id = :account_id AND c.account_id = :account_id "
            "AND c.id = w.chunk_id AND c.dense_model IS DISTINCT FROM :model "
            "AND c.dense_state IN ('embedded', 'skipped', 'failed')"
        ),
        {"account_id": account_id, "model": str(identity)},
    )
    result = await conn.execute(
        sa.text(
            "UPDATE session_chunks SET dense_embedding = NULL, dense_model = NULL, "
            "dense_embedded_at = NULL, dense_state = 'pending', dense_attempts = 0 "
            "WHERE account_id = :account_id AND dense_model IS DISTINCT FROM :model "
            "AND dense_state IN ('embedded', 'skipped', 'failed')"
        ),
        {"account_id": account_id, "model": str(identity)},
    )
    return int(result.rowcount)


async def skip_repeated(
    conn: AsyncConnection,
    account_id: UUID,
    rule: RepeatRule,
    identity: ModelIdentity,
    sessions: Sequence[UUID] | None = None,
) -> int:
    """Mark `skipped` the chunks whose content (by hash) the rule calls repeated: a task's
    own text recurs in its few sessions, a template in a share of them all. Those waiting,
    and those holding a vector of the account's model. With `sessions` (those just chunked),
    only the contents they hold are counted: no other content can have become repeated, as
    the sessions that hold it did not change and the share it needs only grew."""
    only = (
        ""
        if sessions is None
        else "AND content_hash IN (SELECT content_hash FROM session_chunks "
        "  WHERE account_id = :a AND runtime_session_id = ANY(:sessions)) "
    )
    result = await conn.execute(
        sa.text(
            "WITH total AS (SELECT count(*) AS n FROM runtime_sessions WHERE account_id = :a) "
            "UPDATE session_chunks c SET embedding_state = 'skipped', embedding = NULL, "
            "embedding_model = NULL, embedded_at = NULL, embed_error = NULL, "
            "in_shared_index = true "
            "FROM (SELECT content_hash FROM session_chunks "
            f"  WHERE account_id = :a AND content_hash IS NOT NULL {only}"
            "  GROUP BY content_hash "
            "  HAVING count(DISTINCT runtime_session_id) >= :min_sessions "
            "  AND count(DISTINCT runtime_session_id) * 100 >= "
            "      :share * (SELECT n FROM total)"
            ") AS repeated "
            "WHERE c.account_id = :a AND c.content_hash = repeated.content_hash "
            "AND (c.embedding_state = 'pending' "
            "  OR (c.embedding_state = 'embedded' AND c.embedding_model = :model))"
        ),
        {
            "a": account_id,
            "min_sessions": rule.min_sessions,
            "share": rule.min_share_percent,
            "model": str(identity),
            **({"sessions": list(sessions)} if sessions else {}),
        },
    )
    return int(result.rowcount)


async def record_usage(
    conn: AsyncConnection, account_id: UUID, identity: ModelIdentity, units: int, cost_usd: float
) -> UUID:
    usage_id = uuid.uuid4()
    await conn.execute(
        sa.insert(t.api_usage).values(
            account_id=account_id,
            id=usage_id,
            kind="embedding",
            provider=identity.provider,
            model=identity.model,
            units=units,
            cost_usd=cost_usd,
        )
    )
    return usage_id


_SPEND_LOCK = 0x5E55_1D7C  # advisory lock class: one capped batch per account at a time


async def lock_account_spend(conn: AsyncConnection, account_id: UUID) -> None:
    """Hold the account's spend lock until the transaction ends: capped batches of one
    account run one at a time, so two workers cannot both spend the last of a cap."""
    await conn.execute(
        sa.text("SELECT pg_advisory_xact_lock(:lock, hashtext(:account))"),
        {"lock": _SPEND_LOCK, "account": str(account_id)},
    )


async def spent_since(conn: AsyncConnection, account_id: UUID, since: datetime) -> float:
    """Embedding spend of the account since a moment (the start of its UTC day)."""
    u = t.api_usage.c
    total = (
        await conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(u.cost_usd), 0)).where(
                u.account_id == account_id, u.kind == "embedding", u.occurred_at >= since
            )
        )
    ).scalar_one()
    return float(total)
