"""One account's concurrent work is bounded (issues #30, #37): the replay turns and content one
request may read, the connections it reads over, its account's rate and queue (whatever its
keys). Past a bound: 429 with Retry-After, or LIMIT_EXCEEDED before anything runs; other
accounts are not held back, and a lone account is never refused for want of a turn."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette

from config.settings import Settings
from data import sessions as sessions_sql
from resolvers import loaders
from resolvers.services import READS_PER_REQUEST
from similar_sessions.app import create_app
from similar_sessions.fair_queue import FairQueue
from tests.support.comparisons import bearer, counted_statements, graphql
from tests.support.world import World

VIEWER = {"query": "{ viewer { name } }"}
ISSUE_PAGE = (
    "runtimeSessions(first: 100) { nodes { replayPage(first: 500) { nodes { ordinal } } } }"
)
ISSUE_QUERY = "{ " + " ".join(f"a{i}: {ISSUE_PAGE}" for i in range(30)) + " }"


def refused(bound: str) -> float:
    """How many requests this process refused by the bound (its metric)."""
    value = REGISTRY.get_sample_value("similar_sessions_refused_requests_total", {"bound": bound})
    return value or 0.0


def app_with(engine: AsyncEngine, **env: str) -> Starlette:
    settings = Settings.from_env({f"SIMILAR_SESSIONS_{k.upper()}": v for k, v in env.items()})
    return create_app(settings, engine=engine, run_migrations=False)


@asynccontextmanager
async def client_of(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://t") as client,
    ):
        yield client


async def two_accounts(engine: AsyncEngine, turns: int = 3, sessions: int = 1) -> dict[str, Any]:
    world = World()
    account, key = world.account("loud")
    ids = []
    for s in range(sessions):
        sid = world.session(account, f"session {s}", day=s)
        ids.append(sid)
        for ordinal in range(turns):
            world.activity(sid, ordinal, f"turn {ordinal}")
    _, other_key = world.account("quiet")
    await world.write(engine)
    return {"key": key, "other": other_key, "sessions": ids}


async def one_account_two_keys(engine: AsyncEngine) -> dict[str, Any]:
    """An account with two keys and a few sessions, and another account."""
    world = World()
    account, key = world.account("loud")
    second = f"{key}-second"
    world.lines[-1]["api_keys"].append({"key": second, "scopes": ["view_runtime_sessions"]})
    for s in range(3):
        sid = world.session(account, f"session {s}", day=s)
        world.activity(sid, 0, f"turn {s}")
    other_id, other_key = world.account("quiet")
    await world.write(engine)
    return {"account": account, "keys": (key, second), "other": other_key, "other_id": other_id}


async def waiting_in(fair: FairQueue, account: str, count: int) -> None:
    for _ in range(200):
        flow = fair.flows.get(account)
        if flow is not None and len(flow.waiting) == count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"{count} requests of {account} never waited")


async def test_keys_of_one_account_share_one_queue_and_only_a_full_one_refuses(
    engine: AsyncEngine,
) -> None:
    found = await one_account_two_keys(engine)
    first_key, second_key = found["keys"]
    app = app_with(engine, seats="1", account_queue="2")
    async with client_of(app) as client:
        fair: FairQueue = app.state.fair_queue
        release, holding = asyncio.Event(), asyncio.Event()

        async def occupy() -> None:  # work of a third account holds the only seat
            async with fair.seated("third", 1):
                holding.set()
                await release.wait()

        busy = asyncio.create_task(occupy())
        await holding.wait()
        post = partial(client.post, "/graphql", json=VIEWER)
        waiting = [asyncio.create_task(post(headers=bearer(k))) for k in (first_key, second_key)]
        await waiting_in(fair, found["account"], 2)
        before = refused("account_queue")
        third = await post(headers=bearer(first_key))  # either key: one queue, now full
        assert third.status_code == 429, third.text
        assert third.json()["error"] == "account_queue_full"
        assert third.json()["limit"] == 2
        assert "SIMILAR_SESSIONS_ACCOUNT_QUEUE" in third.json()["detail"]
        assert third.headers["retry-after"] == "1"
        assert refused("account_queue") == before + 1
        elsewhere = asyncio.create_task(post(headers=bearer(found["other"])))  # its own queue
        await waiting_in(fair, found["other_id"], 1)
        release.set()
        await busy
        answers = await asyncio.gather(*waiting, elsewhere)
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert fair.free == 1 and fair.flows == {}


async def test_the_account_rate_bounds_its_keys_together_above_each_key_rate(
    engine: AsyncEngine,
) -> None:
    found = await one_account_two_keys(engine)
    first_key, second_key = found["keys"]
    app = app_with(engine, rate_limit="2/minute", account_rate_limit="3/minute")
    async with client_of(app) as client:
        post = partial(client.post, "/graphql", json=VIEWER)
        answers = [await post(headers=bearer(k)) for k in (first_key, second_key, first_key)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        before = refused("account_rate_limit")
        over = await post(headers=bearer(second_key))  # its second: the key is within 2
        assert over.status_code == 429
        assert over.json()["error"] == "rate_limited" and over.json()["limit"] == "3/minute"
        assert "SIMILAR_SESSIONS_ACCOUNT_RATE_LIMIT" in over.json()["detail"]
        assert int(over.headers["retry-after"]) >= 1
        assert refused("account_rate_limit") == before + 1
        key_over = await post(headers=bearer(first_key))  # its third: the key's own rate
        assert "SIMILAR_SESSIONS_RATE_LIMIT" in key_over.json()["detail"]
        assert (await post(headers=bearer(found["other"]))).status_code == 200


LONE_WORK = (
    "{ failureModes(windowDays: 30) { groupCount } }",
    "{ runtimeSessions(first: 20) { nodes { id } } }",
    '{ searchSessions(text: "turn") { results { score } } }',
    "{ viewer { name } }",
)


async def test_a_lone_account_is_never_refused_whatever_its_work_costs(
    engine: AsyncEngine,
) -> None:
    found = await one_account_two_keys(engine)
    app = app_with(engine, seats="2", account_queue="4")  # 4 at once: 1 running, 3 waiting
    async with client_of(app) as client:
        before = refused("account_queue")
        for _ in range(3):
            answers = await asyncio.gather(
                *(
                    client.post("/graphql", json={"query": q}, headers=bearer(found["keys"][n % 2]))
                    for n, q in enumerate(LONE_WORK)
                )
            )
            assert [a.status_code for a in answers] == [200] * 4
            assert all("errors" not in a.json() for a in answers), [a.json() for a in answers]
        assert refused("account_queue") == before
        assert app.state.fair_queue.flows == {}


async def test_a_request_reads_over_a_few_connections_however_many_fields_it_asks(
    engine: AsyncEngine,
) -> None:
    found = await one_account_two_keys(engine)
    pages = " ".join(f"p{i}: runtimeSessions(first: 3) {{ nodes {{ id }} }}" for i in range(12))
    held, most = 0, 0

    def checkout(*_: Any) -> None:
        nonlocal held, most
        held += 1
        most = max(most, held)

    def checkin(*_: Any) -> None:
        nonlocal held
        held -= 1

    event.listen(engine.sync_engine.pool, "checkout", checkout)
    event.listen(engine.sync_engine.pool, "checkin", checkin)
    try:
        async with client_of(app_with(engine, rate_limit="off")) as client:
            most = 0
            body = await graphql(client, found["keys"][0], "{ " + pages + " }")
    finally:
        event.remove(engine.sync_engine.pool, "checkout", checkout)
        event.remove(engine.sync_engine.pool, "checkin", checkin)
    assert all(len(body["data"][f"p{i}"]["nodes"]) == 3 for i in range(12))
    assert 1 <= most <= READS_PER_REQUEST


@pytest.mark.parametrize("settings", [{}, {"replay_turns": "500"}], ids=["default", "500"])
async def test_a_query_that_could_read_more_replay_turns_is_refused_before_anything_runs(
    engine: AsyncEngine, settings: dict[str, str]
) -> None:
    """Planned from the query (pages of 500 of 3-turn sessions), not from what it would read."""
    key = (await two_accounts(engine, turns=3, sessions=12))["key"]
    limit = int(settings.get("replay_turns", Settings.from_env({}).replay_turns))
    pages = "query($f: Int = %d) { runtimeSessions(first: $f) { nodes { title %s } } }"
    replay = "replayPage(first: 500) { nodes { ordinal } }"
    async with client_of(app_with(engine, **settings)) as client:
        for query in (pages % (limit // 500 + 1, replay), ISSUE_QUERY):
            before = refused("replay_turns")
            with counted_statements(engine) as statements:
                body = await graphql(client, key, query)
            assert refused("replay_turns") == before + 1
            assert body["data"] is None
            [error] = body["errors"]
            assert error["extensions"] == {"code": "LIMIT_EXCEEDED", "limit": limit}
            assert f"at most {limit} per request" in error["message"]
            assert not [s for s in statements if "runtime_session" in s], "a statement ran"
        within = await graphql(client, key, pages % (limit // 500, replay))
    assert "errors" not in within
    nodes = within["data"]["runtimeSessions"]["nodes"]
    assert len(nodes) == limit // 500 and all(len(n["replayPage"]["nodes"]) == 3 for n in nodes)


@pytest.fixture
def content_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The characters of content each replay statement brought back."""
    read: list[int] = []
    real = sessions_sql.replay_pages

    async def counted(*args: Any, **kwargs: Any) -> list[list[sessions_sql.ReplayTurn]]:
        pages = await real(*args, **kwargs)
        read.append(sum(len(turn.content) for page in pages for turn in page))
        return pages

    monkeypatch.setattr(loaders, "replay_pages", counted)
    yield read


async def test_replay_content_read_is_bounded_per_request_not_only_what_is_returned(
    engine: AsyncEngine, content_read: list[int]
) -> None:
    world = World()
    account, key = world.account()
    ids = [world.session(account, f"session {s}", day=s) for s in range(10)]
    for sid in ids:
        for ordinal in range(4):
            world.activity(sid, ordinal, str(ordinal) * 3_000)  # 12,000 characters a session
    await world.write(engine)
    fields = " ".join(
        f'a{i}: runtimeSession(id: "{sid}") {{ replayPage {{ nodes {{ FIELDS }} }} }}'
        for i, sid in enumerate(ids)
    )
    async with client_of(app_with(engine, replay_content_chars="20000")) as client:
        await graphql(client, key, "{ " + fields.replace("FIELDS", "ordinal") + " }")
        assert content_read == [20_000]  # not 120,000, though no content was asked for
        content_read.clear()
        body = await graphql(
            client, key, "{ " + fields.replace("FIELDS", "content contentTruncated") + " }"
        )
    assert content_read == [20_000]
    turns = [t for alias in body["data"].values() for t in alias["replayPage"]["nodes"]]
    assert len(turns) == 40 and sum(len(t["content"]) for t in turns) == 20_000
    assert sorted(len(t["content"]) for t in turns if t["contentTruncated"])[-1:] == [2_000]
    whole = [t for t in turns if not t["contentTruncated"]]
    assert len(whole) == 6 and all(len(t["content"]) == 3_000 for t in whole)
