"""A watching indexer (indexer/watching.py): woken at the receiver's commit, its full passes
kept at their interval under a steady stream, the own indexes built and their tails merged
beside its passes, and run under glibc's malloc when started by hand."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from typing import Any

import psutil
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.ingest import CHANNEL
from indexer.embedders import Registry
from indexer.watching import watch
from indexer.worker import index_once
from tests.db.test_ingest_indexing import an_account, chunks, words
from tests.support.indexing import CONFIG, WORDS_ONLY, rows
from tests.support.otlp import Agent, post, served
from tests.support.world import World
from transfer.formats.spans import session_id


async def test_the_ingest_wakes_a_watching_indexer_at_commit(engine: AsyncEngine) -> None:
    """The watching indexer makes the acknowledged request into a session and indexes it."""
    account, key = await an_account(engine)
    stop = asyncio.Event()
    watching = asyncio.create_task(watch(engine, Registry(WORDS_ONLY), CONFIG, 3600, stop))
    try:
        await asyncio.sleep(0.5)  # its first full pass, over nothing
        agent = Agent("conv-wake")
        agent.user(words("wake"))
        agent.chat(words("woken"))
        started = time.monotonic()
        async with served(engine, indexer=False) as client:
            await post(client, key, agent.spans)
        sid = session_id(account, "conv-wake")
        while not [c for c in (await chunks(engine, sid)).values() if c.vector is not None]:
            assert time.monotonic() - started < 20, "no pass ran: the indexer was not woken"
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await watching
    # the next full pass was an hour away: only the notification can have run this one


async def test_full_passes_keep_their_interval_under_a_steady_stream(
    engine: AsyncEngine, monkeypatch: Any
) -> None:
    """A full pass (which also completes idle sessions) still runs every interval while
    notified passes run back to back: one that falls due during a notified pass runs next."""
    from indexer import watching
    from indexer.passes import PassReport

    account, _ = await an_account(engine)
    passes: list[list[uuid.UUID] | None] = []

    async def a_pass(*args: Any, account_ids: list[uuid.UUID] | None = None, **kw: Any) -> Any:
        passes.append(account_ids)
        await asyncio.sleep(0.2)  # each pass outlasts the gap between notifications
        return PassReport()

    async def no_idle(*args: Any) -> int:
        return 0

    monkeypatch.setattr(watching, "index_once", a_pass)
    monkeypatch.setattr(watching, "complete_idle", no_idle)
    await _watched_while_notified(engine, CONFIG, 0.5, account, 2.6)
    full = [p for p in passes if p is None]
    assert len(passes) - len(full) >= 3, passes  # the notified passes ran
    assert len(full) >= 4, f"{len(full)} full passes in 2.6 s at an interval of 0.5 s"


async def test_a_watching_indexer_merges_tails_beside_its_passes(
    engine: AsyncEngine, monkeypatch: Any
) -> None:
    """A merge builds a whole index again (seconds on a large account): the passes the
    receiver wakes go on meanwhile, rather than wait for it."""
    from indexer import watching
    from indexer.passes import IndexerConfig, PassReport

    account, _ = await an_account(engine)
    passes: list[float] = []
    merging: list[tuple[float, float]] = []

    async def a_pass(*args: Any, **kw: Any) -> Any:
        passes.append(time.monotonic())
        await asyncio.sleep(0.05)
        report = PassReport()
        report.embedded.add(account)
        return report

    async def a_merge(*args: Any) -> int:
        started = time.monotonic()
        await asyncio.sleep(1.5)
        merging.append((started, time.monotonic()))
        return 1

    monkeypatch.setattr(watching, "index_once", a_pass)
    monkeypatch.setattr(watching, "merge_tails", a_merge)
    config = IndexerConfig(CONFIG.policy, 5, 4, False, account_index_min_chunks=8)
    await _watched_while_notified(engine, config, 3600, account, 2.5)
    assert merging, "no merge ran"
    first, ended = merging[0]
    during = [at for at in passes if first < at < ended]
    assert len(during) >= 5, f"{len(during)} passes ran during a merge of {ended - first:.1f} s"


async def test_a_watching_indexer_merges_a_due_tail(engine: AsyncEngine) -> None:
    from indexer.passes import IndexerConfig
    from tests.support.indexing import add_activity, talk, world_with

    account, _ = await world_with(engine, sessions=3)  # 9 chunks
    grown = IndexerConfig(CONFIG.policy, 5, 4, False, account_index_min_chunks=8)
    await index_once(engine, Registry(WORDS_ONLY), grown)  # its own index, built
    marked = "SELECT index_name FROM account_model_indexes WHERE account_id = :a"
    [before] = await rows(engine, marked, a=account)
    world = World()
    for n in range(3, 7):
        sid = world.session(str(account), f"session {n}", day=n)
        add_activity(world, sid, talk(f"s{n}t"))
    await world.write(engine)  # a tail of 12 rows once embedded: due
    stop = asyncio.Event()
    watching = asyncio.create_task(watch(engine, Registry(WORDS_ONLY), grown, 0.2, stop))
    try:
        started = time.monotonic()
        while (await rows(engine, marked, a=account))[0].index_name == before.index_name:
            assert time.monotonic() - started < 30, "the tail was not merged"
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await watching


async def test_a_watching_indexer_started_alone_runs_under_glibcs_malloc(database_url: str) -> None:
    """`index --watch` started by hand, not by `serve`, starts itself again under the
    allocator that gives memory back, as `serve` does (config/heap.py)."""
    env = {**os.environ, "DATABASE_URL": database_url}
    env.pop("PYTHONMALLOC", None)
    indexer = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "similar_sessions.cli", "index", "--watch"],
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert indexer.stderr is not None
        line = b""
        while b"indexing every" not in line:
            line = await asyncio.wait_for(indexer.stderr.readline(), 60)
            assert line, "the indexer ended before it watched"
        assert psutil.Process(indexer.pid).environ().get("PYTHONMALLOC") == "malloc"
    finally:
        indexer.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(indexer.wait(), 30)
        except TimeoutError:
            indexer.kill()
            await indexer.wait()
    assert indexer.returncode == 0


async def _watched_while_notified(
    engine: AsyncEngine, config: Any, interval_s: float, account: uuid.UUID, seconds: float
) -> None:
    """A watching indexer run while a steady stream notifies the account (every 50 ms)."""
    stop = asyncio.Event()
    running = asyncio.create_task(watch(engine, Registry(WORDS_ONLY), config, interval_s, stop))
    try:
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            async with engine.begin() as conn:
                await conn.exec_driver_sql(f"SELECT pg_notify('{CHANNEL}', '{account}')")
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await running


OWN_INDEX = "SELECT index_name FROM account_model_indexes WHERE account_id = :a"


async def test_an_accounts_first_own_index_is_built_beside_a_watching_indexers_passes(
    engine: AsyncEngine,
) -> None:
    """A watch's pass leaves an account's first own index to the task beside it, which builds
    it concurrently: built in the pass, it held every writer of the table for the build."""
    from indexer.passes import IndexerConfig
    from tests.support.indexing import world_with

    account, _ = await world_with(engine, sessions=3)  # 9 chunks
    grown = IndexerConfig(CONFIG.policy, 5, 4, False, account_index_min_chunks=8)
    await index_once(engine, Registry(WORDS_ONLY), grown, merge=False)
    assert await rows(engine, OWN_INDEX, a=account) == []
    stop = asyncio.Event()
    watching = asyncio.create_task(watch(engine, Registry(WORDS_ONLY), grown, 0.2, stop))
    try:
        for _ in range(300):
            if await rows(engine, OWN_INDEX, a=account):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the account's own index was not built beside the passes")
    finally:
        stop.set()
        await watching
    [(name,)] = await rows(engine, OWN_INDEX, a=account)
    valid = "SELECT indisvalid FROM pg_index WHERE indexrelid = CAST(:n AS regclass)"
    assert await rows(engine, valid, n=name) == [(True,)]


async def test_an_own_index_waits_while_more_of_its_accounts_chunks_wait_than_it_needs(
    engine: AsyncEngine,
) -> None:
    """Beside the passes, an account's first own index is not built while more of its chunks
    wait to be embedded (a re-embedding after a new fit) than the index's least size: built
    then, they would all be its tail."""
    from indexer.passes import IndexerConfig
    from indexer.worker import build_own_indexes
    from tests.support.indexing import world_with

    account, _ = await world_with(engine, sessions=6)
    config = IndexerConfig(CONFIG.policy, 5, 4, False)
    await index_once(engine, Registry(WORDS_ONLY), config, merge=False)
    embedded = "SELECT id FROM session_chunks WHERE account_id = :a AND embedding_state = "
    ids = [row.id for row in await rows(engine, embedded + "'embedded' ORDER BY id", a=account)]
    min_chunks = len(ids) // 2 - 1
    assert min_chunks >= 2

    async def waiting(n: int) -> None:
        async with engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "UPDATE session_chunks SET embedding_state = CASE WHEN id = ANY(:w) "
                    "THEN 'pending' ELSE 'embedded' END WHERE id = ANY(:all)"
                ),
                {"w": ids[:n], "all": ids},
            )

    await waiting(min_chunks + 1)  # more embedded than min_chunks, and more waiting
    assert await build_own_indexes(engine, min_chunks, [account]) == 0
    assert await rows(engine, OWN_INDEX, a=account) == []
    await waiting(min_chunks)
    assert await build_own_indexes(engine, min_chunks, [account]) == 1
    assert len(await rows(engine, OWN_INDEX, a=account)) == 1
