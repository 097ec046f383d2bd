"""Search by describing the failure: the lexical leg is BM25 over the account's passages, the
dense leg equals an exact scan in the dense model's space on every path, the two are fused by
reciprocal rank, and every way a search comes up short is named (a leg that cannot run leaves
the other answering)."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data import bm25
from data.account_indexes import ensure_account_index
from data.lookups import Ask
from indexer.embedders import Registry
from indexer.lexical import LexicalEmbedder
from indexer.whole_passages import WholePassages
from resolvers.comparison.legs import Leg
from resolvers.rules import ranking
from resolvers.rules.fusion import reciprocal_rank_fusion
from resolvers.tuning import Tuning
from tests.support.embedders import WordsEmbedder
from tests.support.search_world import (
    DENSE,
    DENSE_MODEL,
    MODEL,
    QUESTION,
    TOPICS,
    WORDS,
    FailingWords,
    PricedWords,
    exact_text_scan,
    reference_bm25,
    searched,
    spend,
    topic_sessions,
)
from tests.support.tails import into_tail
from tests.support.world import World


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


@pytest.mark.parametrize("path", ["exact", "index", "account_index", "account_index+tail"])
async def test_the_dense_leg_equals_an_exact_scan_on_every_path(
    engine: AsyncEngine, path: str
) -> None:
    """On the account's own index with a third of its rows in its tail too."""
    account, _, _ = await topic_sessions(engine, model=DENSE_MODEL)
    if path.startswith("account_index"):
        async with engine.begin() as conn:
            await ensure_account_index(conn, uuid.UUID(account), DENSE)
    if path.endswith("+tail"):
        assert await into_tail(engine, account) > 0
        path = "account_index"
    tuning = Tuning(exact_scan_max_chunks=1000 if path == "exact" else 0)
    result = await searched(engine, account, QUESTION, tuning, only=Leg.DENSE, limit=20)
    assert [leg.path for leg in result.legs if leg.leg is Leg.DENSE] == [path]
    exact = await exact_text_scan(engine, account, QUESTION, DENSE_MODEL, WORDS)
    expected = [(n.session_id, round(n.similarity, 6)) for n in ranking.rank_neighbours(exact, 2)]
    assert [(n.session.id, round(n.similarity, 6)) for n in result.results] == expected
    assert all(m.probe is None and m.text for n in result.results for m in n.matches)


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
    # Found by both legs, a session is listed once.
    ids = [n.session.id for n in both.results]
    assert len(ids) == len(set(ids)) and set(orders[0]) & set(orders[1])
    # Each leg says how long it took; the dense leg's time holds the text's embedding.
    assert all(leg.elapsed_ms > 0 for leg in both.legs)


async def test_the_dense_slot_beside_the_lexical_model_is_searched_exactly(
    engine: AsyncEngine,
) -> None:
    """An account on the lexical model with a dense model beside it: the indexer embeds the
    same passages with both, and the dense leg reads the dense vectors."""
    from indexer.commands import config_from
    from indexer.worker import index_once

    world, account = _with_dense_words()
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


def _with_dense_words() -> tuple[World, str]:
    """A world of one account on the lexical model with the words model as its dense one."""
    world = World()
    account, _ = world.account(model=MODEL)
    world.lines[-1]["embedding"]["dense"] = {
        "provider": "local",
        "model": "words-384",
        "dimensions": 384,
    }
    return world, account


class ShortWords(WordsEmbedder):
    """The words embedder reading at most 8 words: a longer passage is read in windows."""

    max_tokens: int | None = 8


async def test_the_dense_leg_scores_a_passage_by_its_best_window(engine: AsyncEngine) -> None:
    """A passage the dense model reads in windows keeps each window's vector: the dense leg
    finds it by the window that says what the text says, which the windows' average blurs."""
    from indexer.commands import config_from
    from indexer.worker import index_once

    world, account = _with_dense_words()
    window = "database migration failed with lock timeout on orders"
    others = " ".join(TOPICS[t] for t in ("deploy", "billing"))
    long_id = world.session(account, "long")
    world.activity(long_id, 0, f"{window} {others}")
    short_id = world.session(account, "short")
    world.activity(short_id, 0, "orders")
    await world.write(engine)
    dense = ShortWords(identity=DENSE_MODEL)
    registry = Registry({MODEL: LexicalEmbedder, DENSE_MODEL: lambda: dense})
    await index_once(engine, registry, config_from(Settings.from_env({}), progress=False))
    async with engine.connect() as conn:
        windows = dict(
            (
                await conn.execute(
                    sa.text(
                        "SELECT s.title, count(w.window_index) FROM runtime_sessions s "
                        "JOIN session_chunks c ON c.account_id = s.account_id "
                        "AND c.runtime_session_id = s.id LEFT JOIN session_chunk_windows w "
                        "ON w.account_id = c.account_id AND w.chunk_id = c.id "
                        "WHERE s.account_id = :a GROUP BY s.title"
                    ),
                    {"a": account},
                )
            ).all()
        )
    words = len(f"{window} {others}".split())
    assert windows == {"long": -(-words // 8), "short": 0}  # one window: its own vector
    result = await searched(engine, account, window, registry=registry, only=Leg.DENSE, limit=5)
    best = {n.session.id: n.similarity for n in result.results}
    assert best[uuid.UUID(long_id)] == pytest.approx(1.0, abs=1e-6)  # its first window
    averaged = float(WholePassages(dense).embed([f"{window} {others}"])[0] @ dense.vector(window))
    assert averaged < 0.7
