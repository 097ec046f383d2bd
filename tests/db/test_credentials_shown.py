"""Credentials in what the API returns: masked in passages, probes, titles, replay turns,
REST and search by default, never a shared term or a matched word; a search for one finds
nothing and says so; an account with the `secrets_shown` feature sees the text as recorded."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data import fits
from indexer.embedders import DEFAULT_MODEL, Registry
from indexer.lexical import Fit
from indexer.passes import IndexerConfig
from indexer.worker import index_once
from tests.support.comparisons import bearer, graphql
from tests.support.search_world import MODEL, vector
from tests.support.world import T0, World
from values.credentials import SHOWN_FEATURE

AWS = "AKIAIOSFODNN7EXAMPLE"
PASSWORD = "hunter2-prod"
VIEWED = f"deploy failed: AWS_ACCESS_KEY_ID={AWS} password={PASSWORD} refused by orders database"
TWIN = f"deploy failed again: key {AWS} and password={PASSWORD} refused by orders database"
OTHER = "the customer asked for a refund of the cancelled flight to Seattle"
ENGLISH = (
    "The deploy failed because the readiness probe timed out twice",
    "The invoice total was wrong: the currency rate was stale",
)
SIMILAR = """query($id: UUID!) { runtimeSession(id: $id) {
  title sourceId reference replay { content contentTruncated }
  similarSessions(maxMatchesPerSession: 1) { results { title sessionSourceId sessionReference
    session { title sourceId reference }
    matches { text sharedTerms probe { text } } } } } }"""
SEARCH = """query($q: String!) { searchSessions(text: $q) { degraded { reasons }
  results { runtimeSessionId title matches { text matchedWords } } } }"""


async def secrets_world(
    engine: AsyncEngine, *features: str, failed_yesterday: bool = False
) -> dict[str, Any]:
    """Two sessions whose passages, titles and replay hold the same AWS key and password,
    a third unlike them, and the account's lexical fit (for shared terms); all three failed
    yesterday when asked (what the failure modes group)."""
    world = World()
    account, key = world.account(model=MODEL, features=("similarSessions", *features))
    ids = {}
    day = (datetime.now(UTC) - T0).days - 1 if failed_yesterday else 0
    status = "failed" if failed_yesterday else "completed"
    for name, text in {"viewed": VIEWED, "twin": TWIN, "other": OTHER}.items():
        ids[name] = world.session(
            account,
            f"{name} with {AWS}",
            day=day,
            status=status,
            source_id=f"{name}/{AWS}",
            reference=f"https://ci.internal/run?password={PASSWORD}",
        )
        world.chunk(ids[name], vector(text), content=text, model=MODEL)
        world.activity(ids[name], 0, text)
    await world.write(engine)
    fit = Fit.of_sessions([[VIEWED], [TWIN], [OTHER], ["orders database"]])
    async with engine.begin() as conn:
        await fits.save_fit(conn, uuid.UUID(account), fit.identity, fit.sessions, fit.to_bytes())
    return {"key": key, **ids}


def _leaks(body: Any) -> list[str]:
    text = json.dumps(body)
    return [s for s in (AWS, PASSWORD, AWS.lower(), PASSWORD.split("-")[0]) if s in text]


async def test_every_shown_text_is_masked_by_default(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await secrets_world(engine)
    body = await graphql(client, world["key"], SIMILAR, id=world["viewed"])
    session = body["data"]["runtimeSession"]
    assert session["title"] == "viewed with [masked: AWS Access Key]"
    assert session["sourceId"] == "viewed/[masked: AWS Access Key]"
    assert session["reference"] == "https://ci.internal/run?password=[masked: Secret Keyword]"
    assert session["replay"] == [
        {
            "content": "deploy failed: AWS_ACCESS_KEY_ID=[masked: AWS Access Key] "
            "password=[masked: Secret Keyword] refused by orders database",
            "contentTruncated": False,
        }
    ]
    (twin,) = [r for r in session["similarSessions"]["results"] if "twin" in r["title"]]
    assert twin["title"] == twin["session"]["title"] == "twin with [masked: AWS Access Key]"
    assert twin["sessionSourceId"] == twin["session"]["sourceId"] == "twin/[masked: AWS Access Key]"
    assert "[masked: Secret Keyword]" in twin["sessionReference"] == twin["session"]["reference"]
    (match,) = twin["matches"]
    assert "[masked: AWS Access Key]" in match["text"]
    assert "[masked: Secret Keyword]" in match["probe"]["text"]
    assert match["sharedTerms"]  # the pair shares words, and none of them is a credential
    assert _leaks(body) == []
    rest = await client.get(
        f"/api/v1/runtime-sessions/{world['viewed']}/similar", headers=bearer(world["key"])
    )
    assert rest.status_code == 200 and rest.json()["results"]
    assert _leaks(rest.json()) == []


async def test_a_search_for_a_credential_finds_nothing_and_says_so(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await secrets_world(engine)
    alone = (await graphql(client, world["key"], SEARCH, q=AWS))["data"]["searchSessions"]
    assert alone["results"] == []
    assert "SEARCH_TEXT_CREDENTIAL_MASKED" in alone["degraded"]["reasons"]
    mixed = await graphql(client, world["key"], SEARCH, q=f"orders database password={PASSWORD}")
    found = mixed["data"]["searchSessions"]
    assert {r["runtimeSessionId"] for r in found["results"]} == {world["viewed"], world["twin"]}
    assert "SEARCH_TEXT_CREDENTIAL_MASKED" in found["degraded"]["reasons"]
    words = {w for r in found["results"] for m in r["matches"] for w in m["matchedWords"]}
    assert {"orders", "database"} <= words
    assert _leaks(found) == []
    plain = (await graphql(client, world["key"], SEARCH, q="orders database"))["data"]
    assert "SEARCH_TEXT_CREDENTIAL_MASKED" not in plain["searchSessions"]["degraded"]["reasons"]


async def test_an_account_that_shows_credentials_sees_them(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await secrets_world(engine, SHOWN_FEATURE)
    body = await graphql(client, world["key"], SIMILAR, id=world["viewed"])
    session = body["data"]["runtimeSession"]
    assert session["title"] == f"viewed with {AWS}"
    assert session["sourceId"] == f"viewed/{AWS}" and PASSWORD in session["reference"]
    assert session["replay"][0]["content"] == VIEWED
    (twin,) = [r for r in session["similarSessions"]["results"] if "twin" in r["title"]]
    assert twin["matches"][0]["text"] == TWIN
    assert twin["matches"][0]["probe"]["text"] == VIEWED
    # Shown, but still no term: a credential is never a feature of the fit.
    assert not {AWS.lower(), PASSWORD} & set(twin["matches"][0]["sharedTerms"])


async def test_the_rest_routes_mask_titles_and_passages_too(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Search and the failure modes over REST (their groups' sessions, first, last and
    representative, and each group's first members with their matches) show no credential."""
    world = await secrets_world(engine, failed_yesterday=True)
    auth = bearer(world["key"])
    search = await client.get(
        "/api/v1/runtime-sessions/search", params={"q": "orders database"}, headers=auth
    )
    assert search.status_code == 200
    titles = {r["title"] for r in search.json()["results"]}
    assert titles == {"viewed with [masked: AWS Access Key]", "twin with [masked: AWS Access Key]"}
    assert _leaks(search.json()) == []
    modes = await client.get(
        "/api/v1/runtime-sessions/failure-modes", params={"window_days": 7}, headers=auth
    )
    assert modes.status_code == 200
    groups = modes.json()["groups"]
    assert groups, "the three failed sessions are grouped"
    shown = [g[k]["title"] for g in groups for k in ("first", "last", "representative")]
    shown += [m["title"] for g in groups for m in g["members"]]
    assert shown and all("[masked: AWS Access Key]" in title for title in shown)
    assert _leaks(modes.json()) == []


async def test_the_session_list_search_cannot_confirm_a_guessed_secret(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await secrets_world(engine)
    listed = """query($q: String!, $first: Int!) { runtimeSessions(search: $q, first: $first) {
      nodes { id title } pageInfo { hasNextPage } } }"""
    body = AWS.removeprefix("AKIA")  # a guess at the key's body, in the titles and source ids
    guessed = await graphql(client, world["key"], listed, q=body, first=1)
    assert guessed["data"]["runtimeSessions"]["nodes"] == []
    assert guessed["data"]["runtimeSessions"]["pageInfo"]["hasNextPage"] is False
    by_word = await graphql(client, world["key"], listed, q="with", first=1)
    page = by_word["data"]["runtimeSessions"]
    assert len(page["nodes"]) == 1 and page["pageInfo"]["hasNextPage"] is True
    shown = await secrets_world(engine, SHOWN_FEATURE)
    seen = await graphql(client, shown["key"], listed, q=body, first=5)
    assert len(seen["data"]["runtimeSessions"]["nodes"]) == 3  # shown in clear: found


GUESSES = (PASSWORD.split("-")[0], AWS.lower(), PASSWORD)


async def test_a_guessed_secret_finds_no_passage(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """A bare value (`hunter2`, a key in lower case) is no credential in a search text, but
    in the passages it was one: their search words leave it out, so the guess finds nothing
    (the passages are imported; the indexer's own are checked below)."""
    world = await secrets_world(engine)
    for guess in GUESSES:
        found = (await graphql(client, world["key"], SEARCH, q=guess))["data"]["searchSessions"]
        assert found["results"] == [], guess
    words = await graphql(client, world["key"], SEARCH, q="refused orders")
    assert {r["runtimeSessionId"] for r in words["data"]["searchSessions"]["results"]} == {
        world["viewed"],
        world["twin"],
    }


async def test_the_indexers_passages_leave_credentials_out_of_their_search_words(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = World()
    account, key = world.account(model=str(DEFAULT_MODEL), features=("similarSessions",))
    for n, text in enumerate([VIEWED, TWIN, OTHER, *ENGLISH]):
        world.activity(world.session(account, f"session {n}"), 0, text)
    await world.write(engine)
    await index_once(engine, Registry(), IndexerConfig(progress=False), account_ids=[account])
    async with engine.connect() as conn:
        terms = await conn.execute(
            sa.text("SELECT search_terms::text FROM session_chunks WHERE account_id = :a"),
            {"a": account},
        )
        stored = " ".join(row[0] for row in terms)
    assert "refus" in stored and "hunter2" not in stored and "akia" not in stored
    for guess in GUESSES:
        found = (await graphql(client, key, SEARCH, q=guess))["data"]["searchSessions"]
        assert found["results"] == [], guess
