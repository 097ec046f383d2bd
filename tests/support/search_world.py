"""A world for the search tests: passages on topics, their vectors by two models, the exact
answers to compare with (BM25 from the stored terms, an exact scan of a slot), and embedders
that fail or cost."""

from __future__ import annotations

import math
import re
import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.model_identity import ModelIdentity
from indexer import lexical
from indexer.embedders import Registry
from indexer.lexical import LexicalEmbedder
from indexer.providers import EmbeddingFailed
from resolvers.arguments import SimilarArgs
from resolvers.comparison.search import search_sessions
from resolvers.rules import ranking
from resolvers.services import Services
from resolvers.tuning import Tuning
from tests.support.embedders import WordsEmbedder
from tests.support.world import World

IDENTITY = lexical.UNFITTED  # every feature weighs 1: vectors without a fit


MODEL = str(IDENTITY)


EMBED = LexicalEmbedder()


# A dense model for the tests: not the lexical family, so its leg runs (no calibration: the
# contract's floor, 0.35).
DENSE_MODEL = "local:words-384@384"


DENSE = ModelIdentity.parse(DENSE_MODEL)


WORDS = WordsEmbedder(identity=DENSE_MODEL)


TOPICS = {
    "migration": "the database migration failed: lock timeout on table orders, retried",
    "deploy": "the kubernetes deploy rolled back after the readiness probe kept failing",
    "billing": "the invoice total was wrong because the currency conversion rate was stale",
}


QUESTION = "migration failed with a lock timeout on orders"


EXACT_TEXT_SCAN = """
SELECT c.id, c.runtime_session_id, 1 - ((c.embedding::vector(384)) <=> CAST(:v AS vector(384)))
FROM session_chunks c
WHERE c.account_id = :account AND c.embedding_model = :model
  AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'
  AND 1 - ((c.embedding::vector(384)) <=> CAST(:v AS vector(384))) >= 0.35
ORDER BY (c.embedding::vector(384)) <=> CAST(:v AS vector(384)), c.id
LIMIT 25
"""


def vector(text: str) -> list[float]:
    return [float(x) for x in EMBED.vector(text)]


def dense_vector(text: str) -> list[float]:
    return [float(x) for x in WORDS.vector(text)]


async def topic_sessions(
    engine: AsyncEngine, model: str = MODEL, **account: Any
) -> tuple[str, str, dict[str, str]]:
    """An account with sessions on three topics (two on the migration), and another account
    whose session is the closest of all to the question, word for word."""
    embed = vector if model == MODEL else dense_vector
    world = World()
    account_id, key = world.account(model=model, **account)
    sessions = {}
    for name, text in [*TOPICS.items(), ("migration again", TOPICS["migration"] + " twice")]:
        sid = sessions[name] = world.session(account_id, name)
        for i in range(3):
            passage = f"{text} (step {i})"
            world.chunk(sid, embed(passage), index=i, content=passage, model=model)
    other, _ = world.account("another", model=model)
    foreign = world.session(other, "foreign")
    world.chunk(foreign, embed(QUESTION), content=QUESTION, model=model)
    await world.write(engine)
    return account_id, key, sessions


async def searched(
    engine: AsyncEngine, account: str, text: str, tuning: Tuning | None = None, **args: Any
) -> Any:
    registry = args.pop("registry", Registry({MODEL: LexicalEmbedder, DENSE_MODEL: lambda: WORDS}))
    only = args.pop("only", None)
    services = Services(engine, tuning or Tuning(), embedders=registry)
    search = SimilarArgs(**args)
    return await search_sessions(services, uuid.UUID(account), text, search, only)


def tf_of(terms: str) -> dict[str, int]:
    """A tsvector's text form (`'word':1,5 'other':2`) as each lexeme's term frequency."""
    return {
        lexeme: len(positions.split(","))
        for lexeme, positions in re.findall(r"'((?:[^']|'')*)':([0-9A-D,]+)", terms)
    }


async def reference_bm25(engine: AsyncEngine, account: str, text: str) -> list[tuple[Any, float]]:
    """BM25 (k1 1.2, b 0.75, Lucene's IDF) of every passage of the account, computed here from
    the stored terms alone: the lexical leg's exact answer, best first (ties on chunk id)."""
    async with engine.connect() as conn:
        query = (
            await conn.execute(
                sa.text("SELECT array_agg(lexeme) FROM unnest(search_terms_of(:t))"),
                {"t": text},
            )
        ).scalar_one() or []
        rows = (
            await conn.execute(
                sa.text("SELECT id, search_terms::text FROM session_chunks WHERE account_id = :a"),
                {"a": account},
            )
        ).all()
    passages = [(chunk_id, tf_of(terms)) for chunk_id, terms in rows]
    n, avgdl = len(passages), sum(len(tf) for _, tf in passages) / len(passages)
    df = {t: sum(t in tf for _, tf in passages) for t in query}
    scored = []
    for chunk_id, tf in passages:
        score = sum(
            math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            * tf[t]
            * 2.2
            / (tf[t] + 1.2 * (0.25 + 0.75 * len(tf) / avgdl))
            for t in query
            if t in tf
        )
        if score > 0:
            scored.append((chunk_id, score))
    return sorted(scored, key=lambda cs: (-round(cs[1], 9), cs[0]))


async def exact_text_scan(
    engine: AsyncEngine, account: str, text: str, model: str, embedder: Any, slot: str = "embedding"
) -> list[ranking.Hit]:
    """The 25 passages nearest the text's vector at or above the contract's floor, by a
    sequential scan of the slot's column: the exact answer."""
    scan = (
        EXACT_TEXT_SCAN.replace("embedding::", f"{slot}::")
        .replace(
            "c.embedding_model", "c.embedding_model" if slot == "embedding" else "c.dense_model"
        )
        .replace(
            "c.embedding_state", "c.embedding_state" if slot == "embedding" else "c.dense_state"
        )
    )
    async with engine.begin() as conn:
        await conn.execute(sa.text("SET LOCAL enable_indexscan = off"))
        await conn.execute(sa.text("SET LOCAL enable_bitmapscan = off"))
        rows = await conn.execute(
            sa.text(scan),
            {
                "v": str([float(x) for x in embedder.vector(text)]),
                "account": account,
                "model": model,
            },
        )
        return [ranking.Hit(0, r[0], r[1], float(r[2])) for r in rows]


class FailingWords(WordsEmbedder):
    def embed(self, texts: Any) -> Any:
        raise EmbeddingFailed("the endpoint is down")


class PricedWords(WordsEmbedder):
    usd_per_1k_tokens = 10.0  # a search text of 8 words costs $0.08


async def spend(engine: AsyncEngine, account: str) -> float:
    async with engine.connect() as conn:
        total = await conn.execute(
            sa.text("SELECT coalesce(sum(cost_usd), 0) FROM api_usage WHERE account_id = :a"),
            {"a": account},
        )
        return float(total.scalar_one())


SEARCH = (
    "query($q: String!) { searchSessions(text: $q, limit: 2) { modelIdentity floor"
    " legs { leg ran } degraded { reasons } results { runtimeSessionId band"
    " matches { text replayAnchor matchedWords } } } }"
)
