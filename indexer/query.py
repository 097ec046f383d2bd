"""A search text embedded at request time with the account's configured model: its spend is
recorded, and the daily cap is respected, as the worker's batches do."""

from __future__ import annotations

import asyncio
from datetime import datetime
from uuid import UUID

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from data import indexing as sql
from data.accounts import EmbeddingSetting
from indexer import budget
from indexer.embedders import EmbedderUnavailable, Registry, tokens_of
from indexer.vectors import as_text

TEXT_NOT_EMBEDDED = "search_text_not_embedded"
CAP_REACHED = "semantic_daily_cap_reached"


class QueryNotEmbedded(Exception):
    """The text could not be embedded; carries the degraded reason codes that say why."""

    def __init__(self, *reasons: str) -> None:
        super().__init__(", ".join(reasons))
        self.reasons = frozenset({TEXT_NOT_EMBEDDED, *reasons})


async def embed_query(
    engine: AsyncEngine,
    registry: Registry,
    account_id: UUID,
    setting: EmbeddingSetting,
    text: str,
    now: datetime,
) -> str:
    """The text's vector (pgvector text form); QueryNotEmbedded when the model has no embedder
    here, the account is at its daily cap, or the text has nothing to embed."""
    try:
        embedder = registry.get(setting.identity)
    except EmbedderUnavailable:
        raise QueryNotEmbedded from None
    price, cap = embedder.usd_per_1k_tokens, setting.daily_cap_usd
    if price <= 0:
        vectors = await asyncio.to_thread(embedder.embed, [text])
    else:
        tokens = tokens_of(embedder, text)
        cost = budget.batch_cost(tokens, price)
        async with engine.begin() as conn:
            await sql.lock_account_spend(conn, account_id)
            spent = await sql.spent_since(conn, account_id, budget.day_start(now))
            if cap is not None and budget.affordable([cost], cap - spent) == 0:
                raise QueryNotEmbedded(CAP_REACHED)
            vectors = await asyncio.to_thread(embedder.embed, [text])
            await sql.record_usage(conn, account_id, setting.identity, tokens, cost)
    if not np.isfinite(vectors).all() or not np.linalg.norm(vectors[0]):
        raise QueryNotEmbedded
    return as_text(vectors)[0]
