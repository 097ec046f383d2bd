"""DataLoaders: each batch is a fixed number of statements for one account."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncEngine
from strawberry.dataloader import DataLoader

from data.sessions import ActivityRow, ReplayPageKey, SessionRow, replay_pages, sessions_by_id
from resolvers.arguments import SimilarArgs
from resolvers.results import SimilarResult
from resolvers.similar import compare_sessions
from resolvers.tuning import Tuning

SimilarKey = tuple[UUID, SimilarArgs]


def session_loader(engine: AsyncEngine, account_id: UUID) -> DataLoader[UUID, SessionRow | None]:
    async def load(ids: Sequence[UUID]) -> list[SessionRow | None]:
        async with engine.connect() as conn:
            rows = await sessions_by_id(conn, account_id, ids)
        return [rows.get(i) for i in ids]

    return DataLoader(load_fn=load)


def replay_loader(
    engine: AsyncEngine, account_id: UUID
) -> DataLoader[ReplayPageKey, list[ActivityRow]]:
    """Pages of many sessions' replays (a page and one turn more each) in one statement."""

    async def load(keys: Sequence[ReplayPageKey]) -> list[list[ActivityRow]]:
        async with engine.connect() as conn:
            return await replay_pages(conn, account_id, keys)

    return DataLoader(load_fn=load)


def similar_loader(
    engine: AsyncEngine, account_id: UUID, tuning: Tuning
) -> DataLoader[SimilarKey, SimilarResult | None]:
    async def load(keys: Sequence[SimilarKey]) -> list[SimilarResult | None]:
        # Read-only: the transaction (and its SET LOCAL settings) ends with the connection.
        async with engine.connect() as conn:
            return await compare_sessions(conn, account_id, keys, tuning)

    return DataLoader(load_fn=load)
