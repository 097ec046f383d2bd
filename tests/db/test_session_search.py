"""runtimeSessions(search:): an id finds its session, text finds titles and source ids, of the
caller's account only; wildcards are literal and hostile text is never a 500."""

from __future__ import annotations

import json

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.comparisons import bearer, graphql
from tests.support.fuzz import examples
from tests.support.world import World

SEARCH = """query($search: String, $first: Int! = 20, $after: String) {
  runtimeSessions(search: $search, first: $first, after: $after) {
    nodes { id title } endCursor hasNextPage } }"""
TITLES = [
    "Refund for a cancelled flight",
    "100% refund asked",
    "100 bags",
    "seat_change to 12A",
    "seatXchange",
    "back\\slash in a title",
    "Baggage allowance",
]


async def search_world(engine: AsyncEngine) -> tuple[str, dict[str, str], str]:
    """An account with TITLES, and another account with a session titled like one of them."""
    world = World()
    account, key = world.account()
    ids = {title: world.session(account, title, day=day) for day, title in enumerate(TITLES)}
    other, _ = world.account("other")
    stranger = world.session(other, "Refund for a cancelled flight")
    await world.write(engine)
    return key, ids, stranger


async def titles(client: httpx.AsyncClient, key: str, search: str | None) -> list[str]:
    body = await graphql(client, key, SEARCH, search=search)
    return [n["title"] for n in body["data"]["runtimeSessions"]["nodes"]]


async def test_text_searches_titles_case_insensitively_and_literally(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, _, _ = await search_world(engine)
    assert await titles(client, key, "REFUND") == ["100% refund asked", TITLES[0]]
    assert await titles(client, key, "100%") == ["100% refund asked"]
    assert await titles(client, key, "seat_change") == ["seat_change to 12A"]
    assert await titles(client, key, "back\\slash") == ["back\\slash in a title"]
    assert await titles(client, key, "%") == ["100% refund asked"]
    assert await titles(client, key, "_") == ["seat_change to 12A"]
    assert await titles(client, key, "nothing like it") == []
    assert len(await titles(client, key, "   ")) == len(TITLES), "blank searches nothing"
    assert len(await titles(client, key, None)) == len(TITLES)


async def test_an_id_finds_its_session_and_a_source_id_matches_too(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, ids, stranger = await search_world(engine)
    wanted = ids["Baggage allowance"]
    assert await titles(client, key, wanted) == ["Baggage allowance"]
    assert await titles(client, key, f"  {wanted.upper()} ") == ["Baggage allowance"]
    assert await titles(client, key, stranger) == [], "another account's id finds nothing"
    source_prefix = f"src-{ids['100 bags'][:8]}"
    assert await titles(client, key, source_prefix) == ["100 bags"]


async def test_search_results_are_paged_newest_first(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, _, _ = await search_world(engine)
    seen, after = [], None
    while True:
        body = await graphql(client, key, SEARCH, search="a", first=2, after=after)
        page = body["data"]["runtimeSessions"]
        seen += [n["title"] for n in page["nodes"]]
        if not page["hasNextPage"]:
            break
        after = page["endCursor"]
    assert seen == [t for t in reversed(TITLES) if "a" in t.lower()]


async def test_too_long_or_unstorable_text_is_bad_user_input(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    key, _, _ = await search_world(engine)
    for search in ("x" * 201, "a\u0000b"):
        body = await graphql(client, key, SEARCH, search=search)
        [error] = body["errors"]
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": "search"}
    # A lone surrogate, as a JSON client may send it.
    raw = json.dumps({"query": SEARCH}).rstrip("}") + ', "variables": {"search": "\\ud800"}}'
    response = await client.post(
        "/graphql", content=raw, headers={**bearer(key), "content-type": "application/json"}
    )
    assert response.status_code == 200, response.text
    [error] = response.json()["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": "search"}


FUZZ = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
HOSTILE = st.one_of(
    st.text(max_size=80),
    st.text(alphabet=st.sampled_from("%_\\'\"*?[]^$().|{}-"), max_size=20),
    st.sampled_from(
        [
            "'; DROP TABLE runtime_sessions; --",
            "%' OR '1'='1",
            "\\",
            "\\%",
            "00000000-0000-0000-0000-000000000000 %",
            "\U0001f600" * 50,
            "\u202e\u0301",
        ]
    ),
)


@FUZZ
@given(search=HOSTILE)
async def test_hostile_search_text_never_fails_and_never_leaves_the_account(
    client: httpx.AsyncClient, engine: AsyncEngine, search: str
) -> None:
    key, ids, _ = await search_world(engine)
    body = await graphql(client, key, SEARCH, search=search)
    if "errors" in body:
        [error] = body["errors"]
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": "search"}
        return
    found = {n["id"] for n in body["data"]["runtimeSessions"]["nodes"]}
    assert found <= set(ids.values()), "a session of another account was found"
    needle = search.strip().lower()
    if not needle.isascii():
        return  # case folding beyond ASCII follows the database's locale
    expected = {
        sid
        for title, sid in ids.items()
        if not needle or needle in title.lower() or needle in f"src-{sid[:8]}"
    }
    assert found == expected
