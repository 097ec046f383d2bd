"""A lexical refit hides no vector: a watching indexer builds an account's new fit beside its
passes and stages it, embeds the account's passages under it while the served fit answers,
swaps the staged vectors in once complete, and rests before the next fit."""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import replace

import httpx
import numpy as np
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from data import next_fits
from data.engine import make_engine
from data.indexing import enabled_accounts
from data.model_identity import ModelIdentity
from indexer import billing
from indexer.embedders import DEFAULT_MODEL, Registry
from indexer.fitting import REFIT_REST, FitFailed, Refits, built_fit, fit_apart
from indexer.passes import IndexerConfig
from indexer.staged import swap
from indexer.watching import watch
from indexer.worker import build_own_indexes, index_once
from tests.db.test_ingest_indexing import an_account
from tests.support.indexing import rows
from tests.support.otlp import Agent, post
from transfer.formats.spans import session_id

SETTING = "SELECT model_identity AS model FROM embedding_settings WHERE account_id = :a"
STATES = (
    "SELECT count(*) FILTER (WHERE embedding_state = 'embedded' AND embedding_model = :m) AS done,"
    " count(*) FILTER (WHERE embedding_state = 'pending') AS waiting "
    "FROM session_chunks WHERE account_id = :a AND (CAST(:s AS uuid) IS NULL "
    " OR runtime_session_id = CAST(:s AS uuid))"
)
NEXT = (
    "SELECT max(n.model) AS model, count(*) FILTER (WHERE n.state = 'embedded') AS done,"
    " count(*) FILTER (WHERE n.state = 'pending') AS waiting "
    "FROM session_chunk_next n JOIN session_chunks c ON c.account_id = n.account_id "
    "AND c.id = n.chunk_id WHERE n.account_id = :a AND (CAST(:s AS uuid) IS NULL "
    " OR c.runtime_session_id = CAST(:s AS uuid))"
)
ONE_CHUNK = (
    "SELECT content, embedding FROM session_chunks WHERE account_id = :a "
    "AND runtime_session_id = :s AND embedding_state = 'embedded' LIMIT 1"
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


async def test_a_new_fit_is_built_beside_staged_embedded_behind_running_ones_and_swapped_in(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """A watch builds the new fit beside its passes and stages it: the served fit keeps every
    vector (each comparison reads it) while the passages are embedded under the staged one,
    a running session's first, then one bounded batch of the rest a pass; the pass that
    finds none waiting swaps the staged vectors in, and nothing is embedded again."""
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
    await talked(client, key, 18, 19)  # a session running when the new fit is staged
    report = await index_once(engine, registry, BOUNDED, refits=refits)
    served, done, waiting = await states(engine, account)
    assert served == first and waiting == 0 and report.backlog == {account}
    (staged,) = await rows(engine, NEXT, a=account, s=None)
    assert staged.model is not None and staged.model != first and staged.waiting > 0
    assert staged.waiting + staged.done == done  # every served passage, embedded again beside
    running = session_id(account, "conv-backlog-18")
    (its,) = await rows(engine, NEXT, a=account, s=running)
    assert its.done > 0 and its.waiting == 0, "the running session waited behind the backlog"
    passes = 0
    while report.backlog:
        assert (await states(engine, account))[:3:2] == (first, 0)  # served whole meanwhile
        # every other pass another process's, which reads the staged fit's weights
        fresh = registry if passes % 2 else Registry()
        report = await index_once(engine, fresh, BOUNDED, account_ids=[account], refits=refits)
        passes += 1
        assert passes < 200
    assert passes > 1  # each pass took one batch of the backlog, no more
    assert report.embedded == {account}  # the swap's pass: the hook hears its vectors changed
    assert await states(engine, account) == (staged.model, done, 0)  # swapped in, none waits
    assert await rows(engine, NEXT, a=account, s=None) == [(None, 0, 0)]
    assert await rows(engine, "SELECT next_identity FROM lexical_fits") == [(None,)]
    embedder = registry.kept(ModelIdentity.parse(staged.model))
    assert embedder is not None
    (chunk,) = await rows(engine, ONE_CHUNK, a=account, s=running)
    expected = billing.embed_metered(embedder, [chunk.content]).vectors[0]
    assert np.allclose(json.loads(chunk.embedding), expected, atol=1e-6)


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


async def built_beside(
    engine: AsyncEngine, client: httpx.AsyncClient, config: IndexerConfig
) -> tuple[uuid.UUID, str, Registry, Refits]:
    """An account fitted on 12 sessions, grown to 18, whose new fit a watch's pass built
    beside it (not yet staged): (account, its key, ...)."""
    account, key = await an_account(engine, str(DEFAULT_MODEL))
    registry, refits = Registry(), Refits()
    await talked(client, key, 0, 12)
    await index_once(engine, registry, config)
    await talked(client, key, 12, 18)
    await index_once(engine, registry, config, refits=refits)
    await asyncio.wait_for(asyncio.gather(*refits.tasks.values()), 30)
    return account, key, registry, refits


async def staged(
    engine: AsyncEngine, client: httpx.AsyncClient, config: IndexerConfig
) -> tuple[uuid.UUID, str, Registry, Refits]:
    """An account with a new fit staged beside its served one, its passages embedded under
    it in part (one pass of `config`): (account, the served identity, ...)."""
    account, _, registry, refits = await built_beside(engine, client, config)
    report = await index_once(engine, registry, config, refits=refits)
    assert report.backlog == {account}
    return account, (await states(engine, account))[0], registry, refits


async def swapped(
    engine: AsyncEngine, registry: Registry, refits: Refits, config: IndexerConfig
) -> None:
    """A watch's passes (its own indexes left to the task beside them) until the staged fit
    is swapped in."""
    for _ in range(200):
        report = await index_once(engine, registry, config, refits=refits, merge=False)
        if not report.backlog:
            return
    raise AssertionError("the staged fit was never swapped in")


async def test_a_passage_gone_unclear_while_a_fit_is_staged_is_swapped_in_without_a_vector(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """A passage that left `clear` loses its staged vector with its others, and the swap
    gives it none."""
    account, served, registry, refits = await staged(engine, client, BOUNDED)
    beside = "SELECT chunk_id AS id FROM session_chunk_next WHERE account_id = :a "
    (unclear, *_) = await rows(engine, beside + "AND state = 'embedded'", a=account)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE session_chunks SET redaction_state = 'redacted' WHERE id = :i"),
            {"i": unclear.id},
        )
    await index_once(engine, registry, BOUNDED, refits=refits)
    assert unclear.id not in {row.id for row in await rows(engine, beside, a=account)}
    await swapped(engine, registry, refits, BOUNDED)
    assert (await states(engine, account))[0] != served
    found = "SELECT embedding, embedding_state FROM session_chunks WHERE id = :i"
    assert await rows(engine, found, i=unclear.id) == [(None, "pending")]


async def test_a_large_accounts_swap_registers_its_own_index_built_beside_the_passes(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """Past the exact scan's size, the swapped passages stay out of the model's shared index
    (a graph insert each, in the swap's transaction): the account's own index of the new
    model is registered, so lookups scan exactly until it is built beside the passes. The
    model's shared index is built in the swap: built by the next pass, under SHARE, beside
    that concurrent build, each waited for the other."""
    large = replace(BOUNDED, account_index_min_chunks=4)
    account, served, registry, refits = await staged(engine, client, large)
    await swapped(engine, registry, refits, large)
    model = (await states(engine, account))[0]
    assert model != served
    own = "SELECT index_name FROM account_model_indexes WHERE account_id = :a "
    own += "AND model_identity = :m"
    [(name,)] = await rows(engine, own, a=account, m=model)
    assert await rows(engine, "SELECT to_regclass(:n)", n=name) == [(None,)]  # not built yet
    registered = "SELECT to_regclass(index_name) FROM embedding_models WHERE model_identity = :m"
    [(shared_index,)] = await rows(engine, registered, m=model)
    assert shared_index is not None
    shared = (
        "SELECT count(*) FILTER (WHERE in_shared_index) AS shared, count(*) AS n "
        "FROM session_chunks WHERE account_id = :a AND embedding_model = :m"
    )
    [row] = await rows(engine, shared, a=account, m=model)
    assert row.n > 4 and row.shared == 0
    assert await build_own_indexes(engine, 4, [account]) == 1
    valid = "SELECT indisvalid FROM pg_index WHERE indexrelid = CAST(:n AS regclass)"
    assert await rows(engine, valid, n=name) == [(True,)]


async def test_a_staged_fit_is_not_swapped_in_while_passages_wait_under_it(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """Another indexer's pass, or a passage written since the last mark, leaves passages
    waiting under the staged fit: the swap leaves it staged, the served fit untouched."""
    account, served, _, _ = await staged(engine, client, BOUNDED)
    async with engine.connect() as conn:
        [work] = await enabled_accounts(conn, [account])
    assert await swap(engine, work, BOUNDED) is None
    assert (await states(engine, account))[0] == served
    async with engine.begin() as conn:  # as if every one were embedded, and one written since
        await conn.execute(
            sa.text("DELETE FROM session_chunk_next WHERE account_id = :a AND state = 'pending'"),
            {"a": account},
        )
    assert await swap(engine, work, BOUNDED) is None  # marked to wait, not swapped
    assert (await states(engine, account))[0] == served
    (row,) = await rows(engine, NEXT, a=account, s=None)
    assert row.waiting > 0


async def test_a_watching_indexer_swaps_a_staged_fit_in_between_its_full_passes(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """The passes a watch takes at once after a bounded one (no full pass among them: the
    next is an hour away) embed under the staged fit and swap it in."""
    account, served, _, _ = await staged(engine, client, BOUNDED)
    stop = asyncio.Event()
    watching = asyncio.create_task(watch(engine, Registry(), BOUNDED, 3600, stop))
    try:
        for _ in range(300):
            if (await states(engine, account))[0] != served:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the staged fit was not swapped in")
    finally:
        stop.set()
        await watching
    assert await rows(engine, "SELECT next_identity FROM lexical_fits") == [(None,)]


async def test_a_staged_passage_waits_again_only_once_its_text_changed(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """A passage embedded or skipped under the staged fit keeps the hash of its text: marking
    leaves it be until the text changes, then it waits again."""
    account, _, _, _ = await staged(engine, client, BOUNDED)
    done = "SELECT chunk_id AS id FROM session_chunk_next WHERE account_id = :a AND state = "
    embedded, skipped, *_ = await rows(engine, done + "'embedded'", a=account)
    async with engine.begin() as conn:  # as the embedder would skip one with no direction
        await conn.execute(
            sa.text(
                "UPDATE session_chunk_next SET state = 'skipped', embedding = NULL "
                "WHERE chunk_id = :i"
            ),
            {"i": skipped.id},
        )
        assert await next_fits.mark_waiting(conn, account, False) == 0
        await conn.execute(
            sa.text(
                "UPDATE session_chunks SET content = content || ' and again', "
                "content_hash = sha256(convert_to(content || ' and again', 'UTF8')), "
                "written_seq = nextval('session_chunks_written_seq') "  # as a chunk rewritten
                "WHERE id = ANY(CAST(:ids AS uuid[]))"
            ),
            {"ids": [embedded.id, skipped.id]},
        )
        assert await next_fits.mark_waiting(conn, account, False) == 2
    states_now = "SELECT state FROM session_chunk_next WHERE chunk_id = ANY(CAST(:ids AS uuid[]))"
    assert await rows(engine, states_now, ids=[embedded.id, skipped.id]) == [("pending",)] * 2


async def test_a_new_fit_waits_until_the_swapped_one_has_rested_thrice_its_staging(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """The swap says when the fit was swapped in; an account grown past the rule's share and
    interval since is fitted again only once the fit has been served REFIT_REST times as long
    as it was staged. A fit installed at once rests for nothing."""
    account, key, registry, refits = await built_beside(engine, client, BOUNDED)
    await swapped(engine, registry, refits, BOUNDED)
    fit = "SELECT fitted_at, swapped_at FROM lexical_fits WHERE account_id = :a"
    ((fitted_at, swapped_at),) = await rows(engine, fit, a=account)
    assert swapped_at is not None and fitted_at < swapped_at
    await talked(client, key, 18, 30)  # +67% since the swapped fit's 18 sessions

    async def staged_then_swapped_ago(staged_s: float, swapped_s: float) -> None:
        async with engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "UPDATE lexical_fits SET swapped_at = now() - make_interval(secs => :w), "
                    "fitted_at = now() - make_interval(secs => :f) WHERE account_id = :a"
                ),
                {"a": account, "w": swapped_s, "f": swapped_s + staged_s},
            )

    # staged 700 s, so it rests 2,100 s from its swap: 100 s of it left
    await staged_then_swapped_ago(700.0, REFIT_REST * 700.0 - 100.0)
    await index_once(engine, registry, BOUNDED, refits=refits)
    assert refits.tasks == {}, "a new fit was begun before the last one rested"
    await staged_then_swapped_ago(700.0, REFIT_REST * 700.0 + 1.0)
    await index_once(engine, registry, BOUNDED, refits=refits)
    assert set(refits.tasks) == {account}
    await refits.stopped()
    await index_once(engine, registry, BOUNDED)  # another indexer installs one at once
    assert (await rows(engine, fit, a=account))[0][1] is None
