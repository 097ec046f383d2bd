"""A re-embedding holds no running session's passages: a bounded pass embeds the sessions it
chunked before the account's backlog, the most recently written first, and leaves the rest of
it to the next pass, taken at once; a pass run once embeds it all."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer.embedders import Registry
from indexer.watching import watch
from indexer.worker import index_once
from tests.db.test_ingest_indexing import an_account, words
from tests.support.indexing import CONFIG, WORDS_ONLY, rows
from tests.support.otlp import Agent, post


async def indexed_then_waiting(
    engine: AsyncEngine, client: httpx.AsyncClient, name: str, sessions: int
) -> uuid.UUID:
    """An account of `sessions` sessions, indexed, then every chunk put back to wait, as a
    fit installed at once leaves them."""
    account, key = await an_account(engine)
    for n in range(sessions):
        agent = Agent(f"conv-{name}-{n}")
        agent.user(words(f"{name}{n}q"))
        await post(client, key, [agent.chat(words(f"{name}{n}a"))])
    await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE session_chunks SET embedding_state = 'pending' WHERE account_id = :a"),
            {"a": account},
        )
    return account


async def test_a_pass_run_once_embeds_the_whole_backlog(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """`index` run once, or an import, leaves nothing waiting (no bound unless one is set)."""
    _, key = await an_account(engine)
    for n in range(6):
        agent = Agent(f"conv-once-{n}")
        agent.user(words(f"once{n}q"))
        await post(client, key, [agent.chat(words(f"once{n}a"))])
    report = await index_once(engine, Registry(WORDS_ONLY), replace(CONFIG, batch_size=1))
    assert report.backlog == set() and report.batches > 6
    waiting = "SELECT count(*) AS n FROM session_chunks WHERE embedding_state = 'pending'"
    assert (await rows(engine, waiting))[0].n == 0


async def test_a_watching_indexer_takes_the_backlog_pass_after_pass_without_waiting(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """A bounded pass that left chunks waiting is followed at once by another: the backlog is
    embedded long before the next full pass (an hour away), and nothing wakes the indexer."""
    account = await indexed_then_waiting(engine, client, "watch", 8)
    config = replace(CONFIG, batch_size=1, backlog_s=0.0)
    stop = asyncio.Event()
    watching = asyncio.create_task(watch(engine, Registry(WORDS_ONLY), config, 3600, stop))
    started = time.monotonic()
    query = (
        "SELECT count(*) AS n, count(*) FILTER (WHERE embedding_state = 'embedded') AS done "
        "FROM session_chunks WHERE account_id = :a"
    )
    try:
        while True:
            (found,) = await rows(engine, query, a=account)
            if found.done == found.n > 8:
                break
            assert time.monotonic() - started < 30, f"{found.done} of {found.n} embedded"
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await watching


async def test_a_bounded_pass_embeds_the_most_recently_written_passages_first(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """After a new fit every passage waits; the running and just-ended sessions' (the last
    written) are embedded again before the account's older ones."""
    account = await indexed_then_waiting(engine, client, "recent", 6)
    one = replace(CONFIG, batch_size=3, backlog_s=0.0)
    report = await index_once(
        engine, Registry(WORDS_ONLY), one, account_ids=[account], changed_only=True
    )
    assert report.backlog == {account} and report.chunks_embedded == 3
    order = "SELECT embedding_state AS state FROM session_chunks WHERE account_id = :a "
    found = await rows(engine, order + "ORDER BY written_seq DESC", a=account)
    assert [r.state for r in found[:3]] == ["embedded"] * 3
    assert {r.state for r in found[3:]} == {"pending"}
