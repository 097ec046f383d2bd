"""Search in every script: a Chinese or Japanese description finds its session through the
lexical leg (the passages' and the text's unspaced runs are searched as character pairs),
and a session whose words the account's fit has never seen (no vector of the configured
model) is still searched, and waits for the dense model."""

from __future__ import annotations

from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.vector_slots import NO_DIRECTION, VectorSlot
from indexer.embedders import DEFAULT_MODEL, Registry
from indexer.lexical import _plain, features
from indexer.passes import IndexerConfig
from indexer.worker import index_once
from tests.support.comparisons import graphql
from tests.support.world import World

CONFIG = IndexerConfig(progress=False)
ENGLISH = [
    "The deploy failed because the readiness probe timed out twice",
    "The database migration failed: a lock on the orders table",
    "The customer asked for a refund of the cancelled flight",
    "The invoice total was wrong: the currency rate was stale",
]
CHINESE = "我的信用卡支付失败了，订单也没有生成，请帮我查一下"
JAPANESE = "新幹線の予約を変更したいのですが、画面でエラーが出ます"
THAI = "ลูกค้าต้องการยกเลิกเที่ยวบินและขอเงินคืนทั้งหมด"
SEARCH = """query($q: String!) { searchSessions(text: $q) { legs { leg ran }
  results { title matches { text matchedWords } } } }"""


async def _state(engine: AsyncEngine, account: str, title: str) -> Any:
    async with engine.connect() as conn:
        return (
            await conn.execute(
                sa.text(
                    "SELECT c.embedding_state, c.embed_error, "
                    f"({VectorSlot.DENSE.waiting}) AS dense_waits "
                    "FROM session_chunks c JOIN runtime_sessions s "
                    "ON s.account_id = c.account_id AND s.id = c.runtime_session_id "
                    "WHERE c.account_id = :a AND s.title = :t"
                ),
                {"a": account, "t": title},
            )
        ).one()


async def _titles(client: httpx.AsyncClient, key: str, text: str) -> list[str]:
    body = await graphql(client, key, SEARCH, q=text)
    return [r["title"] for r in body["data"]["searchSessions"]["results"]]


async def _indexed(engine: AsyncEngine, **others: str) -> tuple[World, str, str]:
    """An account of English sessions (each text twice) and `others` (title: text), written
    and indexed with the default model, fitted."""
    world = World()
    account, key = world.account(model=str(DEFAULT_MODEL))
    for n, text in enumerate([*ENGLISH, *ENGLISH]):
        world.activity(world.session(account, f"english {n}", day=n), 0, text)
    for title, text in others.items():
        world.activity(world.session(account, title), 0, text)
    await world.write(engine)
    await index_once(engine, Registry(), CONFIG, account_ids=[account])
    return world, account, key


async def test_unspaced_scripts_are_searched_by_their_character_pairs(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    _, account, key = await _indexed(engine, chinese=CHINESE, japanese=JAPANESE)

    # Words inside a run, not the run: PostgreSQL's parser alone read each run as one word.
    assert await _titles(client, key, "支付失败") == ["chinese"]
    assert await _titles(client, key, "予約を変更") == ["japanese"]
    body = await graphql(client, key, SEARCH, q="订单没有生成")
    (match,) = body["data"]["searchSessions"]["results"][0]["matches"]
    assert match["matchedWords"]  # the run that held the pairs, for a client to highlight
    # English keeps its stemming beside the pairs.
    assert set(await _titles(client, key, "refunds of cancelled flights")) == {
        "english 2",
        "english 6",
    }

    # Each is alone in its script, so no feature of the fit: no vector of the configured
    # model, yet searched (as above) and waiting for a dense model.
    state = await _state(engine, account, "chinese")
    assert (state.embedding_state, state.embed_error, state.dense_waits) == (
        "skipped",
        NO_DIRECTION,
        True,
    )


async def test_a_session_in_a_script_the_fit_never_saw_is_searched(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    world, account, key = await _indexed(engine)

    world.activity(world.session(account, "thai"), 0, THAI)  # after the fit
    await world.write(engine)  # an upsert: the sessions before are unchanged
    await index_once(engine, Registry(), CONFIG, account_ids=[account])
    assert await _titles(client, key, "ยกเลิกเที่ยวบิน") == ["thai"]
    state = await _state(engine, account, "thai")
    assert (state.embedding_state, state.embed_error) == ("skipped", NO_DIRECTION)


async def test_the_search_terms_pairs_are_the_lexical_models(engine: AsyncEngine) -> None:
    texts = [CHINESE, JAPANESE, THAI, "错 error in 日本語 and ข", "no unspaced script here"]
    async with engine.connect() as conn:
        for text in texts:
            pairs = (
                await conn.execute(sa.text("SELECT unspaced_pairs(:t)"), {"t": text})
            ).scalar_one()
            model = {f for f in features(text) if not _plain(f)}
            assert set(pairs.split()) == model, text
