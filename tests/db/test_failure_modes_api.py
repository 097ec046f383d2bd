"""Query.failureModes and GET /api/v1/runtime-sessions/failure-modes: the same resolver and the
same answer, members paged, the shared terms of a group and of its members' ties, bad input
named, the request's comparison budget, and the caller's account only."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer.embedders import DEFAULT_MODEL, Registry
from indexer.passes import IndexerConfig
from indexer.worker import index_once
from tests.support.comparisons import bearer, graphql
from tests.support.failures import at, failures_world
from tests.support.world import World

GROUP_FIELDS = """
  size isNew since sharedTerms
  first { id } last { id } representative { id title } seenBefore { id }
  daily { start sessions }
"""
PASSAGE = "documentId sourceKind sourceId chunkIndex occurredAt role replayAnchor text"
MEMBER_FIELDS = (
    "runtimeSessionId title status startedAt relatedInGroup linkedTo match {"
    + PASSAGE
    + " similarity band redactionState sharedTerms probe {"
    + PASSAGE
    + "} }"
)
QUERY = (
    "query($w: Int!, $after: String, $limit: Int!) { failureModes(windowDays: $w, "
    "limit: $limit, after: $after) { windowDays statuses sessions compared leftOut "
    "sharedTermsModel "
    "comparedSince notEmbedded bound groupCount degraded { semantic reasons detail } "
    "asOf endCursor hasNextPage groups {" + GROUP_FIELDS + " members {"
    " nodes {" + MEMBER_FIELDS + "} hasNextPage } } } }"
)


def snake(value: Any) -> Any:
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): snake(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake(v) for v in value]
    return value


async def test_rest_and_graphql_give_the_same_groups(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await failures_world(engine, crowded=False)
    body = await graphql(client, world.key, QUERY, w=7, limit=3, after=None)
    answer = body["data"]["failureModes"]
    rest = await client.get(
        "/api/v1/runtime-sessions/failure-modes",
        params={"window_days": 7, "limit": 3, "as_of": answer["asOf"]},  # the same question
        headers=bearer(world.key),
    )
    assert rest.status_code == 200, rest.text
    got = rest.json()
    assert got.pop("next_cursor") == answer.pop("endCursor") and answer.pop("hasNextPage")
    for group in answer["groups"]:
        page = group.pop("members")
        group["members"], group["more_members"] = page["nodes"], page["hasNextPage"]
        for key in ("first", "last", "representative", "seenBefore"):
            if group[key] is not None:
                group[key] = group[key]["id"]
    for group in got["groups"]:
        for key in ("first", "last", "representative", "seen_before"):
            if group[key] is not None:
                group[key] = group[key]["id"]
    got.pop("window_start"), got.pop("elapsed_ms")
    want = snake(answer)
    want["degraded"]["reasons"] = [r.lower() for r in want["degraded"]["reasons"]]
    for group in want["groups"]:
        for member in group["members"]:
            if member["match"] is not None:
                member["match"]["band"] = member["match"]["band"].lower()
    assert got == want
    assert [g["size"] for g in got["groups"]] == [4, 3, 2]  # the new ones, largest first


async def test_members_page_newest_first(client: httpx.AsyncClient, engine: AsyncEngine) -> None:
    world = await failures_world(engine, crowded=False)
    query = """query($after: String, $pin: String) {
      failureModes(windowDays: 7, limit: 1, asOf: $pin) { asOf
      groups { size members(first: 3, after: $after) { nodes { startedAt } endCursor
      hasNextPage } } } }"""
    first = (await graphql(client, world.key, query, after=None))["data"]["failureModes"]
    [group] = first["groups"]
    page = group["members"]
    assert group["size"] == 4 and page["hasNextPage"] and len(page["nodes"]) == 3
    asked = {"after": page["endCursor"], "pin": first["asOf"]}
    rest = (await graphql(client, world.key, query, **asked))["data"]
    assert rest["failureModes"]["asOf"] == first["asOf"]
    tail = rest["failureModes"]["groups"][0]["members"]
    starts = [n["startedAt"] for n in page["nodes"] + tail["nodes"]]
    assert len(starts) == 4 and starts == sorted(starts, reverse=True)
    assert not tail["hasNextPage"] and tail["endCursor"] is None


async def test_bad_input_is_named(client: httpx.AsyncClient, engine: AsyncEngine) -> None:
    world = await failures_world(engine, crowded=False)
    for arguments, named in (
        ("windowDays: 0", "windowDays"),
        ("windowDays: 366", "windowDays"),
        ("windowDays: 7, limit: 21", "limit"),
        ('windowDays: 7, after: "nope"', "after"),
        ('windowDays: 7, asOf: "nope"', "asOf"),
        (f'windowDays: 7, status: ["{"x" * 201}"]', "status"),
    ):
        body = await graphql(client, world.key, f"{{ failureModes({arguments}) {{ bound }} }}")
        [error] = body["errors"]
        assert body["data"]["failureModes"] is None
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error
        assert error["extensions"]["argument"] == named
    members = await graphql(
        client,
        world.key,
        "{ failureModes(windowDays: 7) { groups { members(first: 0) { hasNextPage } } } }",
    )
    assert members["errors"][0]["extensions"]["argument"] == "first"
    # A pin is of one window and filters: another window's is not this question's.
    week = await graphql(client, world.key, "{ failureModes(windowDays: 7) { asOf } }")
    pin = week["data"]["failureModes"]["asOf"]
    body = await graphql(
        client, world.key, f'{{ failureModes(windowDays: 8, asOf: "{pin}") {{ bound }} }}'
    )
    assert body["errors"][0]["extensions"]["argument"] == "asOf"
    url = "/api/v1/runtime-sessions/failure-modes"
    for params, named in (
        ({}, "window_days"),
        ({"window_days": "a week"}, "window_days"),
        ({"window_days": 7, "containing": "nope"}, "containing"),
        ({"window_days": 7, "cursor": "nope"}, "cursor"),
        ({"window_days": 7, "as_of": "nope"}, "as_of"),
        ({"window_days": 7, "unknown": 1}, "unknown"),
    ):
        answer = await client.get(url, params=params, headers=bearer(world.key))
        assert answer.status_code == 422 and answer.json()["parameter"] == named, answer.text


async def test_failure_modes_take_the_whole_comparison_budget(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await failures_world(engine, crowded=False)
    body = await graphql(
        client,
        world.key,
        "{ a: failureModes(windowDays: 7) { groupCount } b: failureModes(windowDays: 1) "
        "{ groupCount } }",
    )
    assert body["data"]["a"]["groupCount"] == 7 and body["data"]["b"] is None
    assert body["errors"][0]["extensions"]["code"] == "LIMIT_EXCEEDED"


async def test_another_account_sees_none_of_it(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    await failures_world(engine, crowded=False)
    world = World()
    _, key = world.account("bystander")
    await world.write(engine)
    body = await graphql(
        client, key, "{ failureModes(windowDays: 30) { sessions groups { size } } }"
    )
    assert body["data"]["failureModes"] == {"sessions": 0, "groups": []}


async def test_a_groups_terms_are_the_words_its_members_share(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = World()
    account, key = world.account(model=str(DEFAULT_MODEL))
    texts = [
        "Checkout failed: the payment gateway timed out after 30 seconds on card {n}",
        "Seat selection crashed: seat map for flight HAT{n} returned an empty cabin",
    ]
    for n in range(8):
        sid = world.session(account, f"session {n}", status="failed")
        started = at(0.5 + n * 0.5)
        world.lines[-1]["started_at"] = started.isoformat()
        world.lines[-1]["last_activity_at"] = (started + timedelta(hours=1)).isoformat()
        world.activity(sid, 0, texts[n % 2].format(n=100 + n), occurred_at=started)
    await world.write(engine)
    await index_once(engine, Registry(), IndexerConfig(progress=False))
    body = await graphql(
        client,
        key,
        "{ failureModes(windowDays: 7) { sharedTermsModel groups { size sharedTerms"
        " members { nodes { match { text sharedTerms probe { text } } } } } } }",
    )
    groups = body["data"]["failureModes"]["groups"]
    assert body["data"]["failureModes"]["sharedTermsModel"].startswith("local:lexical-384.")
    assert sorted(g["size"] for g in groups) == [4, 4]
    for group in groups:
        assert group["sharedTerms"], group
        for member in group["members"]["nodes"]:
            match = member["match"]
            assert match["sharedTerms"]
            for term in match["sharedTerms"]:
                assert term in match["text"].lower() and term in match["probe"]["text"].lower()
    everything = {t for g in groups for t in g["sharedTerms"]}
    assert {"payment", "gateway"} & everything and {"seat", "cabin"} & everything
