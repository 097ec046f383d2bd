"""Acknowledged means durable: `serve` killed with SIGKILL in the middle of a stream loses no
span it answered 200 for (the indexer, run after the kill, makes each into its session), and
the exporter's retries (of what was not answered, and of what was answered but whose answer
it may not have read) double nothing. One account's stream past its rate is answered 429
while another account's reads and ingest go on."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import timedelta

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.db.test_ingest import BOTH, accounts, replay
from tests.db.test_serve import free_port
from tests.support.otlp import PROTOBUF, Agent, GenSpan, body_of, served
from transfer.formats.spans import session_id
from transfer.live import accept, make_sessions


async def start_serve(database_url: str, port: int) -> asyncio.subprocess.Process:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SIMILAR_SESSIONS_SERVE_INDEXES": "false",
    }
    server = await asyncio.create_subprocess_exec(
        *[sys.executable, "-m", "similar_sessions.cli", "serve", "--port", str(port)],
        env=env,
        stderr=asyncio.subprocess.DEVNULL,
    )
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=2) as http:
        for _ in range(300):
            try:
                if (await http.get("/healthz")).status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("serve did not start")


def batches(conversations: int, turns: int) -> list[list[GenSpan]]:
    """The spans of several conversations, in batches of a few spans each, interleaved."""
    agents = [Agent(f"conv-{n}") for n in range(conversations)]
    out: list[list[GenSpan]] = []
    for turn in range(turns):
        batch: list[GenSpan] = []
        for agent in agents:
            agent.user(f"question {turn} of {agent.conversation} about refunds and seats")
            batch.append(agent.chat(f"answer {turn} for {agent.conversation}"))
        out.append(batch)
    return out


async def send(http: httpx.AsyncClient, key: str, batch: list[GenSpan]) -> bool:
    try:
        answer = await http.post(
            "/v1/traces",
            content=body_of(batch),
            headers={"authorization": f"Bearer {key}", "content-type": PROTOBUF},
        )
    except httpx.TransportError:
        return False
    return answer.status_code == 200


async def test_a_sigkill_of_serve_loses_no_acknowledged_span_and_retries_double_nothing(
    engine: AsyncEngine, database_url: str
) -> None:
    (account, key), (reference, _) = await accounts(engine, BOTH, BOTH)
    sent = batches(conversations=6, turns=40)
    port = free_port()
    acked: list[int] = []
    enough = asyncio.Event()  # a dozen batches answered: time to kill
    server = await start_serve(database_url, port)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:

        async def stream(lane: int) -> None:
            for n in range(lane, len(sent), 4):
                if await send(http, key, sent[n]):
                    acked.append(n)
                    if len(acked) >= 12:
                        enough.set()

        lanes = [asyncio.create_task(stream(lane)) for lane in range(4)]
        await asyncio.wait_for(enough.wait(), 60)
        os.kill(server.pid, signal.SIGKILL)  # mid-stream: requests in flight
        await asyncio.gather(*lanes)
        await server.wait()
    assert 12 <= len(acked) < len(sent)
    idle = timedelta(minutes=30)
    await make_sessions(engine, idle)  # what the indexer, not running beside serve, does
    async with engine.connect() as conn:
        stored = {
            (row.trace_id, row.span_id)
            for row in await conn.execute(
                sa.text("SELECT trace_id, span_id FROM otlp_spans WHERE account_id = :a"),
                {"a": account},
            )
        }
    for n in acked:  # every acknowledged span survived the kill
        assert {(s.trace, s.span) for s in sent[n]} <= stored
    server = await start_serve(database_url, port)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            for n in range(len(sent)):  # the retries: the unanswered, and half the answered
                if n not in acked or n % 2:
                    assert await send(http, key, sent[n])
    finally:
        server.kill()
        await server.wait()
    for batch in sent:  # the reference: each batch sent once, answered
        await accept(engine, reference, PROTOBUF, False, body_of(batch))
    await make_sessions(engine, idle)
    for n in range(6):
        got = await replay(engine, session_id(account, f"conv-{n}"))
        assert got == await replay(engine, session_id(reference, f"conv-{n}"))
        assert len(got) == 2 * 40


async def test_an_account_past_its_span_rate_is_429_while_another_goes_on(
    engine: AsyncEngine,
) -> None:
    (loud, loud_key), (quiet, quiet_key) = await accounts(engine, BOTH, BOTH)
    async with served(engine, ingest_span_rate="6/minute") as client:
        agent = Agent("loud-conv")
        for n in range(8):
            agent.user(f"question {n}")
            agent.chat(f"answer {n}")
        first = await client.post(
            "/v1/traces",
            content=body_of(agent.spans[:5]),
            headers={"authorization": f"Bearer {loud_key}", "content-type": PROTOBUF},
        )
        assert first.status_code == 200
        refused = await client.post(
            "/v1/traces",
            content=body_of(agent.spans[5:]),  # 5 + 3 spans: past 6 a minute
            headers={"authorization": f"Bearer {loud_key}", "content-type": PROTOBUF},
        )
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        quiet_agent = Agent("quiet-conv")
        quiet_agent.user("hello")
        ok = await client.post(
            "/v1/traces",
            content=body_of([quiet_agent.chat("hi")]),
            headers={"authorization": f"Bearer {quiet_key}", "content-type": PROTOBUF},
        )
        assert ok.status_code == 200
        read = await client.post(
            "/graphql",
            json={"query": "{ runtimeSessions(first: 5) { nodes { title status } } }"},
            headers={"authorization": f"Bearer {quiet_key}"},
        )
        assert read.status_code == 200
        assert read.json()["data"]["runtimeSessions"]["nodes"] == [
            {"title": "hello", "status": "running"}
        ]
    assert await replay(engine, session_id(quiet, "quiet-conv"))
    stored = await replay(engine, session_id(loud, "loud-conv"))
    assert len(stored) == 2 * 5  # nothing of the refused request
