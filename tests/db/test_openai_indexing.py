"""The indexer with the `openai` provider against a local OpenAI-compatible server: vectors
and spend from the answer's usage, the daily cap, and batches the provider fails."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import numpy as np
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data import indexing as sql
from data import slot_chunks
from indexer import spend_cap
from indexer.embedders import Registry
from indexer.passes import IndexerConfig
from indexer.providers import providers_for
from indexer.worker import index_once
from tests.support.embedders import WordsEmbedder
from tests.support.fake_openai import (
    HANG,
    FakeOpenAI,
    Reply,
    fake_openai,
    rate_limited,
    server_error,
)
from tests.support.indexing import CONFIG, rows, states, usage, world_with

MODEL = "openai:text-embedding-3-small@256"
KEY = "sk-test-indexer-key-0001"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with fake_openai() as server:
        yield server


def registry(fake: FakeOpenAI, **env: str) -> Registry:
    settings = Settings.from_env(
        {
            "OPENAI_BASE_URL": fake.url,
            "OPENAI_API_KEY": KEY,
            "SIMILAR_SESSIONS_OPENAI_TIMEOUT_S": "5",
            "SIMILAR_SESSIONS_OPENAI_MAX_RETRIES": "0",
            **{f"SIMILAR_SESSIONS_OPENAI_{k.upper()}": v for k, v in env.items()},
        }
    )
    return Registry(providers=providers_for(settings))


def billed(fake: FakeOpenAI) -> int:
    return sum(len(t.split()) for s in fake.seen for t in s.body["input"])


async def test_vectors_and_spend_come_from_the_endpoint(
    engine: AsyncEngine, fake: FakeOpenAI
) -> None:
    await world_with(engine, sessions=2, model=MODEL)
    report = await index_once(engine, registry(fake), CONFIG)
    written = report.chunks_written  # windows sized by the provider's estimate: ~4 bytes a token
    assert report.chunks_embedded == written > 4 and not report.degraded
    assert report.batches == -(-written // 4) == len(fake.seen)
    chunks = await rows(
        engine, "SELECT content, embedding::text, embedding_model FROM session_chunks"
    )
    for c in chunks:
        stored = np.array([float(x) for x in c.embedding.strip("[]").split(",")])
        assert c.embedding_model == MODEL
        assert np.allclose(stored, WordsEmbedder(256).embed([c.content])[0], atol=1e-6)
    spend = await usage(engine)
    assert {(u.provider, u.model) for u in spend} == {("openai", "text-embedding-3-small")}
    assert sum(u.units for u in spend) == billed(fake)  # the answer's usage, not a count here
    # $0.02 per 1M tokens, kept to 1e-10 USD: a batch of a few hundred tokens is not zero.
    assert sum(u.cost_usd for u in spend) == Decimal(billed(fake)) * Decimal("0.02") / 10**6


async def test_the_cap_stops_the_worker_before_the_next_chunk_could_pass_it(
    engine: AsyncEngine, fake: FakeOpenAI
) -> None:
    cap = 0.5
    account, _ = await world_with(engine, sessions=4, cap=cap, model=MODEL)
    priced = registry(fake, prices='{"text-embedding-3-small": 1000}')  # $0.001 a token
    now = datetime.now(UTC)
    first = await index_once(engine, priced, CONFIG, now=now)
    assert first.degraded == {account: spend_cap.CAP_REACHED}
    spent = float(sum(u.cost_usd for u in await usage(engine)))
    assert spent == pytest.approx(billed(fake) * 0.001)
    assert spent <= cap
    left = await rows(
        engine,
        "SELECT content FROM session_chunks WHERE embedding_state = 'pending' "
        "ORDER BY runtime_session_id, chunk_index, id",
    )
    total = first.chunks_written
    assert 0 < first.chunks_embedded < total and len(left) == total - first.chunks_embedded
    # Stopped only when the next chunk, at the most it could cost, would pass the cap.
    next_bound = len(left[0].content.encode()) + 2
    assert spent + next_bound * 0.001 > cap
    before = len(fake.seen)
    again = await index_once(engine, priced, CONFIG, now=now)
    assert again.chunks_embedded == 0 and len(fake.seen) == before
    resumed = await index_once(engine, priced, CONFIG, now=spend_cap.next_day(now))
    assert resumed.chunks_embedded > 0


async def test_a_429_then_200_embeds_the_batch_once(engine: AsyncEngine, fake: FakeOpenAI) -> None:
    await world_with(engine, sessions=1, model=MODEL)
    fake.script.append(rate_limited(retry_after_s=1))
    report = await index_once(engine, registry(fake, max_retries="2"), CONFIG)
    assert report.chunks_embedded == report.chunks_written and report.batches_failed == 0
    assert len(fake.seen) == report.batches + 1 and await states(engine) == {
        "embedded": report.chunks_written
    }
    assert len(await usage(engine)) == report.batches


async def test_a_batch_that_keeps_failing_stays_pending_then_fails_with_its_error(
    engine: AsyncEngine, fake: FakeOpenAI
) -> None:
    account, _ = await world_with(engine, sessions=2, model=MODEL)
    config = IndexerConfig(CONFIG.policy, 5, 4, False, max_attempts=2)
    failing = registry(fake, max_retries="1")
    fake.script.extend([server_error(500)] * 2)
    first = await index_once(engine, failing, config)
    assert (first.batches_failed, first.chunks_failed, first.chunks_embedded) == (1, 0, 0)
    assert len(fake.seen) == 2  # one request and its retry; the account waits for the next pass
    attempts = await rows(
        engine,
        "SELECT embedding_state, embed_attempts, embed_error, embedding FROM session_chunks "
        "ORDER BY runtime_session_id, chunk_index",
    )
    total = first.chunks_written
    assert sorted((a.embed_attempts, a.embed_error) for a in attempts) == [
        *[(0, None)] * (total - 4),
        *[(1, "InternalServerError HTTP 500")] * 4,
    ]
    assert {a.embedding_state for a in attempts} == {"pending"}
    assert all(a.embedding is None for a in attempts) and await usage(engine) == []

    fake.script.extend([server_error(503)] * 2)
    second = await index_once(engine, failing, config)
    assert (second.batches_failed, second.chunks_failed) == (1, 4)
    (failed,) = await rows(
        engine,
        "SELECT count(*) AS n, min(embed_error) AS error FROM session_chunks "
        "WHERE embedding_state = 'failed' AND embed_attempts = 2",
    )
    assert (failed.n, failed.error) == (4, "InternalServerError HTTP 503")

    third = await index_once(engine, failing, config)  # the server answers again
    assert third.chunks_embedded == total - 4
    assert await states(engine) == {"failed": 4, "embedded": total - 4}
    async with engine.begin() as conn:
        assert await slot_chunks.retry_failed(conn, [account]) == 4
    last = await index_once(engine, failing, config)
    assert last.chunks_embedded == 4 and await states(engine) == {"embedded": total}
    (clean,) = await rows(
        engine, "SELECT max(embed_attempts) AS a, max(embed_error) AS e FROM session_chunks"
    )
    assert (clean.a, clean.e) == (0, None)


async def test_a_server_that_times_out_leaves_the_batch_pending(
    engine: AsyncEngine, fake: FakeOpenAI
) -> None:
    await world_with(engine, sessions=1, model=MODEL)
    fake.script.append(Reply(HANG))
    report = await index_once(engine, registry(fake, timeout_s="0.2"), CONFIG)
    assert report.batches_failed == 1 and report.chunks_embedded == 0
    found = await rows(
        engine,
        "SELECT embedding_state, embed_error, count(*) FROM session_chunks GROUP BY 1, 2 "
        "ORDER BY 2",
    )
    assert [tuple(f) for f in found] == [
        ("pending", "APITimeoutError", 4),
        ("pending", None, report.chunks_written - 4),
    ]
    assert await usage(engine) == []


async def test_a_refused_key_marks_the_account_and_counts_no_attempt(
    engine: AsyncEngine, fake: FakeOpenAI
) -> None:
    account, _ = await world_with(engine, sessions=1, model=MODEL)
    fake.script.append(Reply(401, body={"error": {"message": "invalid key"}}))
    report = await index_once(engine, registry(fake), CONFIG)
    assert report.degraded == {account: spend_cap.EMBEDDER_UNAVAILABLE}
    found = await rows(
        engine, "SELECT DISTINCT embedding_state, embed_attempts FROM session_chunks"
    )
    assert [tuple(f) for f in found] == [("pending", 0)]
    later = await index_once(engine, registry(fake), CONFIG)  # the key works again
    assert later.chunks_embedded == report.chunks_written and not later.degraded
    async with engine.connect() as conn:
        reason = await conn.scalar(sa.text("SELECT degraded_reason FROM embedding_settings"))
    assert reason is None


async def test_spend_of_a_day_is_summed_at_full_precision(engine: AsyncEngine) -> None:
    account, _ = await world_with(engine, sessions=1, model=MODEL)
    identity = WordsEmbedder().identity
    async with engine.begin() as conn:
        for _ in range(3):
            await sql.record_usage(conn, account, identity, 40, 40 * 0.02 / 10**6)
        assert await sql.spent_since(conn, account, datetime.now(UTC) - timedelta(hours=1)) == (
            pytest.approx(3 * 40 * 0.02 / 10**6, rel=1e-9)
        )
