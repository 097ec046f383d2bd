"""The vectors the product stored for a corpus, read back for measurements beside it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data import fits
from indexer.lexical import Fit, LexicalEmbedder


@dataclass(frozen=True, slots=True)
class Stored:
    matrix: np.ndarray  # one clear passage per row, unit length
    owners: list[UUID]  # each row's session
    fit: Fit | None  # the account's lexical fit


async def stored(engine: AsyncEngine, account: UUID, column: str) -> Stored:
    """The account's clear passages' vectors of one slot (`embedding`, `dense_embedding`)."""
    statement = (
        f"SELECT runtime_session_id, {column}::text FROM session_chunks "
        f"WHERE account_id = :a AND {column} IS NOT NULL AND redaction_state = 'clear'"
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(sa.text(statement), {"a": account})).all()
        kept = await fits.load_fit(conn, account)
    matrix = np.array([np.array(v.strip("[]").split(","), dtype=np.float32) for _, v in rows])
    fit = None if kept is None else Fit.from_bytes(kept.sessions, kept.weights)
    return Stored(matrix, [s for s, _ in rows], fit)


def best_passage_rankings(
    vectors: Stored, texts: Sequence[str], names: dict[UUID, str]
) -> dict[str, list[str]]:
    """Each text's sessions ranked by their best passage's cosine to the text embedded by the
    account's fitted lexical model (its IDF weights on the text's words), with no floor; a
    session none of whose passages shares a feature with the text is left out."""
    queries = np.asarray(LexicalEmbedder(vectors.fit).embed(list(texts)))
    out: dict[str, list[str]] = {}
    for text, row in zip(texts, queries @ vectors.matrix.T, strict=True):
        best: dict[UUID, float] = {}
        for owner, value in zip(vectors.owners, row.tolist(), strict=True):
            if value > best.get(owner, 0.0):
                best[owner] = value
        ranked = sorted(best.items(), key=lambda kv: (-kv[1], str(kv[0])))
        out[text] = [names[s] for s, _ in ranked]
    return out
