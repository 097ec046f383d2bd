"""The model identities in use, cached for a while: the comparison's first statement has a
lookup branch for each (the registry is tiny and changes when a model first appears)."""

from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data.model_identity import ModelIdentity

CATALOG_TTL_S = 60.0


class ModelCatalog:
    """Process-wide; `forget()` when a comparison meets a model it has no branch for."""

    def __init__(self, ttl_s: float = CATALOG_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._models: list[ModelIdentity] | None = None
        self._read_at = 0.0

    async def models(self, conn: AsyncConnection) -> list[ModelIdentity]:
        fresh = time.monotonic() - self._read_at < self.ttl_s
        if self._models is None or not fresh:
            rows = await conn.execute(
                sa.text("SELECT model_identity FROM embedding_models ORDER BY model_identity")
            )
            self._models = [ModelIdentity.parse(row[0]) for row in rows]
            self._read_at = time.monotonic()
        return self._models

    def forget(self) -> None:
        self._models = None
