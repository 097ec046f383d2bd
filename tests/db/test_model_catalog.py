"""The comparison's statement has a branch per model the account uses, read from a cached
catalog: a model that appears after the catalog was read is still compared."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_snapshot import Snapshots
from resolvers.arguments import SimilarArgs
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.state import NOT_NARROWED
from resolvers.tuning import Tuning
from tests.support.world import MODEL, World, blend, direction

NEW_MODEL = "local:another-384@384"


async def test_a_model_that_appears_later_is_compared_after_the_catalog_is_read_again(
    engine: AsyncEngine,
) -> None:
    world = World()
    account, _ = world.account()
    first, second = world.session(account), world.session(account)
    world.chunk(first, blend(direction(1), direction(2), 0.2))
    world.chunk(second, blend(direction(1), direction(3), 0.2))
    await world.write(engine)
    catalog = Snapshots(ttl_s=3600)
    bound = Tuning().exact_scan_max_chunks
    async with engine.connect() as conn:
        known = await catalog.of(conn, uuid.UUID(account), bound)
        assert [str(m) for m in known.models] == [MODEL]
    later, other = world.session(account), world.session(account)
    world.chunk(later, blend(direction(5), direction(6), 0.2), model=NEW_MODEL)
    world.chunk(other, blend(direction(5), direction(7), 0.2), model=NEW_MODEL)
    await world.write(engine)
    async with engine.connect() as conn:
        [result] = await compare_sessions(
            conn,
            uuid.UUID(account),
            [(uuid.UUID(later), SimilarArgs(), NOT_NARROWED)],
            Tuning(),
            catalog,
        )
        assert result is not None and result.model_identity == NEW_MODEL
        assert [str(n.session.id) for n in result.results] == [other]
        models = (await catalog.of(conn, uuid.UUID(account), bound)).models
    assert sorted(str(m) for m in models) == sorted([MODEL, NEW_MODEL])
