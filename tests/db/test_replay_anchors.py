"""Matches and probes name the replay turn they came from, and links land on it."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.comparisons import bearer, graphql
from tests.support.world import World, blend, direction

QUERY = """query($id: UUID!) { runtimeSession(id: $id) { similarSessions(maxMatchesPerSession: 5) {
  results { runtimeSessionId consoleLink
    matches { documentId replayAnchor text probe { documentId replayAnchor text } } } } } }"""


async def anchored_world(engine: AsyncEngine) -> tuple[str, str, dict[str, str]]:
    """A viewed session and a neighbour whose chunks came from replay turns, and one chunk of
    the neighbour whose source names no turn of its replay."""
    world = World()
    account, key = world.account()
    viewed, other = world.session(account), world.session(account)
    turns = {
        "probe": world.activity(viewed, 0, "the migration failed on a lock"),
        "match": world.activity(other, 0, "our migration hit the same lock"),
    }
    chunks = {
        "probe": world.chunk(
            viewed,
            blend(direction(1), direction(2), 0.1),
            source_id=turns["probe"],
            content="the migration failed on a lock",
        ),
        "match": world.chunk(
            other,
            blend(direction(1), direction(3), 0.1),
            source_id=turns["match"],
            content="our migration hit the same lock",
        ),
        "loose": world.chunk(other, blend(direction(1), direction(4), 0.4), index=1),
    }
    await world.write(engine)
    return key, viewed, {**{f"{k}_turn": v for k, v in turns.items()}, **chunks}


async def test_matches_and_probes_carry_their_replay_anchor(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, viewed, ids = await anchored_world(engine)
    body = await graphql(client, key, QUERY, id=viewed)
    [neighbour] = body["data"]["runtimeSession"]["similarSessions"]["results"]
    by_id = {m["documentId"]: m for m in neighbour["matches"]}
    best = by_id[ids["match"]]
    assert best["replayAnchor"] == ids["match_turn"]
    assert best["probe"] == {
        "documentId": ids["probe"],
        "replayAnchor": ids["probe_turn"],
        "text": "the migration failed on a lock",
    }
    assert by_id[ids["loose"]]["replayAnchor"] is None, "its source is no turn of the replay"
    assert neighbour["matches"][0]["documentId"] == ids["match"]
    assert neighbour["consoleLink"] == (
        f"/console/runtime-sessions?sessionId={neighbour['runtimeSessionId']}"
        f"#activity-{ids['match_turn']}"
    )


async def test_rest_names_the_anchor_and_reads_no_text_when_none_is_asked(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, viewed, ids = await anchored_world(engine)
    route = f"/api/v1/runtime-sessions/{viewed}/similar"
    body = (await client.get(route, headers=bearer(key))).json()
    match = body["results"][0]["matches"][0]
    assert (match["replay_anchor"], match["probe"]["replay_anchor"]) == (
        ids["match_turn"],
        ids["probe_turn"],
    )
    assert match["probe"]["text"] == "the migration failed on a lock"
    bare = await client.get(route, params={"include_match_text": "false"}, headers=bearer(key))
    bare_match = bare.json()["results"][0]["matches"][0]
    assert bare_match["text"] is None and bare_match["probe"]["text"] is None
