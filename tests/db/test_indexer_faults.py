"""The indexing worker when things go wrong or run at once: no embedder, an embedder
failing mid-batch, a worker cancelled mid-batch, two workers at once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer import spend_cap
from indexer.embedders import Registry
from indexer.worker import index_once
from tests.support.indexing import (
    CONFIG,
    WORDS,
    WORDS_ONLY,
    Words,
    rows,
    states,
    usage,
    world_with,
)


async def test_an_account_without_an_embedder_is_marked_and_left_pending(
    engine: AsyncEngine,
) -> None:
    account, _ = await world_with(engine, sessions=1, model="remote:unknown-model@8")
    report = await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    assert report.degraded == {account: spend_cap.EMBEDDER_UNAVAILABLE}
    assert await states(engine) == {}  # nothing chunked: windows are sized for the embedder
    (setting,) = await rows(engine, "SELECT degraded_reason FROM embedding_settings")
    assert setting.degraded_reason == "embedder_unavailable"


class FailsOnSecondBatch(Words):
    calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        FailsOnSecondBatch.calls += 1
        if FailsOnSecondBatch.calls == 2:
            raise RuntimeError("model server went away")
        return super().embed(texts)


async def test_an_embedder_failing_mid_batch_leaves_that_batch_untouched(
    engine: AsyncEngine,
) -> None:
    await world_with(engine, sessions=2)  # 6 chunks: a batch of 4 is written, the next fails
    registry = Registry({str(WORDS): FailsOnSecondBatch})
    with pytest.raises(RuntimeError, match="went away"):
        await index_once(engine, registry, CONFIG)
    assert await states(engine) == {"embedded": 4, "pending": 2}
    assert len(await usage(engine)) == 1
    half = await rows(
        engine,
        "SELECT id FROM session_chunks "
        "WHERE (embedding IS NULL) <> (embedding_state <> 'embedded') "
        "OR (embedded_at IS NULL) <> (embedding IS NULL)",
    )
    assert half == []
    retry = await index_once(engine, registry, CONFIG)
    assert retry.chunks_embedded == 2 and await states(engine) == {"embedded": 6}


class Blocks(Words):
    """Blocks inside embed until released, so a test can cancel the worker mid-batch."""

    entered = threading.Event()
    release = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        Blocks.entered.set()
        Blocks.release.wait(timeout=60)
        return super().embed(texts)


async def test_cancelling_the_worker_mid_batch_leaves_nothing_half_written(
    engine: AsyncEngine,
) -> None:
    await world_with(engine, sessions=1)
    task = asyncio.create_task(index_once(engine, Registry({str(WORDS): Blocks}), CONFIG))
    await asyncio.to_thread(Blocks.entered.wait, 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    Blocks.release.set()
    assert await states(engine) == {"pending": 3}
    assert await usage(engine) == []
    finish = await index_once(engine, Registry(WORDS_ONLY), CONFIG)
    assert finish.chunks_embedded == 3


def meeting_embedder(barrier: threading.Barrier, seen: list[str]) -> type[Words]:
    class Meets(Words):
        """Each worker's first batch waits for the other's: both hold their locks at once."""

        met = False

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            if not self.met:
                self.met = True
                barrier.wait(timeout=60)
            seen.extend(texts)
            return super().embed(texts)

    return Meets


async def test_two_workers_at_once_embed_every_chunk_exactly_once(engine: AsyncEngine) -> None:
    await world_with(engine, sessions=4)  # 12 chunks, batches of 4
    barrier, seen_a, seen_b = threading.Barrier(2), [], []
    a = Registry({str(WORDS): meeting_embedder(barrier, seen_a)})
    b = Registry({str(WORDS): meeting_embedder(barrier, seen_b)})
    first, second = await asyncio.gather(
        index_once(engine, a, CONFIG), index_once(engine, b, CONFIG)
    )
    assert seen_a and seen_b and not set(seen_a) & set(seen_b)
    assert first.chunks_embedded + second.chunks_embedded == 12
    assert await states(engine) == {"embedded": 12}
    assert len(await usage(engine)) == first.batches + second.batches
