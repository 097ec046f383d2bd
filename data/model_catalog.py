"""The model identities an account compares in (its configured one and those its comparable
chunks carry), cached for a while (cachetools' TTLCache: CATALOG_TTL_S, the least recently
used of CATALOG_ACCOUNTS accounts out first): the comparison's first statement has a lookup
branch for each. A model the catalog has not seen yet is answered 'unserved', and the
catalog is read again (`forget`). Beside them, the ef_search fitted on each of the account's
own indexes (data/ef_fits.py), and the shape of its indexes (their kinds and the own indexes'
watermarks, given to data.account_indexes.MARKS)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import sqlalchemy as sa
from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncConnection

from data.account_indexes import ACCOUNT_INDEXES, MARKS, shapes
from data.model_identity import ModelIdentity

CATALOG_TTL_S = 60.0
CATALOG_ACCOUNTS = 10_000  # accounts kept, least recently used first out

# The distinct models of the account's comparable chunks by a skip scan of the comparable
# index (one probe of the index per model, however many chunks), and the configured one.
ACCOUNT_MODELS = """
WITH RECURSIVE used(model) AS (
  (SELECT embedding_model FROM session_chunks
   WHERE account_id = :account_id AND redaction_state = 'clear' AND embedding_state = 'embedded'
   ORDER BY embedding_model LIMIT 1)
  UNION ALL
  SELECT (SELECT c.embedding_model FROM session_chunks c
          WHERE c.account_id = :account_id AND c.redaction_state = 'clear'
            AND c.embedding_state = 'embedded' AND c.embedding_model > used.model
          ORDER BY c.embedding_model LIMIT 1)
  FROM used WHERE used.model IS NOT NULL)
SELECT model FROM used WHERE model IS NOT NULL
UNION SELECT model_identity FROM embedding_settings WHERE account_id = :account_id
"""


@dataclass(frozen=True, slots=True)
class _Known:
    models: list[ModelIdentity]
    fitted: dict[str, int | None]  # per model with an own index: its fitted ef_search


class ModelCatalog:
    """Process-wide, per account."""

    def __init__(self, ttl_s: float = CATALOG_TTL_S) -> None:
        self._accounts: TTLCache[UUID, _Known] = TTLCache(CATALOG_ACCOUNTS, ttl_s)

    async def models(self, conn: AsyncConnection, account_id: UUID) -> list[ModelIdentity]:
        return (await self._known(conn, account_id)).models

    async def ef_search(
        self, conn: AsyncConnection, account_id: UUID, models: Sequence[ModelIdentity]
    ) -> int | None:
        """The ef_search fitted for the account's own indexes of these models: the widest of
        their fits; None when one of them has an own index fitted to nothing (the configured
        ef_search then) or none has an own index."""
        fitted = (await self._known(conn, account_id)).fitted
        values = [fitted[str(m)] for m in models if str(m) in fitted]
        if not values or any(v is None for v in values):
            return None
        return max(v for v in values if v is not None)

    async def _known(self, conn: AsyncConnection, account_id: UUID) -> _Known:
        known = self._accounts.get(account_id)
        if known is not None:
            return known
        rows = await conn.execute(sa.text(ACCOUNT_MODELS), {"account_id": account_id})
        models = sorted((ModelIdentity.parse(row[0]) for row in rows), key=str)
        indexes = (await conn.execute(sa.text(ACCOUNT_INDEXES), {"account_id": account_id})).all()
        # per model with an own index (its kind is registered): the ef_search fitted on it
        fitted = {model: ef for model, _, own, _, ef in indexes if own is not None}
        known = _Known(models, fitted)
        # the indexes' kinds and watermarks, read with the fits: the statements' texts name them
        MARKS.put(account_id, shapes(indexes))
        self._accounts[account_id] = known
        return known

    def forget(self, account_id: UUID) -> None:
        self._accounts.pop(account_id, None)
        MARKS.forget(account_id)
