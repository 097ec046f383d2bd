"""Search through the API: GraphQL and REST within the account, cursors bound to it, text
refused by name, the account's fit and providers, an exact check of what the index cannot
vouch for, and the reasons in the contract's order."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data.account_indexes import ensure_account_index
from indexer.embedders import Registry
from indexer.lexical import LexicalEmbedder
from resolvers.comparison.legs import Leg
from resolvers.rules import ranking
from resolvers.tuning import Tuning
from tests.support.comparisons import bearer, graphql
from tests.support.loops import repeat_session
from tests.support.search_world import (
    DENSE,
    DENSE_MODEL,
    MODEL,
    QUESTION,
    SEARCH,
    TOPICS,
    WORDS,
    FailingWords,
    dense_vector,
    exact_text_scan,
    searched,
    topic_sessions,
)
from tests.support.world import World
from values.reasons import Reason


async def test_graphql_and_rest_search_within_the_account(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, sessions = await topic_sessions(engine)
    found = (await graphql(client, key, SEARCH, q=QUESTION))["data"]["searchSessions"]
    ids = {r["runtimeSessionId"] for r in found["results"]}
    assert ids == {sessions["migration"], sessions["migration again"]}
    assert found["legs"] == [{"leg": "LEXICAL", "ran": True}]
    timed = await graphql(
        client,
        key,
        "query($q: String!) { searchSessions(text: $q) { legs { elapsedMs } } }",
        q=QUESTION,
    )
    assert timed["data"]["searchSessions"]["legs"][0]["elapsedMs"] > 0
    words = {w for r in found["results"] for m in r["matches"] for w in m["matchedWords"]}
    assert {"migration", "lock", "timeout", "orders"} <= words
    rest = await client.get(
        "/api/v1/runtime-sessions/search",
        params={"q": QUESTION, "limit": 20, "status": "failed"},
        headers=bearer(key),
    )
    assert rest.status_code == 200
    assert rest.json()["results"] == [] and rest.json()["degraded"]["reasons"] == [
        "similar_no_comparable_sessions",
        "similar_filter_applied",
    ]
    everything = await client.get(
        "/api/v1/runtime-sessions/search", params={"q": QUESTION, "limit": 20}, headers=bearer(key)
    )
    returned = {r["runtime_session_id"] for r in everything.json()["results"]}
    assert returned <= set(sessions.values()), "another account's session was returned"
    for bad in ({}, {"q": "   "}, {"q": "x" * 2001}):
        refused = await client.get(
            "/api/v1/runtime-sessions/search", params=bad, headers=bearer(key)
        )
        assert refused.status_code == 422 and refused.json()["parameter"] == "q"


async def test_a_search_cursor_opens_only_for_the_account_it_was_handed_to(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Two accounts with the same sessions, searched with the same text: each one's cursor
    pages its own list, and is refused for the other (issue #30)."""
    _, mine, _ = await topic_sessions(engine)
    _, theirs, _ = await topic_sessions(engine)

    async def rest(key: str, **params: Any) -> httpx.Response:
        return await client.get(
            "/api/v1/runtime-sessions/search",
            params={"q": QUESTION, "limit": 1, **params},
            headers=bearer(key),
        )

    cursor = (await rest(theirs)).json()["next_cursor"]
    assert (await rest(theirs, cursor=cursor)).status_code == 200
    refused = await rest(mine, cursor=cursor)
    assert refused.status_code == 422 and refused.json()["parameter"] == "cursor"
    query = (
        "query($q: String!, $after: String) {"
        " searchSessions(text: $q, limit: 1, after: $after) { endCursor } }"
    )
    body = await graphql(client, theirs, query, q=QUESTION)
    assert body["data"]["searchSessions"]["endCursor"] == cursor  # one codec for both
    [error] = (await graphql(client, mine, query, q=QUESTION, after=cursor))["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": "after"}
    own = (await rest(mine)).json()["next_cursor"]
    assert own != cursor and (await rest(mine, cursor=own)).status_code == 200


async def test_text_postgresql_cannot_hold_is_refused_by_name(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_sessions(engine)
    query = "query($q: String!, $s: [String!]) { searchSessions(text: $q, status: $s) { limit } }"
    for variables, argument in (
        ({"q": "a lone \ud800 surrogate", "s": None}, "text"),
        ({"q": "nul \x00 inside", "s": None}, "text"),
        ({"q": QUESTION, "s": ["failed\ud800"]}, "status"),
    ):
        response = await client.post(
            "/graphql",
            content=json.dumps({"query": query, "variables": variables}),
            headers={**bearer(key), "content-type": "application/json"},
        )
        [error] = response.json()["errors"]
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": argument}


async def test_an_account_indexed_with_its_fit_is_searched_with_that_fit(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """The text is embedded by the account's fitted lexical model, read from its stored fit."""
    from indexer.commands import config_from
    from indexer.worker import index_once

    world = World()
    account, key = world.account(model=MODEL)
    sessions = {}
    for name, text in [*TOPICS.items(), ("migration again", TOPICS["migration"] + " twice")]:
        sid = sessions[name] = world.session(account, name)
        for ordinal in range(2):
            world.activity(sid, ordinal, f"{text} (step {ordinal})")
    await world.write(engine)
    await index_once(engine, Registry(), config_from(Settings.from_env({}), progress=False))
    rest = await client.get(
        "/api/v1/runtime-sessions/search", params={"q": QUESTION}, headers=bearer(key)
    )
    body = rest.json()
    assert body["model_identity"].startswith("local:lexical-384.")  # the fit's identity
    assert {r["runtime_session_id"] for r in body["results"][:2]} == {
        sessions["migration"],
        sessions["migration again"],
    }


async def test_a_search_the_index_cannot_vouch_for_is_checked_by_an_exact_pass(
    engine: AsyncEngine,
) -> None:
    """A session stuck in a loop on the very question: its 1,500 identical passages tie, and
    which of them the dense leg shows is settled by chunk id, which the index's window
    cannot do."""
    account, _, _ = await topic_sessions(engine, model=DENSE_MODEL)
    world = World()
    loop = world.session(account, "stuck in a loop")
    world.chunk(loop, dense_vector(QUESTION), content=QUESTION, model=DENSE_MODEL)
    await world.write(engine)
    await repeat_session(engine, loop, 1500)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), DENSE)
    tuning = Tuning(exact_scan_max_chunks=0)
    result = await searched(
        engine, account, QUESTION, tuning, only=Leg.DENSE, limit=20, max_matches_per_session=5
    )
    assert [leg.path for leg in result.legs if leg.leg is Leg.DENSE] == ["account_index"]
    exact = await exact_text_scan(engine, account, QUESTION, DENSE_MODEL, WORDS)
    expected = [
        (n.session_id, round(n.similarity, 6), [m.chunk_id for m in n.matches])
        for n in ranking.rank_neighbours(exact, 5)
    ]
    served = [
        (n.session.id, round(n.similarity, 6), [m.document_id for m in n.matches])
        for n in result.results
    ]
    assert served == expected
    assert "similar_approximate_unverified" not in result.degraded.reasons


async def test_the_nearest_passages_texts_are_read_when_only_they_are_asked(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Selecting the nearest sessions' texts (or a match's matched words) reads the texts,
    though no result's text was asked for."""
    _, key, _ = await topic_sessions(engine)
    query = (
        "query($q: String!) { searchSessions(text: $q, limit: 2) {"
        " nearest { matches { text } } results { matches { matchedWords } } } }"
    )
    lonely = (await graphql(client, key, query, q="zebra crossing at midnight"))["data"]
    assert [m["text"] for n in lonely["searchSessions"]["nearest"] for m in n["matches"]]
    assert all(m["text"] for n in lonely["searchSessions"]["nearest"] for m in n["matches"])
    found = (await graphql(client, key, query, q=QUESTION))["data"]["searchSessions"]
    assert any(m["matchedWords"] for n in found["results"] for m in n["matches"])


async def test_the_app_embeds_search_texts_with_the_indexers_providers(
    engine: AsyncEngine, settings: Settings
) -> None:
    from similar_sessions.app import create_app

    app = create_app(settings, engine=engine, run_migrations=False)
    assert "openai" in app.state.services.embedders.providers


async def test_a_leg_that_did_not_run_says_why_in_the_contracts_order(engine: AsyncEngine) -> None:
    account, _, _ = await topic_sessions(engine, model=DENSE_MODEL)
    down = Registry(
        {MODEL: LexicalEmbedder, DENSE_MODEL: lambda: FailingWords(identity=DENSE_MODEL)}
    )
    result = await searched(engine, account, QUESTION, registry=down, statuses=("completed",))
    [_, dense] = result.legs
    assert dense.why_not == {"search_text_not_embedded", "search_dense_leg_failed"}
    # as the API says them: in the contract's order
    assert dense.reasons == (Reason.SEARCH_TEXT_NOT_EMBEDDED, Reason.SEARCH_DENSE_LEG_FAILED)
