"""A stored zero vector (cosine distance NaN) is never a hit, and no answer carries a
non-finite number: it once made every session of its account answer 500."""

from __future__ import annotations

import math
import uuid

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from resolvers.tuning import Tuning
from tests.support.comparisons import bearer, compare, graphql
from tests.support.world import World, blend, direction


async def zero_vector_world(engine: AsyncEngine) -> tuple[str, str, list[str], str]:
    world = World()
    account, key = world.account()
    english = [world.session(account, f"migration {n}") for n in range(2)]
    for n, sid in enumerate(english):
        world.chunk(sid, blend(direction(1), direction(10 + n), 0.2))
    other = world.session(account, "数据库迁移失败，锁超时")
    zero = world.chunk(other, blend(direction(1), direction(20), 0.2))
    await world.write(engine)
    async with engine.begin() as conn:  # what an embedder that read nothing once stored
        await conn.execute(
            sa.text("UPDATE session_chunks SET embedding = CAST(:z AS vector) WHERE id = :id"),
            {"z": "[" + ",".join(["0"] * 384) + "]", "id": uuid.UUID(zero)},
        )
    return account, key, english, other


async def test_a_zero_vector_is_never_a_hit_on_any_path(engine: AsyncEngine) -> None:
    account, _, english, other = await zero_vector_world(engine)
    for tuning in (Tuning(), Tuning(exact_scan_max_chunks=0)):
        result = await compare(engine, account, english[0], tuning)
        assert [str(n.session.id) for n in result.results] == [english[1]]
        assert all(math.isfinite(n.score) and math.isfinite(n.similarity) for n in result.results)
        alone = await compare(engine, account, other, tuning)
        assert alone.results == ()


async def test_rest_and_graphql_answer_every_session_of_the_account(
    client: httpx.AsyncClient, engine: AsyncEngine
) -> None:
    _, key, english, other = await zero_vector_world(engine)
    for sid in [*english, other]:
        rest = await client.get(f"/api/v1/runtime-sessions/{sid}/similar", headers=bearer(key))
        assert rest.status_code == 200, rest.text
        body = await graphql(
            client,
            key,
            "query($id: UUID!) { runtimeSession(id: $id) { similarSessions {"
            " results { score similarity } } } }",
            id=sid,
        )
        assert "errors" not in body
