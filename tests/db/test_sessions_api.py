"""runtimeSession(s), the replay, and the statements a page costs."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.comparisons import counted_statements, graphql
from tests.support.world import World


async def sessions_world(engine: AsyncEngine, n: int) -> tuple[str, list[str]]:
    world = World()
    account, key = world.account()
    ids = []
    for s in range(n):
        sid = world.session(account, f"session {s}", day=s)
        ids.append(sid)
        for ordinal in range(3):
            world.lines.append(
                {
                    "type": "activity",
                    "id": f"{sid[:-4]}{ordinal:04d}",
                    "runtime_session_id": sid,
                    "ordinal": ordinal,
                    "occurred_at": f"2026-01-{s % 28 + 1:02d}T00:00:0{ordinal}+00:00",
                    "role": ["user", "assistant", "tool"][ordinal],
                    "kind": "message",
                    "content": f"step {ordinal}",
                    "api_usage_id": None,
                }
            )
    await world.write(engine)
    return key, ids


async def test_sessions_are_listed_newest_first_and_paged(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, ids = await sessions_world(engine, 7)
    query = (
        "query($after: String) { runtimeSessions(first: 3, after: $after) {"
        " nodes { id } endCursor hasNextPage } }"
    )
    seen, after = [], None
    while True:
        page = (await graphql(client, key, query, after=after))["data"]["runtimeSessions"]
        seen += [n["id"] for n in page["nodes"]]
        if not page["hasNextPage"]:
            break
        after = page["endCursor"]
    assert seen == list(reversed(ids))


async def test_a_page_with_replays_costs_a_fixed_number_of_statements(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, _ = await sessions_world(engine, 12)
    query = (
        "query($n: Int!) { runtimeSessions(first: $n) {"
        " nodes { title replay { ordinal role content } } } }"
    )
    counts = []
    for n in (1, 12):
        with counted_statements(engine) as statements:
            body = await graphql(client, key, query, n=n)
        nodes = body["data"]["runtimeSessions"]["nodes"]
        assert [len(node["replay"]) for node in nodes] == [3] * n
        assert [r["ordinal"] for r in nodes[0]["replay"]] == [0, 1, 2]
        counts.append(len(statements))
    assert counts[0] == counts[1]


async def test_a_bad_page_size_or_cursor_is_bad_user_input(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, _ = await sessions_world(engine, 1)
    for args, argument in (
        ("first: 0", "first"),
        ("first: 101", "first"),
        ('after: "nope"', "after"),
    ):
        body = await graphql(client, key, f"{{ runtimeSessions({args}) {{ nodes {{ id }} }} }}")
        [error] = body["errors"]
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": argument}


async def test_viewer_names_the_account_and_its_features(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, _ = await sessions_world(engine, 1)
    body = await graphql(client, key, "{ viewer { name features scopes } }")
    assert body["data"]["viewer"] == {
        "name": "acme",
        "features": ["similarSessions"],
        "scopes": ["view_runtime_sessions"],
    }


async def test_runtime_sessions_is_a_relay_connection_with_nodes_as_a_shortcut(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, ids = await sessions_world(engine, 5)
    query = (
        "query($after: String) { runtimeSessions(first: 2, after: $after) {"
        " edges { cursor node { id } } nodes { id }"
        " pageInfo { hasNextPage hasPreviousPage startCursor endCursor }"
        " endCursor hasNextPage } }"
    )
    seen, after, pages = [], None, 0
    while True:
        page = (await graphql(client, key, query, after=after))["data"]["runtimeSessions"]
        info, edges = page["pageInfo"], page["edges"]
        assert [e["node"] for e in edges] == page["nodes"]
        assert (
            info["startCursor"] == edges[0]["cursor"] and info["endCursor"] == edges[-1]["cursor"]
        )
        assert (page["endCursor"], page["hasNextPage"]) == (info["endCursor"], info["hasNextPage"])
        assert info["hasPreviousPage"] == (after is not None)
        seen += [e["node"]["id"] for e in edges]
        pages += 1
        if not info["hasNextPage"]:
            break
        after = info["endCursor"]
    assert seen == list(reversed(ids)) and pages == 3
    # Any edge's cursor pages after that edge.
    first = (await graphql(client, key, query))["data"]["runtimeSessions"]["edges"]
    after_first = await graphql(client, key, query, after=first[0]["cursor"])
    assert after_first["data"]["runtimeSessions"]["nodes"][0]["id"] == first[1]["node"]["id"]


async def test_the_old_page_fields_are_marked_deprecated(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, _ = await sessions_world(engine, 1)
    body = await graphql(
        client,
        key,
        '{ __type(name: "RuntimeSessionConnection") {'
        " fields(includeDeprecated: true) { name isDeprecated } } }",
    )
    fields = {f["name"]: f["isDeprecated"] for f in body["data"]["__type"]["fields"]}
    assert fields == {
        "edges": False,
        "nodes": False,
        "pageInfo": False,
        "endCursor": True,
        "hasNextPage": True,
    }
