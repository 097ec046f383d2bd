"""Reads about accounts: who an API key is, its features, its embedding setting."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data import tables as t
from data.engine import raw_driver_errors
from data.model_identity import ModelIdentity
from values.credentials import SHOWN_FEATURE


def hash_key(key: str) -> bytes:
    """API keys are stored as their SHA-256: high-entropy secrets need no slow hash."""
    return hashlib.sha256(key.encode()).digest()


SECRETS_SHOWN = SHOWN_FEATURE  # the account feature that shows credentials as recorded


@dataclass(frozen=True, slots=True)
class Principal:
    """The caller: an account and what its key may do."""

    account_id: UUID
    account_name: str
    scopes: frozenset[str]
    features: frozenset[str]


@dataclass(frozen=True, slots=True)
class EmbeddingSetting:
    enabled: bool
    identity: ModelIdentity
    scope: str
    daily_cap_usd: float | None
    dense: ModelIdentity | None = None  # the dense model beside the configured one


# The key is read on every API request, so it is asked of the driver as one statement
# asyncpg prepares once per connection: 0.15 ms a read, where SQLAlchemy's execution of the
# same select took 0.4 ms (its connection, execution context and result; measured side by
# side). Not traced as a statement of its own; the request's span covers it.
_PRINCIPAL = """
SELECT k.key_hash, k.scopes, a.account_id, a.name,
       (SELECT array_agg(f.feature) FROM account_features f
        WHERE f.account_id = a.account_id) AS features
FROM api_keys k JOIN accounts a ON a.account_id = k.account_id
WHERE k.key_hash = $1 AND k.revoked_at IS NULL"""


async def principal_for_key(engine: AsyncEngine, key: str) -> Principal | None:
    """The account behind an unrevoked key, or None."""
    digest = hash_key(key)
    with raw_driver_errors():  # a raw connection: SQLAlchemy translates none of its errors
        pooled = await engine.raw_connection()
        try:
            driver = pooled.driver_connection
            assert driver is not None
            row = await driver.fetchrow(_PRINCIPAL, digest)
        finally:
            pooled.close()  # back to the pool: the read began no transaction
    if row is None or not hmac.compare_digest(row["key_hash"], digest):
        return None
    return Principal(
        row["account_id"], row["name"], frozenset(row["scopes"]), frozenset(row["features"] or ())
    )


async def embedding_setting(conn: AsyncConnection, account_id: UUID) -> EmbeddingSetting | None:
    """The account's embedding setting, or None when it has none."""
    row = (
        await conn.execute(
            sa.select(t.embedding_settings).where(t.embedding_settings.c.account_id == account_id)
        )
    ).first()
    return None if row is None else setting_of(row)


async def revoke_key(conn: AsyncConnection, key: str) -> bool:
    result = await conn.execute(
        sa.update(t.api_keys)
        .where(t.api_keys.c.key_hash == hash_key(key), t.api_keys.c.revoked_at.is_(None))
        .values(revoked_at=sa.func.now())
    )
    return bool(result.rowcount)


def setting_of(row: Any) -> EmbeddingSetting:
    """An EmbeddingSetting from a row carrying the embedding_settings columns."""
    cap = None if row.daily_cap_usd is None else float(row.daily_cap_usd)
    dense_model = getattr(row, "dense_model", None)  # a comparison's row reads none
    dense = (
        None
        if dense_model is None
        else ModelIdentity.of(row.dense_provider, dense_model, row.dense_dimensions)
    )
    identity = ModelIdentity.of(row.provider, row.model, row.dimensions)
    return EmbeddingSetting(row.enabled, identity, row.scope, cap, dense)
