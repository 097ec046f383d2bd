"""One account's indexes and fits as a process reads them, kept for a while: the models it
compares in (its configured one and those its comparable chunks carry), and per model its
comparable chunks (counted up to a bound), its own index (registered, ready), the ef_search
fitted on it and the shape a statement's text names (the kinds, the watermark). The lookup
plan decides each model's path from it (resolvers/rules/lookup_plan.py).

`Snapshots` holds them per account (cachetools' TTLCache, the least recently used of
SNAPSHOT_ACCOUNTS out first), built once by the services. A model the snapshot has not seen
is answered 'unserved' and the account read again (`forget`). A stale snapshot still answers
right: the statement demotes an index path whose index is no longer what the snapshot said
to the exact path (data/comparison_sql.py), a stale mark's rows past it are its tail, a
stale kind's index is kept past the TTL (data/own_index_rebuilds.MOVE_GRACE_S), and a stale
count only moves the account between the exact path and an index one a while late."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import sqlalchemy as sa
from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncConnection

from data.account_indexes import ACCOUNT_INDEXES, INDEX_TTL_S, IndexShape, shapes
from data.model_identity import ModelIdentity

SNAPSHOT_ACCOUNTS = 10_000  # accounts kept, least recently used first out

# The distinct models of the account's comparable chunks by a skip scan of the comparable
# index (one probe of the index per model, however many chunks), and the configured one;
# each with its comparable chunks, counted up to :bound + 1.
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
  FROM used WHERE used.model IS NOT NULL),
models AS (
  SELECT model FROM used WHERE model IS NOT NULL
  UNION SELECT model_identity FROM embedding_settings WHERE account_id = :account_id)
SELECT m.model, (SELECT count(*)::int FROM (SELECT 1 FROM session_chunks c
  WHERE c.account_id = :account_id AND c.embedding_model = m.model
    AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'
  LIMIT CAST(:bound AS bigint) + 1) AS bounded) AS comparable
FROM models m
"""


@dataclass(frozen=True, slots=True)
class ModelIndexes:
    """What the snapshot knows of one model on the account."""

    comparable: int  # its comparable chunks, counted up to the snapshot's bound and one more
    registered: bool = False  # an own index is registered (its rows leave the shared index)
    ready: bool = False  # and PostgreSQL has finished building it
    fitted_ef_search: int | None = None  # fitted on the own index (data/ef_fits.py)
    shape: IndexShape = field(default_factory=IndexShape)


@dataclass(frozen=True, slots=True)
class AccountSnapshot:
    """An account's models, and what is known of each, counted up to `counted_to` + 1."""

    models: tuple[ModelIdentity, ...]
    indexes: Mapping[str, ModelIndexes]
    counted_to: int

    def of(self, model: str) -> ModelIndexes:
        return self.indexes.get(model) or ModelIndexes(0)

    @property
    def marks(self) -> dict[str, IndexShape]:
        """The shapes a statement's text names, by model identity."""
        return {model: known.shape for model, known in self.indexes.items()}

    def ef_search(self, models: Sequence[ModelIdentity]) -> int | None:
        """The ef_search fitted for the account's own indexes of these models: the widest of
        their fits; None when one of them has an own index fitted to nothing (the configured
        ef_search then) or none has an own index."""
        fitted = [self.of(str(m)) for m in models]
        values = [k.fitted_ef_search for k in fitted if k.registered]
        if not values or any(v is None for v in values):
            return None
        return max(v for v in values if v is not None)


async def read_snapshot(
    conn: AsyncConnection, account_id: UUID, count_up_to: int
) -> AccountSnapshot:
    """The account's snapshot as it is now, its chunks counted up to `count_up_to` + 1."""
    params = {"account_id": account_id, "bound": count_up_to}
    counted = {row[0]: int(row[1]) for row in await conn.execute(sa.text(ACCOUNT_MODELS), params)}
    rows = (await conn.execute(sa.text(ACCOUNT_INDEXES), {"account_id": account_id})).all()
    marks = shapes(rows)
    indexes = {
        model: ModelIndexes(
            counted.get(model, 0),
            own is not None,
            bool(ready) and own is not None,
            None if ef is None else int(ef),
            marks[model],
        )
        for model, _, own, _, ef, ready in rows
    }
    for model, n in counted.items():
        indexes.setdefault(model, ModelIndexes(n))
    models = tuple(sorted((ModelIdentity.parse(m) for m in counted), key=str))
    return AccountSnapshot(models, indexes, count_up_to)


class Snapshots:
    """Process-wide, per account: its snapshot, read again `ttl_s` after it was read, when a
    caller needs its chunks counted further than it was, or after `forget`."""

    def __init__(self, ttl_s: float = INDEX_TTL_S, accounts: int = SNAPSHOT_ACCOUNTS) -> None:
        self._accounts: TTLCache[UUID, AccountSnapshot] = TTLCache(accounts, ttl_s)

    async def of(
        self, conn: AsyncConnection, account_id: UUID, count_up_to: int
    ) -> AccountSnapshot:
        known = self._accounts.get(account_id)
        if known is not None and known.counted_to >= count_up_to:
            return known
        snapshot = await read_snapshot(conn, account_id, count_up_to)
        self._accounts[account_id] = snapshot
        return snapshot

    def put(self, account_id: UUID, snapshot: AccountSnapshot) -> None:
        self._accounts[account_id] = snapshot

    def forget(self, account_id: UUID) -> None:
        self._accounts.pop(account_id, None)

    def clear(self) -> None:
        """Forget every account's (a shared index changed its kind)."""
        self._accounts.clear()
