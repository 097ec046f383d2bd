"""The model identities an account compares in (its configured one and those its comparable
chunks carry), cached for a while: the comparison's first statement has a lookup branch for
each. A model the catalog has not seen yet is answered 'unserved', and the catalog is read
again (`forget`)."""

from __future__ import annotations

import time
from collections import OrderedDict
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

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


class ModelCatalog:
    """Process-wide, per account."""

    def __init__(self, ttl_s: float = CATALOG_TTL_S) -> None:
        self.ttl_s = ttl_s
        self._accounts: OrderedDict[UUID, tuple[float, list[ModelIdentity]]] = OrderedDict()

    async def models(self, conn: AsyncConnection, account_id: UUID) -> list[ModelIdentity]:
        known = self._accounts.get(account_id)
        if known is not None and time.monotonic() - known[0] < self.ttl_s:
            self._accounts.move_to_end(account_id)
            return known[1]
        rows = await conn.execute(sa.text(ACCOUNT_MODELS), {"account_id": account_id})
        models = sorted((ModelIdentity.parse(row[0]) for row in rows), key=str)
        self._accounts[account_id] = (time.monotonic(), models)
        self._accounts.move_to_end(account_id)
        while len(self._accounts) > CATALOG_ACCOUNTS:
            self._accounts.popitem(last=False)
        return models

    def forget(self, account_id: UUID) -> None:
        self._accounts.pop(account_id, None)
