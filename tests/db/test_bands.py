"""Bands per model: a model with a calibration names its bands by its own cut points, and
says which it used; any other model keeps the contract's 0.70 / 0.50."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from indexer.lexical import UNFITTED
from resolvers.rules.calibration import CONTRACT_CUTS, cut_points
from tests.support.comparisons import bearer, graphql
from tests.support.world import MODEL, World, blend, direction


async def pair(engine: AsyncEngine, model: str) -> tuple[str, str]:
    """A viewed session and a neighbour at similarity about 0.83: close by the contract,
    only related by the lexical model's calibration (close from 0.89)."""
    world = World()
    _, key = world.account(model=model)
    account = world.lines[-1]["id"]
    viewed, other = world.session(account), world.session(account)
    world.chunk(viewed, blend(direction(1), direction(1), 0.0), model=model)
    world.chunk(other, blend(direction(1), direction(2), 0.4), model=model)
    await world.write(engine)
    return viewed, key


@pytest.mark.parametrize(
    ("model", "cuts", "word"),
    [(MODEL, CONTRACT_CUTS, "close"), (str(UNFITTED), cut_points(str(UNFITTED)), "related")],
)
async def test_the_bands_follow_the_models_cut_points_and_say_which(
    client: httpx.AsyncClient, engine: AsyncEngine, model: str, cuts: tuple[float, float], word: str
) -> None:
    viewed, key = await pair(engine, model)
    body = (
        await client.get(f"/api/v1/runtime-sessions/{viewed}/similar", headers=bearer(key))
    ).json()
    assert body["bands"] == {"close": cuts[0], "related": cuts[1]}
    [neighbour] = body["results"]
    assert 0.70 <= neighbour["similarity"] < 0.89
    assert neighbour["band"] == word and neighbour["matches"][0]["band"] == word
    gql = await graphql(
        client,
        key,
        "query($id: UUID!) { runtimeSession(id: $id) { similarSessions {"
        " bands { close related } results { band } } } }",
        id=viewed,
    )
    similar = gql["data"]["runtimeSession"]["similarSessions"]
    assert similar["bands"] == {"close": cuts[0], "related": cuts[1]}
    assert similar["results"][0]["band"] == word.upper()
