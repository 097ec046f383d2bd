"""Request bodies that are not a GraphQL request (issue #30): a JSON body that is not an
object, or JSON nested past what the decoder follows, is answered 400 naming what is wrong,
never a 500."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from similar_sessions.graphql_app import NESTED_TOO_DEEP, NOT_AN_OBJECT, NOT_UTF8
from tests.support.comparisons import bearer
from tests.support.fuzz import examples
from tests.support.world import pair_world

NESTED = "[" * 3000 + "]" * 3000  # 6 KB, well under the body limit
JSON = {"content-type": "application/json"}


async def post(client: httpx.AsyncClient, key: str, body: str) -> httpx.Response:
    return await client.post("/graphql", content=body.encode(), headers={**bearer(key), **JSON})


@pytest.mark.parametrize("body", ["null", "1", "true", '"x"', "-0.5", '"{}"'])
async def test_a_body_that_is_not_an_object_is_answered_400(
    client: httpx.AsyncClient, engine: AsyncEngine, body: str
) -> None:
    _, key = await pair_world(engine)
    response = await post(client, key, body)
    assert response.status_code == 400, response.text
    assert response.text == NOT_AN_OBJECT


@pytest.mark.parametrize(
    "body",
    [
        NESTED,
        json.dumps({"query": "{ viewer { name } }"})[:-1] + f', "variables": {{"v": {NESTED}}}}}',
        json.dumps({"query": "{ viewer { name } }"})[:-1] + f', "extensions": {{"e": {NESTED}}}}}',
        '{"query": "{ viewer { name } }", "variables": ' + '{"a": ' * 3000 + "1" + "}" * 3001,
    ],
    ids=["body", "variables", "extensions", "objects"],
)
async def test_json_nested_past_the_decoder_is_answered_400(
    client: httpx.AsyncClient, engine: AsyncEngine, body: str
) -> None:
    _, key = await pair_world(engine)
    response = await post(client, key, body)
    assert response.status_code == 400, response.text
    assert response.text == NESTED_TOO_DEEP


async def test_nested_variables_in_a_get_are_answered_400(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key = await pair_world(engine)
    for name in ("variables", "extensions"):
        response = await client.get(
            "/graphql",
            params={"query": "{ viewer { name } }", name: NESTED},
            headers={**bearer(key), "accept": "application/json"},
        )
        assert response.status_code == 400, response.text
        assert response.text == NESTED_TOO_DEEP


async def test_a_request_still_answers_beside_them(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    """Nesting the decoder follows is read as before, and a batch is refused as before."""
    _, key = await pair_world(engine)
    shallow = '{"query": "{ viewer { name } }", "extensions": {"e": ' + "[" * 200 + "]" * 200 + "}}"
    answered = await post(client, key, shallow)
    assert answered.status_code == 200 and answered.json()["data"]["viewer"]["name"]
    batch = await post(client, key, '[{"query": "{ viewer { name } }"}]')
    assert batch.status_code == 400 and "Batching is not enabled" in batch.text


JSON_DOCUMENTS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    document=JSON_DOCUMENTS,
    depth=st.integers(min_value=0, max_value=4000),
    where=st.sampled_from(["body", "variables", "extensions", "query"]),
)
async def test_any_json_body_is_answered_without_a_500(
    client: httpx.AsyncClient, engine: AsyncEngine, document: object, depth: int, where: str
) -> None:
    """Any JSON document, wrapped in `depth` lists, as the body or one of its members."""
    _, key = await pair_world(engine)
    nested = "[" * depth + json.dumps(document) + "]" * depth
    body = (
        nested
        if where == "body"
        else f'{{"query": "{{ viewer {{ name }} }}", "{where}": {nested}}}'
    )
    response = await post(client, key, body)
    assert response.status_code in (200, 400), response.text
    if response.status_code == 200:
        for error in response.json().get("errors", []):
            assert error["message"] != "Unexpected error.", "an unexpected (500-class) error"


@pytest.mark.parametrize(
    "body",
    [
        b'{"query": "\xff"}',
        b'{"query": "{ viewer { name } }", "operationName": "\xfe\xff"}',
        b'{"query": "{ viewer { name } }", "variables": {"a": "\xc3"}}',
        b"\xff\xfe\x00{",
    ],
    ids=["query", "operationName", "variables", "body"],
)
async def test_a_body_that_is_not_utf8_is_answered_400_and_the_connection_kept(
    client: httpx.AsyncClient, engine: AsyncEngine, body: bytes
) -> None:
    _, key = await pair_world(engine)
    response = await client.post("/graphql", content=body, headers={**bearer(key), **JSON})
    assert response.status_code == 400, response.text
    assert response.text == NOT_UTF8
    after = await post(client, key, '{"query": "{ viewer { name } }"}')
    assert after.status_code == 200 and after.json()["data"]["viewer"]["name"]


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(raw=st.binary(max_size=64), where=st.sampled_from(["body", "query", "variables"]))
async def test_any_bytes_are_answered_without_a_500(
    client: httpx.AsyncClient, engine: AsyncEngine, raw: bytes, where: str
) -> None:
    """Arbitrary bytes as the whole body, or inside a member's string."""
    _, key = await pair_world(engine)
    body = {
        "body": raw,
        "query": b'{"query": "' + raw + b'"}',
        "variables": b'{"query": "{ viewer { name } }", "variables": {"v": "' + raw + b'"}}',
    }[where]
    response = await client.post("/graphql", content=body, headers={**bearer(key), **JSON})
    assert response.status_code in (200, 400), response.text
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        assert response.status_code == 400 and response.text == NOT_UTF8
