"""A running session indexed as it grows: chunked from its last passage on (earlier chunks
keep their ids and vectors), indexers woken at commit, several indexers sharing one stream
with nothing twice and nothing missed, idle sessions completed."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from data.engine import make_engine
from data.model_identity import ModelIdentity
from indexer.embedders import Registry
from indexer.watching import complete_idle
from indexer.worker import index_once
from resolvers.arguments import SimilarArgs
from resolvers.comparison.search import search_sessions
from resolvers.services import Services
from resolvers.tuning import Tuning
from tests.db.test_ingest import BOTH, replay
from tests.support.indexing import CONFIG, WORDS, WORDS_ONLY, Words, rows
from tests.support.otlp import Agent, post, served
from tests.support.world import World
from transfer.formats.spans import session_id
from transfer.importing import import_lines


async def an_account(engine: AsyncEngine, model: str = str(WORDS)) -> tuple[uuid.UUID, str]:
    world = World()
    account, key = world.account("live", scopes=BOTH, model=model)
    async with engine.begin() as conn:
        await import_lines(conn, "accounts", [json.dumps(line) for line in world.lines])
    return uuid.UUID(account), key


def words(topic: str, n: int = 30) -> str:
    return " ".join(f"{topic}{j}" for j in range(n))


async def chunks(engine: AsyncEngine, sid: uuid.UUID) -> dict[int, Any]:
    found = await rows(
        engine,
        "SELECT chunk_index, id, content, embedding::text AS vector, embedded_at "
        "FROM session_chunks WHERE runtime_session_id = :s ORDER BY chunk_index",
        s=sid,
    )
    return {row.chunk_index: row for row in found}


async def test_a_running_session_is_chunked_from_its_last_passage_on(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    account, key = await an_account(engine)
    agent = Agent("conv-grow")
    sid = session_id(account, "conv-grow")
    registry = Registry(WORDS_ONLY)
    for turn in range(4):
        agent.user(words(f"ask{turn}x"))
        agent.chat(words(f"reply{turn}x"))
    await post(client, key, agent.spans)
    await index_once(engine, registry, CONFIG)
    before = await chunks(engine, sid)
    assert len(before) >= 4 and all(row.vector is not None for row in before.values())
    for turn in range(4, 6):
        agent.user(words(f"ask{turn}x"))
        agent.chat(words(f"reply{turn}x"))
    await post(client, key, agent.spans[-2:])
    report = await index_once(engine, registry, CONFIG)
    after = await chunks(engine, sid)
    assert len(after) > len(before)
    last = max(before)
    for index in range(last):  # every chunk but the last: the same id, text and vector
        assert after[index] == before[index], index
    assert report.chunks_written <= len(after) - last
    assert all(row.vector is not None for row in after.values())
    assert words("reply5x") in after[max(after)].content


async def test_a_change_before_the_last_passage_chunks_the_session_whole(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    account, key = await an_account(engine)
    agent = Agent("conv-late")
    for turn in range(4):
        agent.user(words(f"ask{turn}x"))
        agent.chat(words(f"reply{turn}x"))
    early, rest = agent.spans[:1], agent.spans[1:]
    await post(client, key, rest)
    registry = Registry(WORDS_ONLY)
    await index_once(engine, registry, CONFIG)
    await post(client, key, early)  # the first model call, late: its reply is turn 1
    await index_once(engine, registry, CONFIG)
    stored = await chunks(engine, session_id(account, "conv-late"))
    whole = "\n".join(c.content for c in stored.values())
    assert words("reply0x") in whole
    assert whole.index(words("reply0x")) < whole.index(words("reply1x"))


async def test_two_indexers_share_a_stream_with_nothing_twice_and_nothing_missed(
    engine: AsyncEngine, database_url: str
) -> None:
    """The indexers make the acknowledged requests into sessions, then chunk and embed them."""
    account, key = await an_account(engine)
    agents = [Agent(f"conv-{n}") for n in range(12)]
    async with served(engine, indexer=False) as client:  # nothing made into sessions yet
        for agent in agents:
            agent.user(words(f"{agent.conversation}q"))
            agent.chat(words(f"{agent.conversation}a"))
            await post(client, key, agent.spans)
            await post(client, key, agent.spans[:1])  # an exporter's retry of part of it
    other = make_engine(database_url, pool_size=5)
    embedded: list[int] = []
    try:
        reports = await asyncio.gather(
            index_once(engine, Registry(WORDS_ONLY), CONFIG),
            index_once(other, Registry(WORDS_ONLY), CONFIG),
        )
    finally:
        await other.dispose()
    embedded = [r.chunks_embedded for r in reports]
    total = await rows(
        engine,
        "SELECT count(*) AS n, count(*) FILTER (WHERE embedding_state = 'embedded') AS done "
        "FROM session_chunks WHERE account_id = :a",
        a=account,
    )
    assert total[0].done == total[0].n > 0
    assert sum(embedded) == total[0].n  # each chunk embedded by one indexer, once
    assert sum(r.sessions_chunked for r in reports) == len(agents)
    spans = "SELECT count(*) AS n FROM otlp_spans WHERE account_id = :a"
    assert (await rows(engine, spans, a=account))[0].n == len(agents)  # each span once
    waiting = "SELECT count(*) AS n FROM otlp_batches WHERE account_id = :a"
    assert (await rows(engine, waiting, a=account))[0].n == 0
    for agent in agents:
        assert len(await replay(engine, session_id(account, agent.conversation or ""))) == 2


async def test_a_running_session_idle_past_the_setting_is_completed(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    account, key = await an_account(engine)
    agent = Agent("conv-idle")
    agent.user("anyone there?")
    await post(client, key, [agent.chat("yes")])
    sid = session_id(account, "conv-idle")
    status = "SELECT status FROM runtime_sessions WHERE id = :s"
    assert (await rows(engine, status, s=sid))[0].status == "running"
    assert await complete_idle(engine, 3600) == 0
    assert (await rows(engine, status, s=sid))[0].status == "running"
    assert await complete_idle(engine, 30) == 1  # its spans are a minute old
    assert (await rows(engine, status, s=sid))[0].status == "completed"
    await post(client, key, [agent.chat("still here")])  # a span afterwards: running again
    assert (await rows(engine, status, s=sid))[0].status == "running"


DENSE_WORDS = "local:dense-words-384@384"


class DenseWords(Words):
    def __init__(self) -> None:
        super().__init__()
        self.identity = ModelIdentity.parse(DENSE_WORDS)


async def test_a_search_says_its_dense_leg_is_behind_while_ingested_passages_wait(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    world = World()
    account, key = world.account("live", scopes=BOTH, model=str(WORDS))
    provider, rest = DENSE_WORDS.split(":", 1)
    name, dims = rest.rsplit("@", 1)
    world.lines[-1]["embedding"]["dense"] = {
        "provider": provider,
        "model": name,
        "dimensions": int(dims),
    }
    async with engine.begin() as conn:
        await import_lines(conn, "accounts", [json.dumps(line) for line in world.lines])
    both = Registry({**WORDS_ONLY, DENSE_WORDS: DenseWords})
    agent = Agent("conv-dense")
    agent.user(words("baggage"))
    await post(client, key, [agent.chat(words("allowance"))])
    await index_once(engine, both, CONFIG)
    services = Services(engine, Tuning(), embedders=both)
    caught_up = await search_sessions(services, uuid.UUID(account), "baggage3", SimilarArgs())
    assert caught_up.results
    assert "search_dense_leg_behind" not in caught_up.degraded.reasons
    agent.user(words("stroller"))
    await post(client, key, [agent.chat(words("gate"))])
    await index_once(engine, Registry(WORDS_ONLY), CONFIG)  # no dense embedder: it lags
    behind = await search_sessions(services, uuid.UUID(account), "stroller4", SimilarArgs())
    assert behind.results  # the lexical leg found the new passage
    assert "search_dense_leg_behind" in behind.degraded.reasons


async def test_a_woken_pass_chunks_only_the_sessions_the_receiver_changed(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """A pass the receiver woke reads its change marks, not every session of the account: a
    session imported meanwhile waits for the next full pass, which chunks it alone."""
    from tests.support.indexing import add_activity, talk

    account, key = await an_account(engine)
    world = World()
    imported = world.session(str(account), "imported, not yet chunked")
    add_activity(world, imported, talk("filed"))
    await world.write(engine)
    agent = Agent("conv-woken")
    agent.user(words("woken"))
    await post(client, key, [agent.chat(words("answered"))])
    registry = Registry(WORDS_ONLY)
    woken = await index_once(engine, registry, CONFIG, account_ids=[account], changed_only=True)
    assert woken.sessions_chunked == 1 and woken.chunks_embedded > 0
    assert await chunks(engine, session_id(account, "conv-woken"))
    assert not await chunks(engine, uuid.UUID(imported))
    full = await index_once(engine, registry, CONFIG, account_ids=[account])
    assert full.sessions_chunked == 1  # the imported one; the live one is as a full pass left it
    assert await chunks(engine, uuid.UUID(imported))


async def test_a_woken_pass_skips_the_repeats_its_sessions_make(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """Content the new sessions repeat (with those before them) is skipped in every session
    holding it, as a full pass skips it; content they do not hold is left as it was."""
    from indexer.passes import IndexerConfig
    from tests.support.indexing import states

    account, key = await an_account(engine)
    config = IndexerConfig(CONFIG.policy, repeat_min_sessions=3, batch_size=4, progress=False)
    registry = Registry(WORDS_ONLY)
    thanks = "Thank you so much for your help! ###STOP###"
    for n in range(2):
        agent = Agent(f"conv-thanks-{n}")
        agent.user(thanks)
        await post(client, key, [agent.chat(thanks)])
    await index_once(engine, registry, config, account_ids=[account], changed_only=True)
    assert (await states(engine)).get("skipped", 0) == 0  # in 2 sessions: not yet repeated
    agent = Agent("conv-thanks-2")
    agent.user(thanks)
    await post(client, key, [agent.chat(thanks)])
    other = Agent("conv-other")
    other.user(words("bags"))
    await post(client, key, [other.chat(words("found"))])
    woken = await index_once(engine, registry, config, account_ids=[account], changed_only=True)
    assert woken.chunks_skipped == 3  # the third session's, and the two embedded before it
    assert (await states(engine))["skipped"] == 3
    full = await index_once(engine, registry, config, account_ids=[account])
    assert full.chunks_skipped == 0  # nothing the woken pass left for a full one


async def test_a_woken_pass_keeps_the_fit_and_the_full_pass_refits(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """A pass the live receiver woke uses the fit this process keeps, without reading its
    weights or counting the account's sessions; whether the account grew enough for a new fit
    is the full pass's to see."""
    from dataclasses import replace

    from indexer.embedders import DEFAULT_MODEL
    from indexer.passes import IndexerConfig

    world = World()
    account, key = world.account("lexical", scopes=BOTH, model=str(DEFAULT_MODEL))
    async with engine.begin() as conn:
        await import_lines(conn, "accounts", [json.dumps(line) for line in world.lines])

    async def sessions(first: int, last: int) -> None:
        for n in range(first, last):
            agent = Agent(f"conv-fit-{n}")
            agent.user(f"migration of table orders failed on shard {n % 2}")
            await post(client, key, [agent.chat(f"rolled back shard {n % 2} of run {n}")])

    registry = Registry()
    due = replace(IndexerConfig(progress=False), refit_min_interval_s=0)
    await sessions(0, 4)
    await index_once(engine, registry, due)
    settings = "SELECT model_identity FROM embedding_settings WHERE account_id = :a"
    (first,) = await rows(engine, settings, a=uuid.UUID(account))
    await sessions(4, 6)  # +50% sessions, past the 25% that calls for a new fit
    woken = await index_once(
        engine, registry, due, account_ids=[uuid.UUID(account)], changed_only=True
    )
    (kept,) = await rows(engine, settings, a=uuid.UUID(account))
    assert woken.sessions_chunked == 2 and woken.chunks_embedded > 0
    assert kept.model_identity == first.model_identity
    await index_once(engine, registry, due)
    (second,) = await rows(engine, settings, a=uuid.UUID(account))
    assert second.model_identity != first.model_identity
