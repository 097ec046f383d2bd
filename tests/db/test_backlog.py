"""A re-embedding holds no running session's passages: a watching indexer builds an account's
new lexical fit beside its passes, a bounded pass embeds the sessions it chunked before the
account's backlog and leaves the rest of it to the next pass, taken at once."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import replace

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from data.engine import make_engine
from indexer.embedders import DEFAULT_MODEL, Registry
from indexer.fitting import FitFailed, Refits, built_fit, fit_apart
from indexer.passes import IndexerConfig
from indexer.watching import watch
from indexer.worker import index_once
from tests.db.test_ingest_indexing import an_account, words
from tests.support.indexing import CONFIG, WORDS_ONLY, rows
from tests.support.otlp import Agent, post
from transfer.formats.spans import session_id

SETTING = "SELECT model_identity AS model FROM embedding_settings WHERE account_id = :a"
STATES = (
    "SELECT count(*) FILTER (WHERE embedding_state = 'embedded' AND embedding_model = :m) AS done,"
    " count(*) FILTER (WHERE embedding_state = 'pending') AS waiting "
    "FROM session_chunks WHERE account_id = :a AND (CAST(:s AS uuid) IS NULL "
    " OR runtime_session_id = CAST(:s AS uuid))"
)
# a new fit due at once, and a pass that embeds one batch of two beyond its own sessions
BOUNDED = replace(
    IndexerConfig(progress=False), refit_min_interval_s=0, batch_size=2, backlog_s=0.0
)


async def talked(client: httpx.AsyncClient, key: str, first: int, last: int) -> None:
    """Sessions first..last-1, each a question and an answer of its own shard and run."""
    for n in range(first, last):
        agent = Agent(f"conv-backlog-{n}")
        agent.user(f"migration of table orders failed on shard {n % 3} after {n} retries")
        await post(client, key, [agent.chat(f"rolled back shard {n % 3} of run {n} and retried")])


async def states(engine: AsyncEngine, account: uuid.UUID, sid: uuid.UUID | None = None) -> tuple:
    (model,) = await rows(engine, SETTING, a=account)
    (row,) = await rows(engine, STATES, a=account, m=model.model, s=sid)
    return model.model, row.done, row.waiting


async def test_a_new_fit_is_built_beside_the_passes_and_its_backlog_waits_behind_running_ones(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    account, key = await an_account(engine, str(DEFAULT_MODEL))
    registry, refits = Registry(), Refits()
    await talked(client, key, 0, 12)
    await index_once(engine, registry, BOUNDED)  # the first fit: built in the pass
    first, done, waiting = await states(engine, account)
    assert done > 0 and waiting == 0
    await talked(client, key, 12, 18)  # +50%, past the 25% that calls for a new fit
    report = await index_once(engine, registry, BOUNDED, refits=refits)
    # the new fit is being built beside the pass, which embedded with the current one
    assert (await states(engine, account))[0] == first
    assert report.sessions_chunked == 6 and report.chunks_embedded > 0
    await asyncio.wait_for(asyncio.gather(*refits.tasks.values()), 30)
    await talked(client, key, 18, 19)  # a session running when the new fit is installed
    report = await index_once(engine, registry, BOUNDED, refits=refits)
    second, done, waiting = await states(engine, account)
    assert second != first and waiting > 0 and report.backlog == {account}
    running = session_id(account, "conv-backlog-18")
    _, its_done, its_waiting = await states(engine, account, running)
    assert its_done > 0 and its_waiting == 0, "the running session waited behind the backlog"
    passes = 0
    while report.backlog:
        report = await index_once(engine, registry, BOUNDED, account_ids=[account], refits=refits)
        passes += 1
        assert passes < 200
    assert passes > 1  # each pass took one batch of the backlog, no more
    assert (await states(engine, account))[1:] == (done + waiting, 0)


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
    account, key = await an_account(engine)
    for n in range(8):
        agent = Agent(f"conv-watch-{n}")
        agent.user(words(f"watch{n}q"))
        await post(client, key, [agent.chat(words(f"watch{n}a"))])
    await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    async with engine.begin() as conn:  # every chunk to embed again, as after a new fit
        await conn.execute(
            sa.text("UPDATE session_chunks SET embedding_state = 'pending' WHERE account_id = :a"),
            {"a": account},
        )
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


async def test_a_fit_built_beside_is_let_go_once_another_indexer_installed_one(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """Two watching indexers may both build an account's new fit; the one whose fit comes
    second lets it go rather than install, later, a fit of passages long since grown."""
    account, key = await an_account(engine, str(DEFAULT_MODEL))
    registry, mine = Registry(), Refits()
    await talked(client, key, 0, 12)
    await index_once(engine, registry, BOUNDED)
    await talked(client, key, 12, 18)
    await index_once(engine, registry, BOUNDED, refits=mine)  # its fit begun beside
    assert set(mine.tasks) == {account}
    await index_once(engine, registry, BOUNDED)  # another indexer fits within its pass
    installed = (await states(engine, account))[0]
    await index_once(engine, registry, BOUNDED, refits=mine)
    assert mine.tasks == {}
    assert (await states(engine, account))[0] == installed


async def test_a_fit_built_apart_is_the_fit_built_in_the_process(
    engine: AsyncEngine, client: httpx.AsyncClient, database_url: str
) -> None:
    """The fit's own process reads the same passages and counts them the same way; one that
    cannot reach the database fails, saying why, and nothing is installed."""
    account, key = await an_account(engine, str(DEFAULT_MODEL))
    await talked(client, key, 0, 12)
    await index_once(engine, Registry(), BOUNDED)
    rule = BOUNDED.repeat
    here = await built_fit(engine, account, BOUNDED.template_min_sessions, rule)
    apart = await fit_apart(engine, account, BOUNDED.template_min_sessions, rule)
    assert apart.identity == here.identity and apart.sessions == here.sessions == 12
    assert apart.to_bytes() == here.to_bytes()
    nowhere = make_url(database_url).set(database="no_such_database")
    elsewhere = make_engine(nowhere.render_as_string(hide_password=False), pool_size=1)
    try:
        with pytest.raises(FitFailed, match="no_such_database"):
            await fit_apart(elsewhere, account, BOUNDED.template_min_sessions, rule)
    finally:
        await elsewhere.dispose()


async def test_a_bounded_pass_embeds_the_most_recently_written_passages_first(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """After a new fit every passage waits; the running and just-ended sessions' (the last
    written) are embedded again before the account's older ones."""
    account, key = await an_account(engine)
    for n in range(6):
        agent = Agent(f"conv-recent-{n}")
        agent.user(words(f"recent{n}q"))
        await post(client, key, [agent.chat(words(f"recent{n}a"))])
    await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    async with engine.begin() as conn:  # every chunk to embed again, as after a new fit
        await conn.execute(
            sa.text("UPDATE session_chunks SET embedding_state = 'pending' WHERE account_id = :a"),
            {"a": account},
        )
    one = replace(CONFIG, batch_size=3, backlog_s=0.0)
    report = await index_once(
        engine, Registry(WORDS_ONLY), one, account_ids=[account], changed_only=True
    )
    assert report.backlog == {account} and report.chunks_embedded == 3
    order = "SELECT embedding_state AS state FROM session_chunks WHERE account_id = :a "
    found = await rows(engine, order + "ORDER BY written_seq DESC", a=account)
    assert [r.state for r in found[:3]] == ["embedded"] * 3
    assert {r.state for r in found[3:]} == {"pending"}
