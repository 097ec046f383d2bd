"""An acknowledged export request is stored as sent and becomes sessions when the indexer
makes it (transfer/live.py): oldest first, each request once, and a request that cannot be
made is kept with its reason while the others go on."""

from __future__ import annotations

import gzip
from datetime import timedelta

import sqlalchemy as sa
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.db.test_ingest import BOTH, accounts, billing_agent, replay, session
from tests.support.indexing import rows
from tests.support.otlp import JSON, PROTOBUF, Agent, body_of, post, served
from transfer.formats.spans import session_id
from transfer.live import accept, make_sessions

IDLE = timedelta(minutes=30)


def counted(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


WAITING = "SELECT count(*) AS n FROM otlp_batches WHERE account_id = :a AND failure IS NULL"


async def test_the_answer_stores_the_request_and_the_indexer_makes_the_session(
    engine: AsyncEngine,
) -> None:
    [(account, key)] = await accounts(engine, BOTH)
    agent = billing_agent()
    async with served(engine, indexer=False) as client:
        await post(client, key, agent.spans)
        await post(client, key, agent.spans[1:2])  # an exporter's retry of one span
    sid = session_id(account, "conv-billing-1")
    assert (await rows(engine, WAITING, a=account))[0].n == 2
    assert await session(engine, sid) is None  # acknowledged, not yet made
    stored = counted("similar_sessions_ingest_spans_total", outcome="stored")
    lags = counted("similar_sessions_ingest_lag_seconds_count")
    made = await make_sessions(engine, IDLE)
    assert (made.stored, made.repeated, made.sessions) == (len(agent.spans), 1, [sid])
    assert counted("similar_sessions_ingest_spans_total", outcome="stored") - stored == made.stored
    assert counted("similar_sessions_ingest_lag_seconds_count") - lags == 1  # one transaction
    assert (await rows(engine, WAITING, a=account))[0].n == 0
    assert len(await replay(engine, sid)) == 5  # user, answer, tool call and result, answer
    assert (await make_sessions(engine, IDLE)).sessions == []  # nothing waits: nothing done


async def test_a_request_that_cannot_be_made_is_kept_with_its_reason_and_the_others_go_on(
    engine: AsyncEngine,
) -> None:
    [(account, _)] = await accounts(engine, BOTH)
    first, last = Agent("conv-first"), Agent("conv-last")
    first.user("hello")
    first.chat("hi")
    last.user("bye")
    last.chat("goodbye")
    await accept(engine, account, PROTOBUF, False, body_of(first.spans))
    await accept(engine, account, PROTOBUF, True, b"\x1f\x8b not gzip at all")
    await accept(engine, account, JSON, True, gzip.compress(body_of(last.spans, JSON)))
    failed = counted("similar_sessions_ingest_failed_requests_total")
    made = await make_sessions(engine, IDLE)
    assert counted("similar_sessions_ingest_failed_requests_total") - failed == 1
    assert sorted(made.sessions) == sorted(
        [session_id(account, "conv-first"), session_id(account, "conv-last")]
    )
    kept = await rows(
        engine, "SELECT body, failure FROM otlp_batches WHERE account_id = :a", a=account
    )
    assert [bytes(row.body) for row in kept] == [b"\x1f\x8b not gzip at all"]
    assert "error" in kept[0].failure.lower()
    assert (await make_sessions(engine, IDLE)).sessions == []  # not taken again


async def test_one_account_makes_only_its_own_requests(engine: AsyncEngine) -> None:
    (mine, _), (theirs, _) = await accounts(engine, BOTH, BOTH)
    agent = billing_agent()
    await accept(engine, mine, PROTOBUF, False, body_of(agent.spans))
    await accept(engine, theirs, PROTOBUF, False, body_of(agent.spans))
    made = await make_sessions(engine, IDLE, [theirs])
    assert made.sessions == [session_id(theirs, "conv-billing-1")]
    assert (await rows(engine, WAITING, a=mine))[0].n == 1
    async with engine.connect() as conn:
        spans = await conn.execute(
            sa.text("SELECT count(*) FROM otlp_spans WHERE account_id = :a"), {"a": mine}
        )
        assert spans.scalar_one() == 0
