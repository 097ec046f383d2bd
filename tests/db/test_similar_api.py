"""The GraphQL field and the REST route: same resolver, same answer, the contract's errors."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.comparisons import bearer, graphql, topic_world
from tests.support.world import World, blend, direction

RANKED_FIELDS = """{
  runtimeSessionId sessionSourceType sessionSourceId sessionReference title startedAt
  lastActivityAt score similarity band matchedChunkCount consoleLink
  matches { documentId sourceKind sourceId chunkIndex occurredAt role replayAnchor similarity
            band redactionState text sharedTerms
            probe { documentId sourceKind sourceId chunkIndex occurredAt role replayAnchor text } }
}"""
SIMILAR_FIELDS = (
    """
runtimeSessionId modelIdentity embeddedChunks probeChunks pendingChunks windowDays limit
maxMatchesPerSession elapsedMs endCursor hasNextPage floor sharedTermsModel
degraded { semantic reasons detail }
bands { close related }
lookup { path widenedProbes checkedProbes }
results """
    + RANKED_FIELDS
    + " nearest "
    + RANKED_FIELDS
)
QUERY = (
    "query($id: UUID!, $limit: Int!, $m: Int!, $w: Int, $t: Boolean!, $after: String) {"
    " runtimeSession(id: $id) { similarSessions(limit: $limit, maxMatchesPerSession: $m,"
    " windowDays: $w, includeMatchText: $t, after: $after) {" + SIMILAR_FIELDS + "} } }"
)


def as_rest(graphql_value: Any) -> Any:
    """Rename a GraphQL answer to the REST shape: camelCase keys to snake_case, bands lower."""
    if isinstance(graphql_value, dict):
        out = {}
        for key, value in graphql_value.items():
            snake = re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
            out[snake] = as_rest(value)
        if "band" in out:
            out["band"] = out["band"].lower()
        if "reasons" in out:  # the DegradedReason enum's names: REST answers its values
            out["reasons"] = [reason.lower() for reason in out["reasons"]]
        if "widened_probes" in out and out["path"] is not None:  # the LookupPath enum's too
            out["path"] = out["path"].lower()
        return out
    if isinstance(graphql_value, list):
        return [as_rest(v) for v in graphql_value]
    return graphql_value


def normalise_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normalise_times(v) for k, v in value.items() if k != "elapsed_ms"}
    if isinstance(value, list):
        return [normalise_times(v) for v in value]
    if isinstance(value, str) and re.match(r"^\d{4}-\d\d-\d\dT", value):
        return value.replace("+00:00", "Z").replace("Z", "+00:00")
    return value


async def test_rest_and_graphql_give_the_same_answer(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, ids = await topic_world(engine)
    for params in (
        {"limit": 3, "max_matches_per_session": 2},
        {"limit": 20, "max_matches_per_session": 5},
    ):
        rest = await client.get(
            f"/api/v1/runtime-sessions/{ids[0]}/similar", params=params, headers=bearer(key)
        )
        assert rest.status_code == 200
        gql = await graphql(
            client,
            key,
            QUERY,
            id=ids[0],
            limit=params["limit"],
            m=params["max_matches_per_session"],
            w=None,
            t=True,
            after=None,
        )
        answer = as_rest(gql["data"]["runtimeSession"]["similarSessions"])
        for result in [*answer["results"], *answer["nearest"]]:
            result.pop("console_link")
        cursor = answer.pop("end_cursor")
        more = answer.pop("has_next_page")
        body = rest.json()
        assert body.get("next_cursor") == cursor and more == ("next_cursor" in body)
        body.pop("next_cursor", None)
        assert normalise_times(body) == normalise_times(answer)
        assert body["results"], "the world was built to have neighbours"


async def test_rest_shape_is_exactly_the_contracts(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, ids = await topic_world(engine)
    body = (
        await client.get(f"/api/v1/runtime-sessions/{ids[0]}/similar?limit=1", headers=bearer(key))
    ).json()
    assert set(body) == {
        "runtime_session_id",
        "model_identity",
        "embedded_chunks",
        "probe_chunks",
        "pending_chunks",
        "window_days",
        "limit",
        "max_matches_per_session",
        "degraded",
        "bands",
        "floor",  # issue #26: the floor the lookups used, beside the bands
        "elapsed_ms",
        "results",
        "shared_terms_model",
        "nearest",  # issue #26: offered (loose) when nothing passed the floor
        "lookup",  # issue #29: the lookups' path, and the probes widened or checked exactly
        "next_cursor",
    }
    assert set(body["degraded"]) == {"semantic", "reasons", "detail"}
    assert body["lookup"] == {"path": "exact", "widened_probes": 0, "checked_probes": 0}
    [result] = body["results"]
    assert set(result) == {
        "runtime_session_id",
        "session_source_type",
        "session_source_id",
        "session_reference",
        "title",
        "started_at",
        "last_activity_at",
        "score",
        "similarity",
        "band",
        "matched_chunk_count",
        "matches",
    }
    match = result["matches"][0]
    assert set(match) == {
        "document_id",
        "source_kind",
        "source_id",
        "chunk_index",
        "occurred_at",
        "role",
        "similarity",
        "band",
        "redaction_state",
        "replay_anchor",
        "text",
        "shared_terms",
        "probe",
    }
    assert set(match["probe"]) == {
        "document_id",
        "source_kind",
        "source_id",
        "chunk_index",
        "occurred_at",
        "role",
        "replay_anchor",
        "text",
    }


async def test_paging_by_cursor_never_repeats_or_skips(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, ids = await topic_world(engine)
    url = f"/api/v1/runtime-sessions/{ids[0]}/similar"
    whole = (await client.get(url, params={"limit": 20}, headers=bearer(key))).json()["results"]
    seen: list[str] = []
    params: dict[str, Any] = {"limit": 2}
    while True:
        body = (await client.get(url, params=params, headers=bearer(key))).json()
        seen += [r["runtime_session_id"] for r in body["results"]]
        if "next_cursor" not in body:
            break
        params["cursor"] = body["next_cursor"]
    assert seen == [r["runtime_session_id"] for r in whole]
    assert len(seen) == len(set(seen)) >= 5


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("limit=0", "limit"),
        ("limit=21", "limit"),
        ("limit=ten", "limit"),
        ("max_matches_per_session=-1", "max_matches_per_session"),
        ("max_matches_per_session=6", "max_matches_per_session"),
        ("window_days=0", "window_days"),
        ("window_days=366", "window_days"),
        ("include_match_text=maybe", "include_match_text"),
        ("cursor=%%%", "cursor"),
        ("colour=blue", "colour"),
    ],
)
async def test_rest_bounds_answer_422_naming_the_parameter(
    client: httpx.AsyncClient, engine: AsyncEngine, query: str, parameter: str
) -> None:
    _, key, ids = await topic_world(engine, sessions=2)
    response = await client.get(
        f"/api/v1/runtime-sessions/{ids[0]}/similar?{query}", headers=bearer(key)
    )
    assert response.status_code == 422
    assert response.json()["parameter"] == parameter
    assert parameter in response.json()["detail"]


async def test_a_malformed_id_answers_422(client: httpx.AsyncClient, engine: AsyncEngine) -> None:
    _, key, _ = await topic_world(engine, sessions=1)
    response = await client.get("/api/v1/runtime-sessions/not-a-uuid/similar", headers=bearer(key))
    assert response.status_code == 422
    assert response.json()["parameter"] == "runtime_session_id"


@pytest.mark.parametrize(
    ("arguments", "argument"),
    [
        ("limit: 0", "limit"),
        ("limit: 21", "limit"),
        ("maxMatchesPerSession: 6", "maxMatchesPerSession"),
        ("windowDays: 0", "windowDays"),
        ("windowDays: 400", "windowDays"),
        ('after: "x"', "after"),
    ],
)
async def test_graphql_bounds_answer_bad_user_input_naming_the_argument(
    client: httpx.AsyncClient, engine: AsyncEngine, arguments: str, argument: str
) -> None:
    _, key, ids = await topic_world(engine, sessions=1)
    body = await graphql(
        client,
        key,
        "query($id: UUID!) { runtimeSession(id: $id) {"
        f" similarSessions({arguments}) {{ limit }} }} }}",
        id=ids[0],
    )
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["extensions"]["argument"] == argument
    assert argument in error["message"]


async def test_unknown_and_other_accounts_sessions_look_the_same(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, _ = await topic_world(engine, sessions=1)
    world = World()
    other_account, _ = world.account("other")
    foreign = world.session(other_account)
    world.chunk(foreign, blend(direction(1), direction(5), 0.1))
    await world.write(engine)
    answers = []
    for session in (foreign, str(uuid.uuid4())):
        response = await client.get(
            f"/api/v1/runtime-sessions/{session}/similar", headers=bearer(key)
        )
        answers.append((response.status_code, response.content))
        gql = await graphql(
            client, key, "query($id: UUID!) { runtimeSession(id: $id) { id } }", id=session
        )
        assert gql == {"data": {"runtimeSession": None}}
    assert answers[0] == answers[1]
    assert answers[0][0] == 404


async def test_keys_are_required_and_scoped(client: httpx.AsyncClient, engine: AsyncEngine) -> None:
    world = World()
    account, _ = world.account("scoped", key="sk-test-no-scope-0001", scopes=())
    session = world.session(account)
    await world.write(engine)
    url = f"/api/v1/runtime-sessions/{session}/similar"
    assert (await client.get(url)).status_code == 401
    assert (await client.get(url, headers=bearer("sk-test-unknown-key"))).status_code == 401
    assert (await client.get(url, headers={"authorization": "Basic abc"})).status_code == 401
    forbidden = await client.get(url, headers=bearer("sk-test-no-scope-0001"))
    assert forbidden.status_code == 403
    assert "view_runtime_sessions" in forbidden.json()["detail"]
    assert (await client.post("/graphql", json={"query": "{ viewer { name } }"})).status_code == 401


async def test_reasons_are_a_graphql_enum_and_snake_case_codes_in_rest(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, ids = await topic_world(engine, sessions=3)
    body = await graphql(
        client,
        key,
        "query($id: UUID!) { runtimeSession(id: $id) {"
        " similarSessions(windowDays: 30) { degraded { reasons } } } }",
        id=ids[0],
    )
    reasons = body["data"]["runtimeSession"]["similarSessions"]["degraded"]["reasons"]
    assert reasons[0] == "SIMILAR_WINDOW_APPLIED"
    rest = await client.get(
        f"/api/v1/runtime-sessions/{ids[0]}/similar?window_days=30", headers=bearer(key)
    )
    assert rest.json()["degraded"]["reasons"] == [r.lower() for r in reasons]
