"""Isolation as a property: in random multi-account worlds, no answer of any route names
another account's session, chunk or text, and another account's id answers as a missing one."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.comparisons import bearer, graphql
from tests.support.fuzz import examples
from tests.support.world import World, blend, direction

STATES = ["clear", "clear", "redacted", "metadata_only", "withheld"]
MODELS = ["local:hash-384@384", "local:other-384@384"]

world_shape = st.lists(  # accounts
    st.lists(  # sessions
        st.lists(  # chunks: (topic, noise seed, redaction state, model)
            st.tuples(
                st.integers(0, 2),
                st.integers(0, 10_000),
                st.sampled_from(STATES),
                st.sampled_from(MODELS),
            ),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=3,
    ),
    min_size=2,
    max_size=3,
)

QUERY = """query($id: UUID!) { runtimeSession(id: $id) { id replay { content }
  similarSessions(limit: 20, maxMatchesPerSession: 5) { results { runtimeSessionId
    session { id title } matches { documentId text probe { documentId } } } } } }"""


def uuids_in(value: Any) -> set[str]:
    text = json.dumps(value)
    found = set()
    for token in text.replace('"', " ").split():
        try:
            found.add(str(uuid.UUID(token.strip(",:{}[]"))))
        except ValueError:
            continue
    return found


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(shape=world_shape)
async def test_no_answer_names_anything_of_another_account(
    client: httpx.AsyncClient,
    engine: AsyncEngine,
    shape: list[list[list[tuple[int, int, str, str]]]],
) -> None:
    world = World()
    owned: dict[str, set[str]] = {}  # account -> every id and text it owns
    keys: dict[str, str] = {}
    sessions: dict[str, list[str]] = {}
    for a, account_sessions in enumerate(shape):
        account, key = world.account(f"account {a}")
        keys[account], sessions[account], owned[account] = key, [], {account}
        for s, chunks in enumerate(account_sessions):
            sid = world.session(account, f"title {account}")
            sessions[account].append(sid)
            owned[account] |= {sid, f"title {account}"}
            for i, (topic, seed, state, model) in enumerate(chunks):
                # Near-identical vectors across accounts: the same topics and seeds everywhere.
                text = f"text {account} {s} {i}"
                cid = world.chunk(
                    sid,
                    blend(direction(topic), direction(seed), 0.05),
                    index=i,
                    content=text,
                    redaction=state,
                    model=model,
                )
                owned[account] |= {cid, text}
    await world.write(engine)

    for account, key in keys.items():
        foreign = {item for other, items in owned.items() if other != account for item in items}
        foreign_sessions = [s for other, ss in sessions.items() if other != account for s in ss]
        for sid in sessions[account]:
            rest = await client.get(
                f"/api/v1/runtime-sessions/{sid}/similar?limit=20", headers=bearer(key)
            )
            assert rest.status_code == 200
            gql = await graphql(client, key, QUERY, id=sid)
            for answer in (rest.json(), gql):
                assert not (uuids_in(answer) & foreign)
                assert not any(
                    item in json.dumps(answer) for item in foreign if item.startswith("text ")
                )
        missing = await client.get(
            f"/api/v1/runtime-sessions/{uuid.uuid4()}/similar", headers=bearer(key)
        )
        for sid in foreign_sessions:
            theirs = await client.get(
                f"/api/v1/runtime-sessions/{sid}/similar", headers=bearer(key)
            )
            assert (theirs.status_code, theirs.content) == (missing.status_code, missing.content)
            body = await graphql(client, key, QUERY, id=sid)
            assert body == {"data": {"runtimeSession": None}}
