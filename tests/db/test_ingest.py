"""POST /v1/traces: spans an agent exports become sessions as they arrive, in either OTLP
encoding, gzipped or not, as the file import makes them; the OTLP/HTTP answers; scopes."""

from __future__ import annotations

import asyncio
import gzip
import json
import uuid
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from google.rpc.status_pb2 import Status
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.otlp import (
    JSON,
    PROTOBUF,
    Agent,
    body_of,
    hex_id,
    otlp_json,
    partial_success,
    post,
    request_of,
    served,
    unnamed,
)
from tests.support.transfer_files import write_file
from tests.support.world import World
from transfer.formats.spans import session_id
from transfer.importing import import_file, import_lines
from transfer.values import MAX_TURN_CHARS

BOTH = ("view_runtime_sessions", "ingest_runtime_sessions")


async def accounts(engine: AsyncEngine, *scopes: tuple[str, ...]) -> list[tuple[uuid.UUID, str]]:
    """One account per scope set, each with one key of those scopes."""
    world = World()
    made = [world.account(f"team{i}", scopes=s) for i, s in enumerate(scopes)]
    async with engine.begin() as conn:
        await import_lines(conn, "accounts", [json.dumps(line) for line in world.lines])
    return [(uuid.UUID(a), key) for a, key in made]


async def replay(engine: AsyncEngine, sid: uuid.UUID) -> list[tuple[int, str, str, str]]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT ordinal, role, kind, content FROM runtime_session_activity "
                "WHERE runtime_session_id = :id ORDER BY ordinal"
            ),
            {"id": sid},
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


async def session(engine: AsyncEngine, sid: uuid.UUID) -> sa.Row[tuple[object, ...]] | None:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT * FROM runtime_sessions WHERE id = :id"), {"id": sid}
        )
        return rows.first()


def billing_agent(conversation: str | None = "conv-billing-1") -> Agent:
    agent = Agent(conversation)
    agent.user("My invoice for March was charged twice.")
    agent.chat("Let me look up the March invoice.")
    agent.tool("lookup_invoice", {"month": "2026-03"}, "two charges of 40 EUR on 2026-03-02")
    agent.chat("I see a duplicate charge; I have refunded one of them.")
    return agent


@pytest.mark.parametrize("encoding", [PROTOBUF, JSON])
@pytest.mark.parametrize("gzipped", [False, True], ids=["plain", "gzip"])
async def test_spans_in_either_encoding_become_a_running_session(
    engine: AsyncEngine, client: httpx.AsyncClient, encoding: str, gzipped: bool
) -> None:
    [(account, key)] = await accounts(engine, BOTH)
    agent = billing_agent()
    response = await post(client, key, agent.spans, encoding, gzipped)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith(encoding)
    assert partial_success(response) == (0, "")
    sid = session_id(account, "conv-billing-1")
    row = await session(engine, sid)
    assert row is not None
    assert (row.source_type, row.source_id, row.status) == ("otlp", "conv-billing-1", "running")
    assert row.title == "My invoice for March was charged twice."
    turns = await replay(engine, sid)
    assert [(r, k) for _, r, k, _ in turns] == [
        ("user", "message"),
        ("assistant", "message"),
        ("assistant", "tool_call"),
        ("tool", "tool_result"),
        ("assistant", "message"),
    ]  # the second model call re-sent the conversation: replayed once
    assert turns[3][3] == "two charges of 40 EUR on 2026-03-02"


async def test_file_import_and_live_ingest_give_the_same_sessions_and_turns(
    engine: AsyncEngine, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    (live, key), (filed, _) = await accounts(engine, BOTH, BOTH)
    agents = [billing_agent("conv-a"), billing_agent(None)]  # one names no conversation
    agents[0].finish()
    spans = [s for a in agents for s in a.spans]
    for span in reversed(spans):  # one span a request, last first
        assert (await post(client, key, [span])).status_code == 200
    path = write_file(tmp_path, [json.dumps(otlp_json(request_of(spans)))], "spans.otlp.jsonl")
    imported = await import_file(engine, path, file_format="otlp", account_id=filed)
    assert imported.lines["session"] == 2
    for conversation in ("conv-a", agents[1].trace):
        by_live = await session(engine, session_id(live, conversation))
        by_file = await session(engine, session_id(filed, conversation))
        assert by_live is not None and by_file is not None
        fields = ("title", "source_type", "source_id", "reference", "status", "started_at")
        assert [getattr(by_live, f) for f in fields] == [getattr(by_file, f) for f in fields]
        assert by_live.last_activity_at == by_file.last_activity_at
        assert await replay(engine, by_live.id) == await replay(engine, by_file.id)  # type: ignore[arg-type]


async def test_out_of_order_and_repeated_spans_give_the_turns_of_one_ordered_send(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    (ordered, key_a), (shuffled, key_b) = await accounts(engine, BOTH, BOTH)
    agent = billing_agent()
    agent.finish()
    assert (await post(client, key_a, agent.spans)).status_code == 200
    batches = [agent.spans[3:], agent.spans[:2], agent.spans[2:3]]
    for batch in [*batches, batches[1], agent.spans]:  # the exporter retries, twice
        assert (await post(client, key_b, batch)).status_code == 200
    want = await replay(engine, session_id(ordered, "conv-billing-1"))
    assert await replay(engine, session_id(shuffled, "conv-billing-1")) == want
    async with engine.connect() as conn:
        stored = await conn.scalar(
            sa.text("SELECT count(*) FROM otlp_spans WHERE account_id = :a"), {"a": shuffled}
        )
    assert stored == len(agent.spans)


async def test_a_conversation_spans_traces_and_a_trace_that_names_it_late_joins_it(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    [(account, key)] = await accounts(engine, BOTH)
    first = billing_agent("conv-2")
    first.finish()
    second = Agent("conv-2", clock=first.clock + 5, history=list(first.history))
    second.user("And April too?")
    second.chat("April was charged once.")
    root = second.finish(started=first.clock + 5)
    # the children name no conversation; only their root, which ends (and comes) last
    children = unnamed([s for s in second.spans if s is not root])
    assert (await post(client, key, first.spans)).status_code == 200
    assert (await post(client, key, children)).status_code == 200
    alone = session_id(account, second.trace)
    assert await session(engine, alone) is not None  # its own session, for now
    assert (await post(client, key, [root])).status_code == 200
    assert await session(engine, alone) is None
    joined = await replay(engine, session_id(account, "conv-2"))
    assert [c for *_, c in joined][-2:] == ["And April too?", "April was charged once."]
    assert len(joined) == 7
    row = await session(engine, session_id(account, "conv-2"))
    assert row is not None and row.status == "completed"


async def test_status_follows_the_spans(engine: AsyncEngine, client: httpx.AsyncClient) -> None:
    [(account, key)] = await accounts(engine, BOTH)
    agent = billing_agent("conv-s")
    sid = session_id(account, "conv-s")
    await post(client, key, agent.spans)
    assert (await session(engine, sid)).status == "running"  # type: ignore[union-attr]
    agent.finish()
    await post(client, key, agent.spans[-1:])
    assert (await session(engine, sid)).status == "completed"  # type: ignore[union-attr]
    agent.trace, agent.root = hex_id(16), hex_id(8)  # the next request of the conversation
    agent.clock += 1
    agent.user("One more thing")
    await post(client, key, [agent.chat("Sure.")])
    assert (await session(engine, sid)).status == "running"  # type: ignore[union-attr]
    await post(
        client,
        key,
        [agent.tool("refund", {"id": 1}, "failed: 500"), agent.chat("x", error=True)],
    )
    assert (await session(engine, sid)).status == "failed"  # type: ignore[union-attr]


async def test_scopes_ingest_and_view_are_apart(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    (_, viewer), (_, ingester) = await accounts(
        engine, ("view_runtime_sessions",), ("ingest_runtime_sessions",)
    )
    refused = await post(client, viewer, billing_agent().spans)
    assert refused.status_code == 403
    assert "ingest_runtime_sessions" in refused.json()["detail"]
    assert (await post(client, ingester, billing_agent().spans)).status_code == 200
    graphql = await client.post(
        "/graphql",
        json={"query": "{ runtimeSessions(first: 1) { edges { node { id } } } }"},
        headers={"authorization": f"Bearer {ingester}"},
    )
    assert graphql.status_code == 403
    assert (await post(client, "sk-nobody", billing_agent().spans)).status_code == 401


async def test_a_key_writes_only_into_its_own_account(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    (a, key_a), (b, key_b) = await accounts(engine, BOTH, BOTH)
    await post(client, key_b, billing_agent("shared-conv").spans)
    before = await replay(engine, session_id(b, "shared-conv"))
    intruder = billing_agent("shared-conv")
    intruder.user("ignore all that; refund everything")
    intruder.chat("done")
    assert (await post(client, key_a, intruder.spans)).status_code == 200
    assert await replay(engine, session_id(b, "shared-conv")) == before
    assert len(await replay(engine, session_id(a, "shared-conv"))) == len(before) + 2


async def test_a_body_that_does_not_decode_is_400_in_the_request_encoding(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    [(_, key)] = await accounts(engine, BOTH)
    for encoding, body in ((PROTOBUF, b"\xff\xff\xff"), (JSON, b"{not json"), (JSON, b"[]")):
        response = await client.post(
            "/v1/traces",
            content=body,
            headers={"authorization": f"Bearer {key}", "content-type": encoding},
        )
        assert response.status_code == 400, (encoding, body)
        if encoding == PROTOBUF:
            assert Status.FromString(response.content).message
        else:
            assert response.json()["message"]
    other = await client.post(
        "/v1/traces",
        content=b"x",
        headers={"authorization": f"Bearer {key}", "content-type": "text/plain"},
    )
    assert other.status_code == 415


async def test_a_partial_success_names_the_spans_rejected(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    [(account, key)] = await accounts(engine, BOTH)
    agent = billing_agent()
    document = otlp_json(request_of(agent.spans))
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[1]["spanId"] = "abc"  # not 16 hex digits
    spans[2]["startTimeUnixNano"] = str(10**21)  # past the year 9999
    response = await client.post(
        "/v1/traces",
        content=json.dumps(document),
        headers={"authorization": f"Bearer {key}", "content-type": JSON},
    )
    assert response.status_code == 200
    rejected, message = partial_success(response)
    assert rejected == 2
    assert message.startswith("span abc: spanId")
    assert len(await replay(engine, session_id(account, "conv-billing-1"))) == 2  # the first call


async def test_a_body_past_the_limit_is_413_and_a_gzip_bomb_is_refused_as_it_inflates(
    engine: AsyncEngine,
) -> None:
    async with served(engine, ingest_body_bytes="65536") as client:
        [(_, key)] = await accounts(engine, BOTH)
        bomb = gzip.compress(b"\0" * (32 * 1024**2))  # 32 MiB of zeros in about 32 KB
        headers = {"authorization": f"Bearer {key}", "content-type": PROTOBUF}
        response = await client.post(
            "/v1/traces", content=bomb, headers={**headers, "content-encoding": "gzip"}
        )
        assert response.status_code == 413
        assert "inflated" in Status.FromString(response.content).message
        plain = await client.post("/v1/traces", content=b"\0" * 70_000, headers=headers)
        assert plain.status_code == 413
        small = body_of(billing_agent().spans)
        assert (await client.post("/v1/traces", content=small, headers=headers)).status_code == 200


async def test_a_trace_sent_in_two_requests_at_once_lands_in_one_session(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """The children name no conversation, their root does; the two requests race."""
    [(account, key)] = await accounts(engine, BOTH)
    for n in range(6):
        agent = billing_agent(f"race-{n}")
        root = agent.finish()
        children = unnamed([s for s in agent.spans if s is not root])
        answers = await asyncio.gather(post(client, key, children), post(client, key, [root]))
        assert [a.status_code for a in answers] == [200, 200]
        assert await session(engine, session_id(account, agent.trace)) is None
        assert len(await replay(engine, session_id(account, f"race-{n}"))) == 5


async def test_a_span_no_session_can_hold_is_rejected_alone(
    engine: AsyncEngine, client: httpx.AsyncClient
) -> None:
    """A NUL character, or a turn past the import's bound, rejects its span (named), not the
    request: the others are stored."""
    [(account, key)] = await accounts(engine, BOTH)
    agent = Agent("conv-bounds")
    agent.user("fine")
    agent.chat("fine too")
    agent.user("x" * (MAX_TURN_CHARS + 1))
    agent.chat("never stored")
    agent.user("a NUL \x00 here")
    agent.chat("nor this")
    response = await post(client, key, agent.spans)
    assert response.status_code == 200
    rejected, message = partial_success(response)
    assert rejected == 2
    assert f"characters; a turn holds at most {MAX_TURN_CHARS:,}" in message
    assert len(await replay(engine, session_id(account, "conv-bounds"))) == 2
