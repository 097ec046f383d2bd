"""The indexing worker on a real database, what a pass writes: chunks, vectors, a model
switch, scope, cap, redaction, repeated content, an account's own index."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.model_identity import ModelIdentity
from indexer import spend_cap
from indexer.chunking import chunk_id
from indexer.embedders import Registry
from indexer.passes import IndexerConfig
from indexer.worker import index_once
from tests.support.indexing import (
    CONFIG,
    WORDS,
    WORDS_ONLY,
    Words,
    add_activity,
    rows,
    states,
    talk,
    usage,
    world_with,
)
from tests.support.world import T0, World


async def test_a_pass_chunks_and_embeds_every_session(engine: AsyncEngine) -> None:
    _account, _sessions = await world_with(engine)
    report = await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    assert report.sessions_chunked == 2 and report.chunks_embedded == report.chunks_written == 6
    chunks = await rows(
        engine,
        "SELECT id, runtime_session_id, chunk_index, content, embedding::text, embedding_model, "
        "embedding_state, embedded_at, content_hash FROM session_chunks "
        "ORDER BY runtime_session_id, chunk_index",
    )
    hasher = Words()
    for c in chunks:
        assert c.id == chunk_id(c.runtime_session_id, c.chunk_index)
        assert c.embedding_state == "embedded" and c.embedding_model == str(WORDS)
        assert c.embedded_at is not None and c.content_hash is not None
        assert "helpful agent" not in c.content  # the system prompt is not chunked
        stored = np.array([float(x) for x in c.embedding.strip("[]").split(",")], dtype=np.float32)
        assert np.allclose(stored, hasher.embed([c.content])[0], atol=1e-6)
    spend = await usage(engine)
    assert len(spend) == report.batches == 2  # batches of 4: 4 + 2
    assert sum(u.units for u in spend) == sum(len(c.content.split()) for c in chunks)
    assert {(u.provider, u.model) for u in spend} == {("local", "words-384")}
    assert await rows(
        engine, "SELECT 1 FROM embedding_models WHERE model_identity = :m", m=str(WORDS)
    )


async def test_a_second_pass_changes_nothing_and_new_activity_is_picked_up(
    engine: AsyncEngine,
) -> None:
    _, sessions = await world_with(engine, sessions=1)
    await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    again = await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    assert (again.sessions_chunked, again.chunks_written, again.chunks_embedded) == (0, 0, 0)
    world = World()
    world.lines.append(
        {
            "type": "activity",
            "id": str(uuid.uuid4()),
            "runtime_session_id": str(sessions[0]),
            "ordinal": 99,
            "occurred_at": (T0 + timedelta(minutes=5)).isoformat(),
            "role": "user",
            "kind": "message",
            "content": " ".join(f"late{j}" for j in range(30)),
            "api_usage_id": None,
        }
    )
    await world.write(engine)
    later = await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    assert later.sessions_chunked == 1 and later.chunks_written >= 1
    assert await states(engine) == {"embedded": later.chunks_embedded + 3}


async def test_an_account_switching_models_has_every_chunk_embedded_again(
    engine: AsyncEngine,
) -> None:
    """The same text under a new model: the chunks the old model embedded are written again
    and embedded by the new one, not left holding vectors no comparison of the new model
    can use."""
    other = ModelIdentity.parse("local:other-384@384")

    class Other(Words):
        def __init__(self) -> None:
            super().__init__()
            self.identity = other

    registry = Registry({**WORDS_ONLY, str(other): Other})
    account, _ = await world_with(engine)
    first = await index_once(engine, registry, CONFIG)
    async with engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE embedding_settings SET model = 'other-384' WHERE account_id = :a"),
            {"a": account},
        )
    switched = await index_once(engine, registry, CONFIG)
    assert switched.chunks_written == switched.chunks_embedded == first.chunks_written
    models = await rows(engine, "SELECT DISTINCT embedding_model FROM session_chunks")
    assert [m.embedding_model for m in models] == [str(other)]
    again = await index_once(engine, registry, CONFIG)
    assert (again.chunks_written, again.chunks_embedded) == (0, 0)


async def test_imported_chunks_are_left_alone(engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account(model=str(WORDS))
    sid = world.session(account)
    imported = world.chunk(sid, [1.0] + [0.0] * 383, content="brought my own vector")
    add_activity(world, sid, talk("own"))
    await world.write(engine)
    await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    kept = await rows(
        engine, "SELECT content FROM session_chunks WHERE id = :id", id=uuid.UUID(imported)
    )
    assert kept[0].content == "brought my own vector"


async def test_summaries_only_scope_embeds_only_summaries(engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account(scope="summaries_only", model=str(WORDS))
    sid = world.session(account)
    add_activity(world, sid, talk("chat", 2))
    world.lines.append(
        {
            "type": "activity",
            "id": str(uuid.uuid4()),
            "runtime_session_id": sid,
            "ordinal": 10,
            "occurred_at": T0.isoformat(),
            "role": "assistant",
            "kind": "summary",
            "content": "the customer cancelled a flight and got a refund",
            "api_usage_id": None,
        }
    )
    await world.write(engine)
    await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    found = await rows(
        engine, "SELECT source_kind, embedding_state FROM session_chunks ORDER BY source_kind"
    )
    assert {(k, s) for k, s in found} == {
        ("session_summary", "embedded"),
        ("transcript_message", "pending"),
    }


class PricedHash(Words):
    """The words embedder at a price, so the cap has something to count."""

    usd_per_1k_tokens = 10.0  # 40 tokens cost $0.40


async def test_the_daily_cap_stops_embedding_and_resumes_the_next_day(engine: AsyncEngine) -> None:
    account, _ = await world_with(engine, sessions=2, cap=1.0)  # 6 chunks of 40 tokens
    registry = Registry({str(WORDS): PricedHash})
    now = datetime.now(UTC)
    first = await index_once(engine, registry, CONFIG, now=now)
    assert first.chunks_embedded == 2  # $0.80 spent; a third chunk would pass $1.00
    assert first.degraded == {account: spend_cap.CAP_REACHED}
    (setting,) = await rows(
        engine, "SELECT degraded_reason, degraded_until FROM embedding_settings"
    )
    assert setting.degraded_reason == "daily_cap_reached"
    assert setting.degraded_until == spend_cap.next_day(now)
    assert float(sum(u.cost_usd for u in await usage(engine))) <= 1.0

    same_day = await index_once(engine, registry, CONFIG, now=now)
    assert same_day.chunks_embedded == 0 and same_day.degraded == {account: spend_cap.CAP_REACHED}

    tomorrow = spend_cap.next_day(now) + timedelta(minutes=1)
    resumed = await index_once(engine, registry, CONFIG, now=tomorrow)
    assert resumed.chunks_embedded == 2 and resumed.degraded == {account: spend_cap.CAP_REACHED}
    last = await index_once(engine, registry, CONFIG, now=spend_cap.next_day(tomorrow))
    assert last.chunks_embedded == 2 and not last.degraded
    (setting,) = await rows(
        engine, "SELECT degraded_reason, degraded_until FROM embedding_settings"
    )
    assert setting.degraded_reason is None and setting.degraded_until is None


async def test_only_clear_chunks_are_embedded_and_a_chunk_leaving_clear_loses_its_vector(
    engine: AsyncEngine,
) -> None:
    await world_with(engine, sessions=1)
    first = await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    assert first.chunks_embedded == 3
    async with engine.begin() as conn:
        await conn.execute(
            sa.text("UPDATE session_chunks SET redaction_state = 'withheld' WHERE chunk_index = 0")
        )
    second = await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    assert second.vectors_stripped == 1 and second.chunks_embedded == 0
    (withheld,) = await rows(
        engine,
        "SELECT embedding, embedding_model, embedded_at, embedding_state FROM session_chunks "
        "WHERE chunk_index = 0",
    )
    assert withheld == (None, None, None, "pending")


async def test_content_repeated_across_many_sessions_is_skipped(engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account(model=str(WORDS))
    for n in range(3):
        sid = world.session(account, day=n)
        add_activity(world, sid, [("user", "Thank you so much for your help! ###STOP###")])
    unique = world.session(account, day=9)
    add_activity(world, unique, [("user", "my bag never arrived in Boston")])
    await world.write(engine)
    config = IndexerConfig(CONFIG.policy, repeat_min_sessions=3, batch_size=4, progress=False)
    report = await index_once(engine, Registry(WORDS_ONLY), config)
    assert report.chunks_skipped == 3 and report.chunks_embedded == 1
    assert await states(engine) == {"skipped": 3, "embedded": 1}


async def test_an_account_grown_past_the_exact_scan_size_gets_its_own_index(
    engine: AsyncEngine,
) -> None:
    account, _ = await world_with(engine, sessions=3)  # 3 sessions of 3 chunks each
    small = IndexerConfig(CONFIG.policy, 5, 4, False, account_index_min_chunks=100)
    await index_once(engine, Registry(WORDS_ONLY), small)
    assert not await rows(engine, "SELECT 1 FROM account_model_indexes")
    grown = IndexerConfig(CONFIG.policy, 5, 4, False, account_index_min_chunks=8)
    await index_once(engine, Registry(WORDS_ONLY), grown)
    [index] = await rows(
        engine,
        "SELECT account_id, model_identity, index_name, ef_fit FROM account_model_indexes",
    )
    assert (index.account_id, index.model_identity) == (account, str(WORDS))
    assert index.ef_fit["samples"] == 9  # its ef_search fitted after the build's commit
    assert await rows(engine, "SELECT 1 FROM pg_indexes WHERE indexname = :n", n=index.index_name)


async def test_the_indexer_merges_an_own_index_tail_once_it_is_due(engine: AsyncEngine) -> None:
    """Sessions chunked after the account's own index was built are its tail (not inserted
    into its graph); the pass that finds the tail due builds the index again over them."""
    account, _ = await world_with(engine, sessions=3)  # 9 chunks
    grown = IndexerConfig(CONFIG.policy, 5, 4, False, account_index_min_chunks=8)
    first = await index_once(engine, Registry(WORDS_ONLY), grown)
    assert first.tails_merged == 0
    marked = "SELECT index_name, watermark, chunks_at_build FROM account_model_indexes"
    [before] = await rows(engine, marked)
    world = World()
    for n in range(3, 7):
        sid = world.session(str(account), f"session {n}", day=n)
        add_activity(world, sid, talk(f"s{n}t"))
    await world.write(engine)
    later = await index_once(engine, Registry(WORDS_ONLY), grown)
    assert later.chunks_embedded == 12 and later.tails_merged == 1  # 12 rows > 8: due
    [after] = await rows(engine, marked)
    assert after.index_name != before.index_name and after.watermark > before.watermark
    assert (before.chunks_at_build, after.chunks_at_build) == (9, 21)
    assert not await rows(
        engine, "SELECT 1 FROM pg_indexes WHERE indexname = :n", n=before.index_name
    )


async def test_a_pass_marks_the_repeats_of_the_sessions_it_embedded(engine: AsyncEngine) -> None:
    """An agent repeating itself: the chunks of one text share one vector, and after the pass
    each names the session's first of them (data/repeats.py)."""
    world = World()
    account, _ = world.account(model=str(WORDS))
    sid = world.session(account)
    retry = " ".join(f"retry{j}" for j in range(35))  # a 40-token window holds one such turn
    add_activity(world, sid, [("user", "The build is red on main."), *[("user", retry)] * 7])
    await world.write(engine)
    report = await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    assert report.batches >= 2  # marked once, after the pass, not per batch
    chunks = await rows(
        engine,
        "SELECT id, content, repeat_of FROM session_chunks WHERE runtime_session_id = :s "
        "ORDER BY occurred_at, chunk_index, id",
        s=uuid.UUID(sid),
    )
    firsts: dict[str, uuid.UUID] = {}
    for c in chunks:
        first = firsts.setdefault(c.content, c.id)
        assert c.repeat_of == (None if first == c.id else first), c.content
    assert sum(c.repeat_of is not None for c in chunks) >= 4
