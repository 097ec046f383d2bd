"""One account's concurrent work is bounded (issues #30, #37): the replay turns and content one
request may read, the requests one account may have in progress (whatever its keys), and the
share of the process's time its requests may take while another account's are in progress.
Past a bound: 429 with Retry-After, or LIMIT_EXCEEDED before anything runs; other accounts are
not held back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette

from config.settings import Settings
from data import sessions as sessions_sql
from data.accounts import hash_key
from resolvers import loaders
from similar_sessions.app import create_app
from similar_sessions.time_share import TimeShare
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


async def held(
    client: httpx.AsyncClient, key: str, release: asyncio.Event
) -> asyncio.Task[httpx.Response]:
    """A request in progress, its body unfinished until `release` is set: returned once the
    app has asked for the rest of the body."""
    reading = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        yield b'{"query": "{ viewer { name } }"'
        reading.set()
        await release.wait()
        yield b"}"

    headers = {**bearer(key), "content-type": "application/json"}
    task = asyncio.create_task(client.post("/graphql", content=body(), headers=headers))
    await asyncio.wait([task, asyncio.create_task(reading.wait())], return_when="FIRST_COMPLETED")
    assert not task.done(), "answered before its body was read"
    return task


async def test_a_key_past_its_requests_in_progress_is_answered_429_and_others_are_not(
    engine: AsyncEngine,
) -> None:
    accounts = await two_accounts(engine)
    key, other = accounts["key"], accounts["other"]
    app = app_with(engine)  # the default: 2 in progress per key
    async with client_of(app) as client:
        release = asyncio.Event()
        first, second = await held(client, key, release), await held(client, key, release)
        before = refused("in_flight")
        third = await client.post("/graphql", json=VIEWER, headers=bearer(key))
        assert third.status_code == 429
        assert "SIMILAR_SESSIONS_CONCURRENCY_LIMIT" in third.json()["detail"]
        assert third.headers["retry-after"] == "1"
        assert third.json()["error"] == "too_many_in_flight"
        assert third.json()["limit"] == 2
        assert refused("in_flight") == before + 1
        elsewhere = await client.post("/graphql", json=VIEWER, headers=bearer(other))
        assert elsewhere.status_code == 200 and elsewhere.json()["data"]["viewer"]["name"]
        release.set()
        assert [r.status_code for r in await asyncio.gather(first, second)] == [200, 200]
        again = await client.post("/graphql", json=VIEWER, headers=bearer(key))
        assert again.status_code == 200


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_an_account_past_its_share_of_the_process_waits_while_another_asks(
    engine: AsyncEngine,
) -> None:
    accounts = await two_accounts(engine)
    key, other = accounts["key"], accounts["other"]
    app = app_with(engine, time_share_percent="25")
    clock = Clock()
    app.state.time_share = TimeShare(25, clock=clock)
    async with client_of(app) as client:
        assert (
            await client.post("/graphql", json=VIEWER, headers=bearer(other))
        ).status_code == 200
        release = asyncio.Event()
        slow = await held(client, key, release)
        clock.now += 5  # the request is in progress for 5 s: twice the 2.5 s it may take
        release.set()
        assert (await slow).status_code == 200
        waits = await client.post("/graphql", json=VIEWER, headers=bearer(key))
        assert waits.status_code == 429
        assert waits.json()["error"] == "over_time_share"
        assert waits.json()["limit"] == "25%"
        assert "SIMILAR_SESSIONS_TIME_SHARE_PERCENT" in waits.json()["detail"]
        assert waits.headers["retry-after"] == "10"  # 2.5 s over, drained at 0.25 s a second
        assert (
            await client.post("/graphql", json=VIEWER, headers=bearer(other))
        ).status_code == 200
        clock.now += 10
        assert (await client.post("/graphql", json=VIEWER, headers=bearer(key))).status_code == 200
    assert app.state.time_share.buckets  # counted by account, never by the key itself
    assert hash_key(key).hex() not in app.state.time_share.buckets


async def test_every_key_of_an_account_shares_its_requests_in_progress(
    engine: AsyncEngine,
) -> None:
    world = World()
    _, key = world.account("loud")
    second = f"{key}-second"
    world.lines[-1]["api_keys"].append({"key": second, "scopes": ["view_runtime_sessions"]})
    await world.write(engine)
    app = app_with(engine)  # the default: 2 in progress per account
    async with client_of(app) as client:
        release = asyncio.Event()
        first, other_key = await held(client, key, release), await held(client, second, release)
        third = await client.post("/graphql", json=VIEWER, headers=bearer(key))
        fourth = await client.post("/graphql", json=VIEWER, headers=bearer(f"{key}-second"))
        assert [third.status_code, fourth.status_code] == [429, 429]
        assert third.json()["error"] == "too_many_in_flight"
        release.set()
        assert [r.status_code for r in await asyncio.gather(first, other_key)] == [200, 200]


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
