"""The lexical leg of a search: the account's passages ranked by BM25 against the text, in one
statement over their search terms (a stemmed tsvector per chunk, GIN-indexed by account).

BM25 (Robertson and Zaragoza's form, with Lucene's non-negative IDF):
score = sum over the text's terms t of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl /
avgdl)), idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)) over the account's N passages. dl is a
passage's count of distinct terms, avgdl its mean over a thousand of the account's passages.
PostgreSQL has no function for a term's frequency in a tsvector; ts_rank of a one-term query
(normalisation 0, the default weights) is 0.1 * sum(1 / i^2, i = 1..tf) / (pi^2 / 6), from
which tf is recovered exactly (1 / (pi^2 / 6 - sum) - 1 / 2, rounded; tsvector keeps at most
256 positions a term). Candidates are the passages holding one of the text's rarer terms,
rarest first, until they would pass `candidates`: a passage holding none of them ranks below
one that does unless it matches many common terms."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from data.exact_lookup import PARAMETERS, in_window, session_accepted
from data.lookups import Ask
from data.model_indexes import vector_expression
from data.vector_slots import Space, repeated

BM25_K1 = 1.2
BM25_B = 0.75
MAX_TERMS = 32  # the text's distinct terms weighed, first ones first

# What the lexical leg searches: clear passages that are not boilerplate (`skipped` as
# repeated content); their vectors do not matter, so a passage without a vector of the
# configured model (no feature of its fit: a new script) is searched too.
_SEARCHABLE = f"c.redaction_state = 'clear' AND NOT {repeated('c')}"
_FILTERS = f"{in_window(PARAMETERS)} AND {session_accepted(PARAMETERS, started=False)}"

BM25 = f"""
WITH terms AS MATERIALIZED (
  SELECT t.lexeme, quote_literal(t.lexeme)::tsquery AS query
  FROM (SELECT DISTINCT u.lexeme
        FROM unnest(search_terms_of(CAST(:text AS text))) AS u
        LIMIT {MAX_TERMS}) t),
docs AS MATERIALIZED (  -- N: every passage of the account, counted on its primary key
  SELECT count(*)::float8 AS n FROM session_chunks c WHERE c.account_id = :account_id),
frequencies AS MATERIALIZED (
  SELECT t.lexeme, t.query, f.df FROM terms t CROSS JOIN LATERAL (
    SELECT count(*)::float8 AS df FROM session_chunks c
    WHERE c.account_id = :account_id AND c.search_terms @@ t.query AND {_SEARCHABLE}) f
  WHERE f.df > 0),
weights AS MATERIALIZED (
  SELECT f.lexeme, f.query, f.df, ln(1 + (d.n - f.df + 0.5) / (f.df + 0.5)) AS idf,
         sum(f.df) OVER (ORDER BY f.df, f.lexeme) - f.df AS rarer
  FROM frequencies f CROSS JOIN docs d),
selective AS MATERIALIZED (
  SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS query FROM weights
  WHERE rarer < :candidates),
lengths AS MATERIALIZED (
  SELECT coalesce(avg(length(c.search_terms)), 1)::float8 AS avgdl FROM (
    SELECT search_terms FROM session_chunks c WHERE c.account_id = :account_id AND {_SEARCHABLE}
    LIMIT 1000) c),
candidates AS MATERIALIZED (
  SELECT c.id, c.runtime_session_id, c.search_terms || ''::tsvector AS search_terms
  FROM session_chunks c
  JOIN runtime_sessions s ON s.account_id = c.account_id AND s.id = c.runtime_session_id
  WHERE c.account_id = :account_id AND {_SEARCHABLE} AND {_FILTERS}
    AND c.search_terms @@ (SELECT query FROM selective)),
scored AS (
  SELECT c.id, c.runtime_session_id, sum(w.idf * (tf.n * (p.k1 + 1)) / (tf.n + p.k1 * (
           1 - p.b + p.b * length(c.search_terms) / (SELECT avgdl FROM lengths)))) AS score
  FROM candidates c JOIN weights w ON c.search_terms @@ w.query
  CROSS JOIN (SELECT CAST(:k1 AS float8) AS k1, CAST(:b AS float8) AS b) p
  CROSS JOIN LATERAL (SELECT round(1 / (1.64493406685
           - ts_rank(c.search_terms, w.query, 0) * 16.4493406685) - 0.5)::float8 AS n) tf
  GROUP BY c.id, c.runtime_session_id)
SELECT id, runtime_session_id, score FROM scored ORDER BY score DESC, id LIMIT :passages"""


def _with_similarity(space: Space) -> str:
    """BM25's best passages with each one's cosine similarity to the text's vector in one
    model's space (null for a passage without a clear vector of that model)."""
    identity, slot = space
    width = identity.dimensions
    held = f"c.{slot.model} = {identity.sql_literal()} AND c.{slot.state} = 'embedded'"
    cosine = f"{vector_expression(identity, 'c', slot)} <=> CAST(:vector AS vector({width}))"
    return (
        f"SELECT b.id, b.runtime_session_id, b.score, CASE WHEN {held} THEN 1 - ({cosine}) END "
        f"FROM ({BM25}) b JOIN session_chunks c ON c.account_id = :account_id AND c.id = b.id "
        "ORDER BY b.score DESC, b.id"
    )


@dataclass(frozen=True, slots=True)
class Scored:
    """A passage the lexical leg found, with its BM25 score and, when a vector of the text
    was given, its cosine similarity to it (None: the passage has no vector of that model)."""

    chunk_id: UUID
    session_id: UUID
    score: float
    similarity: float | None = None


async def ranked_passages(
    conn: AsyncConnection,
    account_id: UUID,
    text: str,
    ask: Ask,
    passages: int,
    candidates: int,
    vector: tuple[Space, str] | None = None,
) -> list[Scored]:
    """The account's `passages` best passages for the text by BM25, best first (ties on
    chunk id), among those the ask's window and filters allow; none when no word of the
    text is in any of them. With `vector` (a space and the text's vector in it), each with
    its similarity to the text in that space."""
    statement = BM25 if vector is None else _with_similarity(vector[0])
    rows = await conn.execute(
        sa.text(statement),
        {
            **({} if vector is None else {"vector": vector[1]}),
            "account_id": account_id,
            "text": text,
            "cutoff": ask.cutoff,
            "statuses": None if ask.statuses is None else list(ask.statuses),
            "source_types": None if ask.source_types is None else list(ask.source_types),
            "k1": BM25_K1,
            "b": BM25_B,
            "candidates": candidates,
            "passages": passages,
        },
    )
    return [Scored(*row) for row in rows]
