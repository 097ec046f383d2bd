"""A world of sessions for the indexer's tests, a test embedder under an identity of its
own, and the queries the tests read the tables with."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from data.model_identity import ModelIdentity
from indexer.chunking import ChunkPolicy
from indexer.embedders import Embedder
from indexer.lexical import LexicalEmbedder
from indexer.passes import IndexerConfig
from tests.support.world import T0, World

WORDS = ModelIdentity.parse("local:words-384@384")


class Words(LexicalEmbedder):
    """The lexical embedder without a fit (every feature weighs 1) under an identity of its
    own: these tests watch the worker's mechanics, tests/test_lexical_fit.py the fit."""

    def __init__(self) -> None:
        super().__init__()
        self.identity = WORDS


WORDS_ONLY: dict[str, Callable[[], Embedder]] = {str(WORDS): Words}
CONFIG = IndexerConfig(
    ChunkPolicy(window_tokens=40), repeat_min_sessions=5, batch_size=4, progress=False
)


def add_activity(
    world: World, session_id: str, contents: Sequence[tuple[str, str]], kind: str = "message"
) -> None:
    for ordinal, (role, content) in enumerate(contents):
        world.lines.append(
            {
                "type": "activity",
                "id": str(uuid.uuid4()),
                "runtime_session_id": session_id,
                "ordinal": ordinal,
                "occurred_at": (T0 + timedelta(seconds=ordinal)).isoformat(),
                "role": role,
                "kind": kind,
                "content": content,
                "api_usage_id": None,
            }
        )


def talk(topic: str, turns: int = 6) -> list[tuple[str, str]]:
    """Turns of 20 distinct words each about a topic: a session of several 40-token windows."""
    return [
        ("user" if i % 2 else "assistant", " ".join(f"{topic}{i}x{j}" for j in range(20)))
        for i in range(turns)
    ]


async def world_with(
    engine: AsyncEngine,
    sessions: int = 2,
    *,
    scope: str = "full",
    cap: float | None = 5.0,
    model: str = str(WORDS),
) -> tuple[uuid.UUID, list[uuid.UUID]]:
    world = World()
    account, _ = world.account(scope=scope, daily_cap_usd=cap, model=model)
    ids = []
    for n in range(sessions):
        sid = world.session(account, f"session {n}", day=n)
        add_activity(world, sid, [("system", "You are a helpful agent."), *talk(f"s{n}t")])
        ids.append(uuid.UUID(sid))
    await world.write(engine)
    return uuid.UUID(account), ids


async def rows(engine: AsyncEngine, query: str, **params: Any) -> list[Any]:
    async with engine.connect() as conn:
        return list((await conn.execute(sa.text(query), params)).all())


async def states(engine: AsyncEngine) -> dict[str, int]:
    found = await rows(engine, "SELECT embedding_state, count(*) FROM session_chunks GROUP BY 1")
    return {state: n for state, n in found}


async def usage(engine: AsyncEngine) -> list[Any]:
    return await rows(
        engine, "SELECT units, cost_usd, provider, model FROM api_usage WHERE kind = 'embedding'"
    )
