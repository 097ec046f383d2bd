"""Search by describing the failure: the lexical leg is BM25 over the account's passages, the
dense leg equals an exact scan in the dense model's space on every path, the two are fused by
reciprocal rank, each is scoped to the account, and every way a search comes up short is
named (a leg that cannot run leaves the other answering)."""

from __future__ import annotations

import json
import math
import re
import uuid
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data import bm25
from data.account_indexes import ensure_account_index
from data.lookups import Ask
from data.model_identity import ModelIdentity
from indexer import lexical
from indexer.embedders import Registry
from indexer.lexical import LexicalEmbedder
from indexer.providers import EmbeddingFailed
from resolvers.arguments import SimilarArgs
from resolvers.comparison.legs import Leg
from resolvers.comparison.search import search_sessions
from resolvers.rules import ranking
from resolvers.rules.fusion import reciprocal_rank_fusion
from resolvers.services import Services
from resolvers.tuning import Tuning
from tests.support.comparisons import bearer, graphql
from tests.support.embedders import WordsEmbedder
from tests.support.loops import repeat_session
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
                sa.text("SELECT array_agg(lexeme) FROM unnest(to_tsvector('english', :t))"),
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


async def test_the_lexical_leg_is_bm25_within_the_account(engine: AsyncEngine) -> None:
    """On a table another account crowds with the question's own words, the lexical leg's
    passages and scores are BM25's over this account's passages only."""
    account, _, sessions = await topic_sessions(engine)
    async with engine.connect() as conn:
        served = await bm25.ranked_passages(
            conn, uuid.UUID(account), QUESTION, Ask(0, uuid.UUID(int=0)), 100, 5000
        )
    exact = await reference_bm25(engine, account, QUESTION)
    # equal scores (passages differing by their step's number only) may differ in their last
    # bits, summed in another order: compared rounded, ties in chunk id order
    assert sorted((-round(s.score, 9), s.chunk_id) for s in served) == [
        (-round(score, 9), chunk_id) for chunk_id, score in exact
    ]
    assert {str(s.session_id) for s in served} <= set(sessions.values())
    result = await searched(engine, account, QUESTION, limit=20)
    assert [leg.leg for leg in result.legs if leg.ran] == [Leg.LEXICAL]
    assert [str(n.session.id) for n in result.results][:2] in (
        [sessions["migration"], sessions["migration again"]],
        [sessions["migration again"], sessions["migration"]],
    )
    assert result.model_identity == MODEL and result.degraded.semantic


@pytest.mark.parametrize("path", ["exact", "index", "account_index"])
async def test_the_dense_leg_equals_an_exact_scan_on_every_path(
    engine: AsyncEngine, path: str
) -> None:
    account, _, _ = await topic_sessions(engine, model=DENSE_MODEL)
    if path == "account_index":
        async with engine.begin() as conn:
            await ensure_account_index(conn, uuid.UUID(account), DENSE)
    tuning = Tuning(exact_scan_max_chunks=1000 if path == "exact" else 0)
    result = await searched(engine, account, QUESTION, tuning, only=Leg.DENSE, limit=20)
    assert [leg.path for leg in result.legs if leg.leg is Leg.DENSE] == [path]
    exact = await exact_text_scan(engine, account, QUESTION, DENSE_MODEL, WORDS)
    expected = [(n.session_id, round(n.similarity, 6)) for n in ranking.rank_neighbours(exact, 2)]
    assert [(n.session.id, round(n.similarity, 6)) for n in result.results] == expected
    assert all(m.probe is None and m.text for n in result.results for m in n.matches)


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


async def test_the_legs_are_fused_by_reciprocal_rank(engine: AsyncEngine) -> None:
    """Both legs ran: the list is the reciprocal-rank fusion of the two legs' session orders
    (ties by the published similarity, then session id), and its similarities are cosines
    in the dense model's space."""
    account, _, _ = await topic_sessions(engine, model=DENSE_MODEL)
    both = await searched(engine, account, QUESTION, limit=20)
    lexical = await searched(engine, account, QUESTION, only=Leg.LEXICAL, limit=20)
    dense = await searched(engine, account, QUESTION, only=Leg.DENSE, limit=20)
    assert [leg.leg for leg in both.legs if leg.ran] == [Leg.LEXICAL, Leg.DENSE]
    orders = [[n.session.id for n in r.results] for r in (lexical, dense)]
    rrf = {f.session_id: f.score for f in reciprocal_rank_fusion(orders)}
    similarity = {n.session.id: n.similarity for n in both.results}
    expected = sorted(rrf, key=lambda s: (-rrf[s], -similarity[s], s))
    assert [n.session.id for n in both.results] == expected
    assert [n.score for n in both.results] == pytest.approx([rrf[s] for s in expected])
    assert both.model_identity == DENSE_MODEL


async def test_the_dense_slot_beside_the_lexical_model_is_searched_exactly(
    engine: AsyncEngine,
) -> None:
    """An account on the lexical model with a dense model beside it: the indexer embeds the
    same passages with both, and the dense leg reads the dense vectors."""
    from indexer.commands import config_from
    from indexer.worker import index_once

    world = World()
    account, _ = world.account(model=MODEL)
    world.lines[-1]["embedding"]["dense"] = {
        "provider": "local",
        "model": "words-384",
        "dimensions": 384,
    }
    for name, text in [*TOPICS.items(), ("migration again", TOPICS["migration"] + " twice")]:
        sid = world.session(account, name)
        for ordinal in range(2):
            world.activity(sid, ordinal, f"{text} (step {ordinal})")
    await world.write(engine)
    registry = Registry({MODEL: LexicalEmbedder, DENSE_MODEL: lambda: WORDS})
    await index_once(engine, registry, config_from(Settings.from_env({}), progress=False))
    result = await searched(engine, account, QUESTION, registry=registry, only=Leg.DENSE, limit=20)
    assert result.model_identity == DENSE_MODEL
    assert [(leg.leg, leg.ran) for leg in result.legs] == [(Leg.DENSE, True)]
    exact = await exact_text_scan(engine, account, QUESTION, DENSE_MODEL, WORDS, "dense_embedding")
    expected = [(n.session_id, round(n.similarity, 6)) for n in ranking.rank_neighbours(exact, 2)]
    assert expected and [(n.session.id, round(n.similarity, 6)) for n in result.results] == expected


class FailingWords(WordsEmbedder):
    def embed(self, texts: Any) -> Any:
        raise EmbeddingFailed("the endpoint is down")


async def test_a_dense_leg_that_cannot_run_leaves_the_lexical_leg_answering(
    engine: AsyncEngine,
) -> None:
    account, _, sessions = await topic_sessions(engine, model=DENSE_MODEL)
    down = Registry(
        {MODEL: LexicalEmbedder, DENSE_MODEL: lambda: FailingWords(identity=DENSE_MODEL)}
    )
    result = await searched(engine, account, QUESTION, registry=down, limit=20)
    assert {str(n.session.id) for n in result.results[:2]} == {
        sessions["migration"],
        sessions["migration again"],
    }
    [lexical, dense] = result.legs
    assert lexical.ran and not dense.ran and dense.model == DENSE_MODEL
    assert "search_dense_leg_failed" in result.degraded.reasons
    assert "search_dense_leg_failed" in dense.reasons


async def test_what_keeps_a_text_from_being_embedded_is_named(engine: AsyncEngine) -> None:
    """The words are still compared: only the dense leg and the published cosines need the
    text embedded."""
    disabled, _, _ = await topic_sessions(engine, enabled=False)
    off = await searched(engine, disabled, QUESTION)
    assert off.results and not off.degraded.semantic
    assert off.degraded.reasons == ("semantic_not_enabled", "search_text_not_embedded")
    account, _, _ = await topic_sessions(engine)
    deployment = await searched(engine, account, QUESTION, Tuning(embeddings_enabled=False))
    assert deployment.results and deployment.degraded.reasons == (
        "semantic_disabled_by_deployment",
        "search_text_not_embedded",
    )
    stopwords = await searched(engine, account, "and the of")
    assert stopwords.results == () and stopwords.nearest == ()
    assert stopwords.degraded.reasons == (
        "search_text_not_embedded",
        "similar_nothing_close_enough",
    )


async def test_nothing_close_enough_offers_the_nearest_sessions_loose(engine: AsyncEngine) -> None:
    """A text that shares no word with any passage, under a dense model whose floor nothing
    reaches: no result, the reason, and the nearest sessions below the floor, loose."""
    account, _, _ = await topic_sessions(engine, model=DENSE_MODEL)
    result = await searched(engine, account, "zebra crossing at midnight", limit=3)
    assert result.results == ()
    assert "similar_nothing_close_enough" in result.degraded.reasons
    assert len(result.nearest) == 3
    assert all(n.band is ranking.Band.LOOSE and n.similarity < result.floor for n in result.nearest)


class PricedWords(WordsEmbedder):
    usd_per_1k_tokens = 10.0  # a search text of 8 words costs $0.08


async def spend(engine: AsyncEngine, account: str) -> float:
    async with engine.connect() as conn:
        total = await conn.execute(
            sa.text("SELECT coalesce(sum(cost_usd), 0) FROM api_usage WHERE account_id = :a"),
            {"a": account},
        )
        return float(total.scalar_one())


async def test_a_priced_model_records_the_search_spend_and_stops_at_the_cap(
    engine: AsyncEngine,
) -> None:
    account, _, _ = await topic_sessions(engine, model=DENSE_MODEL, daily_cap_usd=0.1)
    registry = Registry(
        {MODEL: LexicalEmbedder, DENSE_MODEL: lambda: PricedWords(identity=DENSE_MODEL)}
    )
    first = await searched(engine, account, QUESTION, registry=registry)
    assert first.results and await spend(engine, account) == pytest.approx(0.08)
    capped = await searched(engine, account, QUESTION, registry=registry)
    assert capped.results, "the lexical leg still answers"
    assert capped.degraded.reasons[:3] == (
        "semantic_daily_cap_reached",
        "search_text_not_embedded",
        "search_dense_leg_failed",
    )
    assert await spend(engine, account) == pytest.approx(0.08), "nothing spent past the cap"


SEARCH = (
    "query($q: String!) { searchSessions(text: $q, limit: 2) { modelIdentity floor"
    " legs { leg ran } degraded { reasons } results { runtimeSessionId band"
    " matches { text replayAnchor matchedWords } } } }"
)


async def test_graphql_and_rest_search_within_the_account(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, sessions = await topic_sessions(engine)
    found = (await graphql(client, key, SEARCH, q=QUESTION))["data"]["searchSessions"]
    ids = {r["runtimeSessionId"] for r in found["results"]}
    assert ids == {sessions["migration"], sessions["migration again"]}
    assert found["legs"] == [{"leg": "LEXICAL", "ran": True}]
    words = {w for r in found["results"] for m in r["matches"] for w in m["matchedWords"]}
    assert {"migration", "lock", "timeout", "orders"} <= words
    rest = await client.get(
        "/api/v1/runtime-sessions/search",
        params={"q": QUESTION, "limit": 20, "status": "failed"},
        headers=bearer(key),
    )
    assert rest.status_code == 200
    assert rest.json()["results"] == [] and rest.json()["degraded"]["reasons"] == [
        "similar_no_comparable_sessions",
        "similar_filter_applied",
    ]
    everything = await client.get(
        "/api/v1/runtime-sessions/search", params={"q": QUESTION, "limit": 20}, headers=bearer(key)
    )
    returned = {r["runtime_session_id"] for r in everything.json()["results"]}
    assert returned <= set(sessions.values()), "another account's session was returned"
    for bad in ({}, {"q": "   "}, {"q": "x" * 2001}):
        refused = await client.get(
            "/api/v1/runtime-sessions/search", params=bad, headers=bearer(key)
        )
        assert refused.status_code == 422 and refused.json()["parameter"] == "q"


async def test_a_search_cursor_opens_only_for_the_account_it_was_handed_to(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Two accounts with the same sessions, searched with the same text: each one's cursor
    pages its own list, and is refused for the other (issue #30)."""
    _, mine, _ = await topic_sessions(engine)
    _, theirs, _ = await topic_sessions(engine)

    async def rest(key: str, **params: Any) -> httpx.Response:
        return await client.get(
            "/api/v1/runtime-sessions/search",
            params={"q": QUESTION, "limit": 1, **params},
            headers=bearer(key),
        )

    cursor = (await rest(theirs)).json()["next_cursor"]
    assert (await rest(theirs, cursor=cursor)).status_code == 200
    refused = await rest(mine, cursor=cursor)
    assert refused.status_code == 422 and refused.json()["parameter"] == "cursor"
    query = (
        "query($q: String!, $after: String) {"
        " searchSessions(text: $q, limit: 1, after: $after) { endCursor } }"
    )
    body = await graphql(client, theirs, query, q=QUESTION)
    assert body["data"]["searchSessions"]["endCursor"] == cursor  # one codec for both
    [error] = (await graphql(client, mine, query, q=QUESTION, after=cursor))["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": "after"}
    own = (await rest(mine)).json()["next_cursor"]
    assert own != cursor and (await rest(mine, cursor=own)).status_code == 200


async def test_text_postgresql_cannot_hold_is_refused_by_name(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_sessions(engine)
    query = "query($q: String!, $s: [String!]) { searchSessions(text: $q, status: $s) { limit } }"
    for variables, argument in (
        ({"q": "a lone \ud800 surrogate", "s": None}, "text"),
        ({"q": "nul \x00 inside", "s": None}, "text"),
        ({"q": QUESTION, "s": ["failed\ud800"]}, "status"),
    ):
        response = await client.post(
            "/graphql",
            content=json.dumps({"query": query, "variables": variables}),
            headers={**bearer(key), "content-type": "application/json"},
        )
        [error] = response.json()["errors"]
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": argument}


async def test_an_account_indexed_with_its_fit_is_searched_with_that_fit(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """The text is embedded by the account's fitted lexical model, read from its stored fit."""
    from indexer.commands import config_from
    from indexer.worker import index_once

    world = World()
    account, key = world.account(model=MODEL)
    sessions = {}
    for name, text in [*TOPICS.items(), ("migration again", TOPICS["migration"] + " twice")]:
        sid = sessions[name] = world.session(account, name)
        for ordinal in range(2):
            world.activity(sid, ordinal, f"{text} (step {ordinal})")
    await world.write(engine)
    await index_once(engine, Registry(), config_from(Settings.from_env({}), progress=False))
    rest = await client.get(
        "/api/v1/runtime-sessions/search", params={"q": QUESTION}, headers=bearer(key)
    )
    body = rest.json()
    assert body["model_identity"].startswith("local:lexical-384.")  # the fit's identity
    assert {r["runtime_session_id"] for r in body["results"][:2]} == {
        sessions["migration"],
        sessions["migration again"],
    }


async def test_a_search_the_index_cannot_vouch_for_is_checked_by_an_exact_pass(
    engine: AsyncEngine,
) -> None:
    """A session stuck in a loop on the very question: its 1,500 identical passages tie, and
    which of them the dense leg shows is settled by chunk id, which the index's window
    cannot do."""
    account, _, _ = await topic_sessions(engine, model=DENSE_MODEL)
    world = World()
    loop = world.session(account, "stuck in a loop")
    world.chunk(loop, dense_vector(QUESTION), content=QUESTION, model=DENSE_MODEL)
    await world.write(engine)
    await repeat_session(engine, loop, 1500)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), DENSE)
    tuning = Tuning(exact_scan_max_chunks=0)
    result = await searched(
        engine, account, QUESTION, tuning, only=Leg.DENSE, limit=20, max_matches_per_session=5
    )
    assert [leg.path for leg in result.legs if leg.leg is Leg.DENSE] == ["account_index"]
    exact = await exact_text_scan(engine, account, QUESTION, DENSE_MODEL, WORDS)
    expected = [
        (n.session_id, round(n.similarity, 6), [m.chunk_id for m in n.matches])
        for n in ranking.rank_neighbours(exact, 5)
    ]
    served = [
        (n.session.id, round(n.similarity, 6), [m.document_id for m in n.matches])
        for n in result.results
    ]
    assert served == expected
    assert "similar_approximate_unverified" not in result.degraded.reasons


async def test_the_nearest_passages_texts_are_read_when_only_they_are_asked(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Selecting the nearest sessions' texts (or a match's matched words) reads the texts,
    though no result's text was asked for."""
    _, key, _ = await topic_sessions(engine)
    query = (
        "query($q: String!) { searchSessions(text: $q, limit: 2) {"
        " nearest { matches { text } } results { matches { matchedWords } } } }"
    )
    lonely = (await graphql(client, key, query, q="zebra crossing at midnight"))["data"]
    assert [m["text"] for n in lonely["searchSessions"]["nearest"] for m in n["matches"]]
    assert all(m["text"] for n in lonely["searchSessions"]["nearest"] for m in n["matches"])
    found = (await graphql(client, key, query, q=QUESTION))["data"]["searchSessions"]
    assert any(m["matchedWords"] for n in found["results"] for m in n["matches"])


async def test_the_app_embeds_search_texts_with_the_indexers_providers(
    engine: AsyncEngine, settings: Settings
) -> None:
    from similar_sessions.app import create_app

    app = create_app(settings, engine=engine, run_migrations=False)
    assert "openai" in app.state.services.embedders.providers


async def test_a_leg_that_did_not_run_says_why_in_the_contracts_order(engine: AsyncEngine) -> None:
    account, _, _ = await topic_sessions(engine, model=DENSE_MODEL)
    down = Registry(
        {MODEL: LexicalEmbedder, DENSE_MODEL: lambda: FailingWords(identity=DENSE_MODEL)}
    )
    result = await searched(engine, account, QUESTION, registry=down, statuses=("completed",))
    [_, dense] = result.legs
    assert dense.reasons == {"search_text_not_embedded", "search_dense_leg_failed"}
