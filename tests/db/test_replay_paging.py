"""The replay is read a page at a time: bounded pages, opaque cursors, one statement for the
first pages of many sessions."""

from __future__ import annotations

import base64
import json
from uuid import UUID, uuid4

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.sessions import ReplayPageKey, replay_pages
from resolvers.replay import DEFAULT_REPLAY_PAGE, MAX_REPLAY_PAGE
from tests.support.comparisons import counted_statements, graphql
from tests.support.world import World


def b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


PAGE = """query($id: UUID!, $first: Int!, $after: String) { runtimeSession(id: $id) {
  replayPage(first: $first, after: $after) { nodes { ordinal cursor } endCursor hasNextPage } } }"""


async def long_session(
    engine: AsyncEngine, turns: int, *, sessions: int = 1
) -> tuple[str, list[str]]:
    world = World()
    account, key = world.account()
    ids = []
    for s in range(sessions):
        sid = world.session(account, f"session {s}", day=s)
        ids.append(sid)
        for ordinal in range(turns):
            world.activity(sid, ordinal, f"turn {ordinal} of session {s}")
    await world.write(engine)
    return key, ids


async def test_pages_follow_each_other_to_the_end(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, [sid] = await long_session(engine, 7)
    seen, after, pages = [], None, 0
    while True:
        body = await graphql(client, key, PAGE, id=sid, first=3, after=after)
        page = body["data"]["runtimeSession"]["replayPage"]
        seen += [n["ordinal"] for n in page["nodes"]]
        pages += 1
        assert page["endCursor"] == page["nodes"][-1]["cursor"]
        if not page["hasNextPage"]:
            break
        after = page["endCursor"]
    assert (seen, pages) == (list(range(7)), 3)


async def test_the_replay_list_is_the_first_page_and_an_entry_cursor_reads_on(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, [sid] = await long_session(engine, DEFAULT_REPLAY_PAGE + 5)
    query = """query($id: UUID!, $after: String) { runtimeSession(id: $id) {
      replay(after: $after) { ordinal cursor } } }"""
    first = (await graphql(client, key, query, id=sid))["data"]["runtimeSession"]["replay"]
    assert [e["ordinal"] for e in first] == list(range(DEFAULT_REPLAY_PAGE))
    rest = await graphql(client, key, query, id=sid, after=first[-1]["cursor"])
    assert [e["ordinal"] for e in rest["data"]["runtimeSession"]["replay"]] == list(
        range(DEFAULT_REPLAY_PAGE, DEFAULT_REPLAY_PAGE + 5)
    )


async def test_turns_with_equal_ordinals_are_neither_lost_nor_repeated(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = World()
    account, key = world.account()
    sid = world.session(account)
    ids = sorted(world.activity(sid, ordinal // 2, f"turn {ordinal}") for ordinal in range(6))
    await world.write(engine)
    query = PAGE.replace("ordinal cursor", "id")
    seen, after = [], None
    while True:
        page = (await graphql(client, key, query, id=sid, first=1, after=after))["data"]
        page = page["runtimeSession"]["replayPage"]
        seen += [n["id"] for n in page["nodes"]]
        if not page["hasNextPage"]:
            break
        after = page["endCursor"]
    assert sorted(seen) == ids and len(seen) == 6


async def test_a_page_beyond_the_maximum_or_a_foreign_cursor_is_bad_user_input(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, [sid] = await long_session(engine, 2)
    for first, after, argument in (
        (MAX_REPLAY_PAGE + 1, None, "first"),
        (0, None, "first"),
        (3, "nope", "after"),
        (3, "WzEsICJub3QtYS11dWlkIl0", "after"),  # [1, "not-a-uuid"]
        (3, "WyJ4IiwgIjAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMCJd", "after"),
    ):
        body = await graphql(client, key, PAGE, id=sid, first=first, after=after)
        [error] = body["errors"]
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": argument}, after
    body = await graphql(client, key, PAGE, id=sid, first=MAX_REPLAY_PAGE)
    assert len(body["data"]["runtimeSession"]["replayPage"]["nodes"]) == 2


async def test_first_pages_of_many_sessions_are_one_statement(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, _ = await long_session(engine, 5, sessions=6)
    query = """query { runtimeSessions(first: 6) { nodes {
      replay(first: 2) { ordinal } replayPage(first: 2) { hasNextPage }
      more: replayPage(first: 4) { nodes { ordinal } hasNextPage } } } }"""
    with counted_statements(engine) as statements:
        body = await graphql(client, key, query)
    nodes = body["data"]["runtimeSessions"]["nodes"]
    assert [len(n["replay"]) for n in nodes] == [2] * 6
    assert all(n["replayPage"]["hasNextPage"] and n["more"]["hasNextPage"] for n in nodes)
    assert [len(n["more"]["nodes"]) for n in nodes] == [4] * 6
    replays = [s for s in statements if "runtime_session_activity" in s]
    assert len(replays) == 1


async def test_a_replay_page_is_read_within_the_account_only(engine: AsyncEngine) -> None:
    _, [sid] = await long_session(engine, 3)
    async with engine.connect() as conn:
        owner = (
            await conn.execute(
                sa.text("SELECT account_id FROM runtime_sessions WHERE id = :id"), {"id": sid}
            )
        ).scalar_one()
        key = ReplayPageKey(UUID(sid), 10)
        assert [len(p) for p in await replay_pages(conn, owner, [key])] == [3]
        assert await replay_pages(conn, uuid4(), [key]) == [[]]


TITLED = """query($id: UUID!, $after: String) { runtimeSession(id: $id) { title
  replayPage(first: 2, after: $after) { nodes { ordinal } }
  replay(first: 2) { ordinal } } }"""


async def test_a_replay_cursor_not_handed_out_for_this_session_is_refused_and_nothing_else_lost(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Hand-made, nested and another session's cursors are BAD_USER_INPUT naming `after`, on
    the replay field only: the session's title and its other fields keep their data."""
    key, [sid, other] = await long_session(engine, 5, sessions=2)
    theirs = (await graphql(client, key, PAGE, id=other, first=2))["data"]["runtimeSession"]
    for after in (
        b64(json.dumps([700, "00000000-0000-0000-0000-000000000000"])),
        b64(json.dumps([1, str(uuid4())])),
        b64("[" * 3000),
        b64("[" * 1000 + "]" * 1000),
        theirs["replayPage"]["endCursor"],
        theirs["replayPage"]["nodes"][0]["cursor"],
        theirs["replayPage"]["endCursor"] + "x",
        "x" * 10_000,
    ):
        body = await graphql(client, key, TITLED, id=sid, after=after)
        [error] = body["errors"]
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": "after"}, after
        assert error["path"] == ["runtimeSession", "replayPage"]
        session = body["data"]["runtimeSession"]
        assert session["title"] == "session 0" and session["replayPage"] is None
        assert [turn["ordinal"] for turn in session["replay"]] == [0, 1]
    mine = (await graphql(client, key, PAGE, id=sid, first=2))["data"]["runtimeSession"]
    read_on = await graphql(client, key, TITLED, id=sid, after=mine["replayPage"]["endCursor"])
    assert [n["ordinal"] for n in read_on["data"]["runtimeSession"]["replayPage"]["nodes"]] == [
        2,
        3,
    ]


async def test_a_replay_cursor_does_not_open_in_another_account(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, [sid] = await long_session(engine, 3)
    other_key, [other] = await long_session(engine, 3)
    cursor = (await graphql(client, key, PAGE, id=sid, first=1))["data"]["runtimeSession"]
    body = await graphql(
        client, other_key, PAGE, id=other, first=1, after=cursor["replayPage"]["endCursor"]
    )
    [error] = body["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": "after"}
