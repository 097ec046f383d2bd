"""A search text embedded at request time with the account's configured model: its spend is
recorded, and the daily cap is respected, as the worker's batches do."""

from __future__ import annotations

import asyncio
from datetime import datetime
from uuid import UUID

import numpy as np
from sqlalchemy.ext.asyncio import AsyncEngine

from data import fits
from data import indexing as sql
from data.accounts import EmbeddingSetting
from data.model_identity import ModelIdentity
from indexer import billing, lexical, spend_cap
from indexer.embedders import Embedder, EmbedderUnavailable, Registry
from indexer.lexical import Fit
from indexer.providers import EmbeddingFailed
from indexer.vectors import as_text
from values.reasons import Reason

TEXT_NOT_EMBEDDED = Reason.SEARCH_TEXT_NOT_EMBEDDED
CAP_REACHED = Reason.SEMANTIC_DAILY_CAP_REACHED


class QueryNotEmbedded(Exception):
    """The text could not be embedded; carries the degraded reason codes that say why."""

    def __init__(self, *reasons: Reason) -> None:
        super().__init__(", ".join(reasons))
        self.reasons = frozenset({TEXT_NOT_EMBEDDED, *reasons})


async def embedder_for(
    engine: AsyncEngine, registry: Registry, account_id: UUID, identity: ModelIdentity
) -> Embedder:
    """The embedder of the identity; a fitted lexical identity's is built from the account's
    stored fit (EmbedderUnavailable when the account has no fit of that identity)."""
    try:
        return registry.get(identity)
    except EmbedderUnavailable:
        if not lexical.is_lexical(identity):
            raise
    async with engine.connect() as conn:
        stored = await fits.load_fit(conn, account_id)
    if stored is None or stored.identity != str(identity):
        raise EmbedderUnavailable(f"no fit {identity} stored for the account")
    return registry.fitted(Fit.from_bytes(stored.sessions, stored.weights))


async def account_fit(
    engine: AsyncEngine, registry: Registry, account_id: UUID
) -> lexical.LexicalEmbedder | None:
    """The account's fitted lexical embedder, whatever model its vectors are of (its weights
    read once per process and fit); None when the account has no fit."""
    async with engine.connect() as conn:
        identity = await fits.fit_identity(conn, account_id)
    if identity is None:
        return None
    try:
        embedder = await embedder_for(engine, registry, account_id, ModelIdentity.parse(identity))
    except EmbedderUnavailable:  # refitted since its identity was read
        return None
    return embedder if isinstance(embedder, lexical.LexicalEmbedder) else None


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
        embedder = await embedder_for(engine, registry, account_id, setting.identity)
    except EmbedderUnavailable:
        raise QueryNotEmbedded from None
    price, cap = embedder.usd_per_1k_tokens, setting.daily_cap_usd
    try:
        if price <= 0:
            vectors = (await asyncio.to_thread(billing.embed_metered, embedder, [text])).vectors
        else:
            bound = spend_cap.batch_cost(billing.token_bound(embedder, text), price)
            async with engine.begin() as conn:
                await sql.lock_account_spend(conn, account_id)
                spent = await sql.spent_since(conn, account_id, spend_cap.day_start(now))
                if cap is not None and spend_cap.affordable([bound], cap - spent) == 0:
                    raise QueryNotEmbedded(CAP_REACHED)
                billed = await asyncio.to_thread(billing.embed_metered, embedder, [text])
                cost = spend_cap.batch_cost(billed.tokens, price)
                await sql.record_usage(conn, account_id, setting.identity, billed.tokens, cost)
                vectors = billed.vectors
    except EmbeddingFailed:
        raise QueryNotEmbedded from None
    if not np.isfinite(vectors).all() or not np.linalg.norm(vectors[0]):
        raise QueryNotEmbedded
    return as_text(vectors)[0]
