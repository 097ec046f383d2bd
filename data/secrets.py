"""Secrets of the deployment, kept in its database so every process of it shares them."""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncEngine

from data import tables as t

SECRET_BYTES = 32


async def deployment_secret(engine: AsyncEngine, name: str) -> bytes:
    """The named secret. The migration makes the cursor secret; a secret missing (deleted
    to rotate it) is made (32 random bytes) by the first process that asks."""
    s = t.deployment_secrets
    read = sa.select(s.c.secret).where(s.c.name == name)
    async with engine.connect() as conn:
        secret = (await conn.execute(read)).scalar_one_or_none()
    if secret is None:
        async with engine.begin() as conn:
            await conn.execute(
                insert(s)
                .values(name=name, secret=secrets.token_bytes(SECRET_BYTES))
                .on_conflict_do_nothing(index_elements=[s.c.name])
            )
            # A new statement, a new snapshot: it sees a row another process just committed.
            secret = (await conn.execute(read)).scalar_one()
    return bytes(secret)
