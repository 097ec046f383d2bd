"""sharedTerms on every match: chosen with the account's fitted lexical model whatever model
found the pair (a pair found only by other vectors still gets lexical terms), an empty list
and no `sharedTermsModel` when the account has no fit, null when texts are not shown;
REST carries the same list, the nearest offered below the floor get theirs too, and one
request reads the fit and the texts once."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from data import fits
from indexer.embedders import DEFAULT_MODEL, Registry
from indexer.lexical import Fit
from indexer.passes import IndexerConfig
from indexer.worker import index_once
from tests.support.comparisons import bearer, counted_statements, graphql
from tests.support.world import World, blend, direction, unit

LOCK = "The deploy failed: deadlock detected on table orders while the migration ran"
LOCK_AGAIN = "Migration aborted, deadlock detected on table orders; retrying the deploy"
REFUND = "The customer asked for a refund of the cancelled flight to Seattle"
MATCHES = """query($id: UUID!, $t: Boolean!) { runtimeSession(id: $id) {
  similarSessions(includeMatchText: $t, maxMatchesPerSession: 1) {
    degraded { reasons } sharedTermsModel
    results { runtimeSessionId matches { text sharedTerms probe { text } } } } } }"""


async def dense_pair(engine: AsyncEngine, fitted: bool) -> dict[str, Any]:
    """Two sessions whose passages share words, found by vectors of a model that is not the
    lexical one (as a dense leg finds them), a third whose passage shares none with the first
    but whose vector is near it; and, `fitted`, the account's lexical fit stored beside them."""
    world = World()
    account, key = world.account()  # local:hash-384@384: not the lexical model
    topic = direction(11)
    texts = {"viewed": LOCK, "twin": LOCK_AGAIN, "unlike": REFUND}
    ids = {}
    for n, (name, text) in enumerate(texts.items()):
        ids[name] = world.session(account, name)
        world.chunk(ids[name], blend(topic, direction(20 + n), 0.1 + 0.05 * n), content=text)
    await world.write(engine)
    if fitted:
        fit = Fit.of_sessions([[t] for t in texts.values()] + [["orders deadlock"]])
        async with engine.begin() as conn:
            await fits.save_fit(
                conn, uuid.UUID(account), fit.identity, fit.sessions, fit.to_bytes()
            )
    return {"key": key, **ids}


async def test_a_pair_found_by_other_vectors_gets_the_fits_lexical_terms(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await dense_pair(engine, fitted=True)
    body = await graphql(client, world["key"], MATCHES, id=world["viewed"], t=True)
    similar = body["data"]["runtimeSession"]["similarSessions"]
    terms = {r["runtimeSessionId"]: r["matches"][0]["sharedTerms"] for r in similar["results"]}
    # Six words shared; "deadlock" and "orders" are in 3 of the fit's 4 sessions, the others in
    # 2: the four rarer ones carry 87% of what they share (ties by term).
    assert terms[world["twin"]] == ["deploy", "detected", "migration", "table"]
    assert terms[world["unlike"]] == []  # near by its vector, no weighed word in common
    assert similar["sharedTermsModel"].startswith("local:lexical-384.")
    assert similar["degraded"]["reasons"] == []
    rest = await client.get(
        f"/api/v1/runtime-sessions/{world['viewed']}/similar?max_matches_per_session=1",
        headers=bearer(world["key"]),
    )
    listed = {
        r["runtime_session_id"]: r["matches"][0]["shared_terms"] for r in rest.json()["results"]
    }
    assert listed == terms
    for word in terms[world["twin"]]:
        assert word in LOCK.lower() and word in LOCK_AGAIN.lower()


async def test_without_a_fit_the_terms_are_empty_and_no_model_is_named(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await dense_pair(engine, fitted=False)
    body = await graphql(client, world["key"], MATCHES, id=world["viewed"], t=True)
    similar = body["data"]["runtimeSession"]["similarSessions"]
    assert all(r["matches"][0]["sharedTerms"] == [] for r in similar["results"])
    assert similar["results"] and similar["sharedTermsModel"] is None
    rest = (
        await client.get(
            f"/api/v1/runtime-sessions/{world['viewed']}/similar", headers=bearer(world["key"])
        )
    ).json()
    assert rest["shared_terms_model"] is None and rest["degraded"]["reasons"] == []
    assert all(m["shared_terms"] == [] for r in rest["results"] for m in r["matches"])


async def test_no_text_no_terms_and_nothing_read(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await dense_pair(engine, fitted=True)
    with counted_statements(engine) as statements:
        body = await graphql(client, world["key"], MATCHES, id=world["viewed"], t=False)
    similar = body["data"]["runtimeSession"]["similarSessions"]
    assert all(r["matches"][0]["sharedTerms"] is None for r in similar["results"])
    assert not any("lexical_fits" in s or "content" in s for s in statements), statements


async def test_aliases_read_the_fit_and_the_texts_once(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = await dense_pair(engine, fitted=True)
    query = """query($a: UUID!, $b: UUID!) {
      a: runtimeSession(id: $a) { similarSessions { results { matches { sharedTerms } } } }
      b: runtimeSession(id: $b) { similarSessions { results { matches { sharedTerms } } } } }"""
    with counted_statements(engine) as statements:
        body = await graphql(client, world["key"], query, a=world["viewed"], b=world["twin"])
    assert body["data"]["a"]["similarSessions"]["results"]
    assert len([s for s in statements if "lexical_fits" in s]) <= 2  # identity, then weights
    assert len([s for s in statements if "session_chunks.content" in s]) == 1


async def test_a_search_match_shares_terms_with_the_searched_text(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = World()
    account, key = world.account(model=str(DEFAULT_MODEL))
    for n, text in enumerate([LOCK, LOCK_AGAIN, REFUND, "a refund to the card of the customer"]):
        sid = world.session(account, f"s{n}", day=n)
        world.activity(sid, 0, text)
    await world.write(engine)
    await index_once(engine, Registry(), IndexerConfig(progress=False))
    body = await graphql(
        client,
        key,
        "query($q: String!) { searchSessions(text: $q) { degraded { reasons }"
        " results { title matches { text sharedTerms } } } }",
        q="deadlock on orders",
    )
    found = body["data"]["searchSessions"]
    assert found["results"], found
    for result in found["results"]:
        for match in result["matches"]:
            assert match["sharedTerms"] and set(match["sharedTerms"]) <= {"deadlock", "orders"}


async def test_the_nearest_offered_below_the_floor_get_their_terms_too(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    world = World()
    account, key = world.account()
    ids = {}
    for n, (name, text) in enumerate({"viewed": LOCK, "twin": LOCK_AGAIN}.items()):
        ids[name] = world.session(account, name)
        world.chunk(ids[name], unit(direction(40 + n)), content=text)  # unrelated vectors
    await world.write(engine)
    fit = Fit.of_sessions([[LOCK], [LOCK_AGAIN], [REFUND], ["orders deadlock"]])
    async with engine.begin() as conn:
        await fits.save_fit(conn, uuid.UUID(account), fit.identity, fit.sessions, fit.to_bytes())
    query = """query($id: UUID!) { runtimeSession(id: $id) {
      similarSessions(maxMatchesPerSession: 1) { degraded { reasons } sharedTermsModel
        results { runtimeSessionId } nearest { runtimeSessionId matches { sharedTerms } } } } }"""
    body = await graphql(client, key, query, id=ids["viewed"])
    similar = body["data"]["runtimeSession"]["similarSessions"]
    assert similar["results"] == []
    assert similar["degraded"]["reasons"] == ["SIMILAR_NOTHING_CLOSE_ENOUGH"]
    [nearest] = similar["nearest"]
    assert nearest["runtimeSessionId"] == ids["twin"]
    assert nearest["matches"][0]["sharedTerms"] == ["deploy", "detected", "migration", "table"]
    assert similar["sharedTermsModel"].startswith("local:lexical-384.")
