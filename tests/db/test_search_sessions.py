"""Search by describing the failure: the text is embedded once with the account's model and
looked up as one probe, equal to an exact scan on every path, scoped to the account, and
every way it comes up short named."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from data.account_indexes import ensure_account_index
from indexer import lexical
from indexer.embedders import Registry
from indexer.lexical import LexicalEmbedder
from resolvers.arguments import SimilarArgs
from resolvers.comparison.search import search_sessions
from resolvers.rules import ranking
from resolvers.services import Services
from resolvers.tuning import Tuning
from tests.support.comparisons import bearer, graphql
from tests.support.loops import repeat_session
from tests.support.world import World

IDENTITY = lexical.UNFITTED  # every feature weighs 1: vectors without a fit
MODEL = str(IDENTITY)
EMBED = LexicalEmbedder()
TOPICS = {
    "migration": "the database migration failed: lock timeout on table orders, retried",
    "deploy": "the kubernetes deploy rolled back after the readiness probe kept failing",
    "billing": "the invoice total was wrong because the currency conversion rate was stale",
}
QUESTION = "migration failed with a lock timeout on orders"
EXACT_TEXT_SCAN = """
SELECT c.id, c.runtime_session_id, 1 - ((c.embedding::vector(384)) <=> CAST(:v AS vector(384)))
FROM session_chunks c
WHERE c.account_id = :account AND c.embedding_model = :model
  AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'
  AND 1 - ((c.embedding::vector(384)) <=> CAST(:v AS vector(384))) >= 0.35
ORDER BY (c.embedding::vector(384)) <=> CAST(:v AS vector(384)), c.id
LIMIT 25
"""


def vector(text: str) -> list[float]:
    return [float(x) for x in EMBED.vector(text)]


async def topic_sessions(engine: AsyncEngine, **account: Any) -> tuple[str, str, dict[str, str]]:
    """An account with sessions on three topics (two on the migration), and another account
    whose session is the closest of all to the question."""
    world = World()
    account_id, key = world.account(model=MODEL, **account)
    sessions = {}
    for name, text in [*TOPICS.items(), ("migration again", TOPICS["migration"] + " twice")]:
        sid = sessions[name] = world.session(account_id, name)
        for i in range(3):
            passage = f"{text} (step {i})"
            world.chunk(sid, vector(passage), index=i, content=passage, model=MODEL)
    other, _ = world.account("another", model=MODEL)
    foreign = world.session(other, "foreign")
    world.chunk(foreign, vector(QUESTION), content=QUESTION, model=MODEL)
    await world.write(engine)
    return account_id, key, sessions


async def searched(
    engine: AsyncEngine, account: str, text: str, tuning: Tuning | None = None, **args: Any
) -> Any:
    registry = args.pop("registry", Registry())
    services = Services(engine, tuning or Tuning(), embedders=registry)
    return await search_sessions(services, uuid.UUID(account), text, SimilarArgs(**args))


@pytest.mark.parametrize("path", ["exact", "index", "account_index"])
async def test_the_search_finds_the_sessions_of_the_described_failure_exactly(
    engine: AsyncEngine, path: str
) -> None:
    account, _, sessions = await topic_sessions(engine)
    if path == "account_index":
        async with engine.begin() as conn:
            await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    tuning = Tuning(exact_scan_max_chunks=1000 if path == "exact" else 0)
    result = await searched(engine, account, QUESTION, tuning, limit=20)
    assert result.lookup_path == path
    assert [str(n.session.id) for n in result.results][:2] in (
        [sessions["migration"], sessions["migration again"]],
        [sessions["migration again"], sessions["migration"]],
    )
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(EXACT_TEXT_SCAN),
            {"v": str(vector(QUESTION)), "account": account, "model": MODEL},
        )
        hits = [ranking.Hit(0, r[0], r[1], float(r[2])) for r in rows]
    exact = [(n.session_id, round(n.score, 9)) for n in ranking.rank_neighbours(hits, 2)]
    assert [(n.session.id, round(n.score, 9)) for n in result.results] == exact
    assert result.degraded.semantic and result.degraded.reasons == ()
    assert all(m.probe is None and m.text for n in result.results for m in n.matches)


async def test_what_keeps_a_text_from_being_embedded_is_named(engine: AsyncEngine) -> None:
    disabled, _, _ = await topic_sessions(engine, enabled=False)
    off = await searched(engine, disabled, QUESTION)
    assert off.results == () and not off.degraded.semantic
    assert off.degraded.reasons == ("semantic_not_enabled", "search_text_not_embedded")
    account, _, _ = await topic_sessions(engine)
    deployment = await searched(engine, account, QUESTION, Tuning(embeddings_enabled=False))
    assert deployment.degraded.reasons == (
        "semantic_disabled_by_deployment",
        "search_text_not_embedded",
    )
    stopwords = await searched(engine, account, "and the of")
    assert stopwords.degraded.reasons == ("search_text_not_embedded",)


class PricedWords(LexicalEmbedder):
    usd_per_1k_tokens = 10.0  # a search text of 8 words costs $0.08


async def spend(engine: AsyncEngine, account: str) -> float:
    async with engine.connect() as conn:
        total = await conn.execute(
            sa.text("SELECT coalesce(sum(cost_usd), 0) FROM api_usage WHERE account_id = :a"),
            {"a": account},
        )
        return float(total.scalar_one())


async def test_a_priced_model_records_the_search_spend_and_stops_at_the_cap(
    engine: AsyncEngine,
) -> None:
    account, _, _ = await topic_sessions(engine, daily_cap_usd=0.1)
    registry = Registry({MODEL: PricedWords})
    first = await searched(engine, account, QUESTION, registry=registry)
    assert first.results and await spend(engine, account) == pytest.approx(0.08)
    capped = await searched(engine, account, QUESTION, registry=registry)
    assert capped.results == ()
    assert capped.degraded.reasons == ("semantic_daily_cap_reached", "search_text_not_embedded")
    assert await spend(engine, account) == pytest.approx(0.08), "nothing spent past the cap"


async def test_graphql_and_rest_search_within_the_account(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, sessions = await topic_sessions(engine)
    body = await graphql(
        client,
        key,
        "query($q: String!) { searchSessions(text: $q, limit: 2) { modelIdentity"
        " degraded { reasons } results { runtimeSessionId band matches { text replayAnchor } } } }",
        q=QUESTION,
    )
    found = body["data"]["searchSessions"]
    ids = {r["runtimeSessionId"] for r in found["results"]}
    assert ids == {sessions["migration"], sessions["migration again"]}
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
    which of them a search shows is settled by chunk id, which the index's window cannot do."""
    account, _, _ = await topic_sessions(engine)
    world = World()
    loop = world.session(account, "stuck in a loop")
    world.chunk(loop, vector(QUESTION), content=QUESTION, model=MODEL)
    await world.write(engine)
    await repeat_session(engine, loop, 1500)
    async with engine.begin() as conn:
        await ensure_account_index(conn, uuid.UUID(account), IDENTITY)
    tuning = Tuning(exact_scan_max_chunks=0)
    result = await searched(engine, account, QUESTION, tuning, limit=20, max_matches_per_session=5)
    assert result.lookup_path == "account_index"
    async with engine.begin() as conn:  # a full scan: the exact answer
        await conn.execute(sa.text("SET LOCAL enable_indexscan = off"))
        await conn.execute(sa.text("SET LOCAL enable_bitmapscan = off"))
        rows = await conn.execute(
            sa.text(EXACT_TEXT_SCAN),
            {"v": str(vector(QUESTION)), "account": account, "model": MODEL},
        )
        hits = [ranking.Hit(0, r[0], r[1], float(r[2])) for r in rows]
    exact = [
        (n.session_id, round(n.score, 9), [m.chunk_id for m in n.matches])
        for n in ranking.rank_neighbours(hits, 5)
    ]
    served = [
        (n.session.id, round(n.score, 9), [m.document_id for m in n.matches])
        for n in result.results
    ]
    assert served == exact
    assert result.degraded.semantic and result.degraded.reasons == ()
