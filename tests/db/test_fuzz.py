"""Hostile input: every REST parameter and GraphQL variable, fuzzed. Always a 4xx or a GraphQL
error naming the problem; never a 500; nothing written."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.comparisons import bearer
from tests.support.fuzz import examples
from tests.support.transfer_files import counts
from tests.support.world import pair_world

HOSTILE = st.one_of(
    st.text(max_size=40),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(
        [
            "1; DROP TABLE session_chunks; --",
            "' OR '1'='1",
            "${jndi:x}",
            "NaN",
            "Infinity",
            "-0",
            "1e309",
            "0x10",
            "\u0000",
            "\U0001f600" * 50,
            "a" * 5000,
            "00000000-0000-0000-0000-00000000000g",
            "true",
            "false",
            "1.5",
            "",
        ]
    ),
)
PARAMETERS = [
    "limit",
    "max_matches_per_session",
    "window_days",
    "include_match_text",
    "cursor",
    "status",
    "source_type",
]
FUZZ = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(parameter=st.sampled_from(PARAMETERS), value=HOSTILE)
async def test_rest_parameters(
    client: httpx.AsyncClient, engine: AsyncEngine, parameter: str, value: str
) -> None:
    viewed, key = await pair_world(engine)
    before = await counts(engine)
    response = await client.get(
        f"/api/v1/runtime-sessions/{viewed}/similar", params={parameter: value}, headers=bearer(key)
    )
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert response.json()["parameter"] == parameter
    assert await counts(engine) == before


@FUZZ
@given(parameter=st.sampled_from(["q", *PARAMETERS]), value=HOSTILE)
async def test_rest_search_parameters(
    client: httpx.AsyncClient, engine: AsyncEngine, parameter: str, value: str
) -> None:
    _, key = await pair_world(engine)
    params = {"q": "a migration that failed", parameter: value}
    response = await client.get(
        "/api/v1/runtime-sessions/search", params=params, headers=bearer(key)
    )
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        assert response.json()["parameter"] == parameter


@FUZZ
@given(value=HOSTILE)
async def test_rest_session_ids(client: httpx.AsyncClient, engine: AsyncEngine, value: str) -> None:
    _, key = await pair_world(engine)
    response = await client.get(
        f"/api/v1/runtime-sessions/{quote(value, safe='')}/similar", headers=bearer(key)
    )
    assert response.status_code in (404, 422), response.text


JSON_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),  # JSON has neither
    st.text(max_size=60),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
VARIABLES = ["id", "limit", "m", "w", "t", "after", "first"]
QUERY = """query($id: UUID!, $limit: Int!, $m: Int!, $w: Int, $t: Boolean!, $after: String,
  $first: Int!) {
  runtimeSessions(first: $first) { nodes { id } }
  runtimeSession(id: $id) { similarSessions(limit: $limit, maxMatchesPerSession: $m,
    windowDays: $w, includeMatchText: $t, after: $after) { limit results { title } } } }"""


@FUZZ
@given(variable=st.sampled_from(VARIABLES), value=JSON_VALUES)
async def test_graphql_variables(
    client: httpx.AsyncClient, engine: AsyncEngine, variable: str, value: object
) -> None:
    viewed, key = await pair_world(engine)
    variables: dict[str, object] = {
        "id": viewed,
        "limit": 5,
        "m": 2,
        "w": None,
        "t": True,
        "after": None,
        "first": 10,
    }
    variables[variable] = value
    before = await counts(engine)
    response = await client.post(
        "/graphql", json={"query": QUERY, "variables": variables}, headers=bearer(key)
    )
    assert response.status_code in (200, 400), response.text
    body = response.json()
    for error in body.get("errors", []):
        assert error["message"] != "Unexpected error.", "an unexpected (500-class) error"
    assert await counts(engine) == before


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


REPLAY_CURSORS = st.one_of(
    HOSTILE,
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
        lambda inner: st.lists(inner, max_size=3),
        max_leaves=6,
    ).map(lambda position: _b64(json.dumps(position).encode())),
    st.integers(min_value=0, max_value=4000).map(lambda depth: _b64(b"[" * depth)),
    st.binary(max_size=80).map(_b64),
    st.tuples(st.binary(max_size=40), st.binary(min_size=16, max_size=16)).map(
        lambda parts: f"{_b64(parts[0])}.{_b64(parts[1])}"
    ),
)
REPLAY = """query($id: UUID!, $after: String) { runtimeSession(id: $id) { title
  replayPage(first: 2, after: $after) { nodes { ordinal } } } }"""


@FUZZ
@given(cursor=REPLAY_CURSORS)
async def test_replay_cursors(client: httpx.AsyncClient, engine: AsyncEngine, cursor: str) -> None:
    """No cursor but one handed out opens a replay; the session's other fields keep their data."""
    viewed, key = await pair_world(engine)
    response = await client.post(
        "/graphql",
        json={"query": REPLAY, "variables": {"id": viewed, "after": cursor}},
        headers=bearer(key),
    )
    assert response.status_code == 200, response.text
    body = response.json()
    [error] = body["errors"]
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "argument": "after"}
    assert body["data"]["runtimeSession"]["title"] is not None
