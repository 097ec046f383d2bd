"""Cursors: opaque, bound to the session and the arguments they were handed out for;
anything else, malformed or hand-made, is refused naming the argument."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data.secrets import deployment_secret
from similar_sessions.app import create_app
from tests.support.comparisons import bearer, graphql, topic_world
from tests.support.world import World


def b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


NESTED = b64("[" * 1000 + "]" * 1000)
HAND_MADE = b64(json.dumps([0.5, 0.5, "00000000-0000-0000-0000-000000000000"]))
SIMILAR = (
    "query($id: UUID!, $after: String, $w: Int) { runtimeSession(id: $id) {"
    " similarSessions(limit: 2, after: $after, windowDays: $w) {"
    " results { runtimeSessionId } endCursor hasNextPage } } }"
)


async def rest(client: httpx.AsyncClient, key: str, session: str, **params: Any) -> httpx.Response:
    return await client.get(
        f"/api/v1/runtime-sessions/{session}/similar", params=params, headers=bearer(key)
    )


def refused(body: dict[str, Any], argument: str) -> None:
    [error] = body["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": argument}, error


@pytest.mark.parametrize("cursor", [NESTED, HAND_MADE], ids=["nested-json", "hand-made"])
async def test_a_malformed_or_hand_made_cursor_is_refused(
    client: httpx.AsyncClient, engine: AsyncEngine, cursor: str
) -> None:
    _, key, ids = await topic_world(engine, sessions=4)
    response = await rest(client, key, ids[0], limit=2, cursor=cursor)
    assert response.status_code == 422, response.text
    assert response.json()["parameter"] == "cursor"
    refused(await graphql(client, key, SIMILAR, id=ids[0], after=cursor), "after")


async def test_a_cursor_only_pages_the_session_and_arguments_it_was_handed_out_for(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, ids = await topic_world(engine, sessions=6)
    first = await rest(client, key, ids[0], limit=2)
    cursor = first.json()["next_cursor"]
    assert (await rest(client, key, ids[0], limit=2, cursor=cursor)).status_code == 200
    # Another page size is the same list: the cursor still holds.
    assert (await rest(client, key, ids[0], limit=5, cursor=cursor)).status_code == 200
    for session, params in (
        (ids[1], {"limit": 2}),  # another session
        (ids[0], {"limit": 2, "window_days": 30}),  # another list of the same session
        (ids[0], {"limit": 2, "max_matches_per_session": 1}),
    ):
        response = await rest(client, key, session, cursor=cursor, **params)
        assert response.status_code == 422, (session, params, response.text)
        assert response.json()["parameter"] == "cursor"
    page = await graphql(client, key, SIMILAR, id=ids[0])
    gql_cursor = page["data"]["runtimeSession"]["similarSessions"]["endCursor"]
    assert gql_cursor == cursor  # one codec: the REST and GraphQL cursors are the same
    refused(await graphql(client, key, SIMILAR, id=ids[1], after=gql_cursor), "after")
    refused(await graphql(client, key, SIMILAR, id=ids[0], after=gql_cursor, w=30), "after")


async def test_a_cursor_holds_across_processes_of_one_deployment(
    engine: AsyncEngine, settings: Settings
) -> None:
    _, key, ids = await topic_world(engine, sessions=6)
    pages = []
    for _ in range(2):  # two apps on one database: two processes of one deployment
        app = create_app(settings, engine=engine, run_migrations=False)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            first = (await rest(c, key, ids[0], limit=2)).json()
            pages.append(first["next_cursor"])
            second = await rest(c, key, ids[0], limit=2, cursor=pages[0])
            assert second.status_code == 200
    assert pages[0] == pages[1]


async def test_a_sessions_cursor_out_of_range_or_of_another_account_is_refused(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = World()
    account, key = world.account()
    for day in range(3):
        world.session(account, day=day)
    other, other_key = world.account("other")
    for day in range(3):
        world.session(other, day=day)
    await world.write(engine)
    query = "query($after: String) { runtimeSessions(first: 1, after: $after) { endCursor } }"
    mine = (await graphql(client, key, query))["data"]["runtimeSessions"]["endCursor"]
    assert "errors" not in await graphql(client, key, query, after=mine)
    refused(await graphql(client, other_key, query, after=mine), "after")
    for hand_made in (
        f"0001-01-01T00:00:00+14:00|{uuid.uuid4()}",
        f"9999-12-31T23:59:59-14:00|{uuid.uuid4()}",
        b64(f"0001-01-01T00:00:00+14:00|{uuid.uuid4()}"),
        NESTED,
    ):
        refused(await graphql(client, key, query, after=hand_made), "after")


async def test_the_cursor_secret_is_made_by_the_migration_and_again_once_deleted(
    engine: AsyncEngine,
) -> None:
    first = await deployment_secret(engine, "cursor")
    assert len(first) == 32 and await deployment_secret(engine, "cursor") == first
    async with engine.begin() as conn:
        await conn.execute(sa.text("DELETE FROM deployment_secrets"))  # how to rotate it
    made = await asyncio.gather(*(deployment_secret(engine, "cursor") for _ in range(3)))
    assert len(set(made)) == 1 and made[0] != first
