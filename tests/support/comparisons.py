"""Helpers for the comparison's database tests: worlds, the exact answer by a forced full
scan, GraphQL calls, and counting the statements a request sends."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from data.account_snapshot import Snapshots
from data.comparison import reading
from resolvers.arguments import SimilarArgs
from resolvers.comparison.phases import compare_sessions
from resolvers.comparison.results import SimilarResult
from resolvers.comparison.state import NOT_NARROWED
from resolvers.tuning import Tuning
from tests.support.world import World, blend, direction

EXACT_SQL = """
SELECT c.id, 1 - ((c.embedding::vector(384)) <=> (p.embedding::vector(384))) AS similarity
FROM session_chunks c, session_chunks p
WHERE p.account_id = :account AND p.id = :probe
  AND c.account_id = :account AND c.runtime_session_id <> p.runtime_session_id
  AND c.embedding_model = p.embedding_model
  AND c.redaction_state = 'clear' AND c.embedding_state = 'embedded'
  AND 1 - ((c.embedding::vector(384)) <=> (p.embedding::vector(384))) >= 0.35
ORDER BY (c.embedding::vector(384)) <=> (p.embedding::vector(384)), c.id
LIMIT 25
"""


async def full_scan(engine: AsyncEngine, account: str, probe: uuid.UUID) -> list[uuid.UUID]:
    """The 25 nearest candidates of one probe by a sequential scan: the exact answer."""
    async with engine.begin() as conn:
        await conn.execute(sa.text("SET LOCAL enable_indexscan = off"))
        await conn.execute(sa.text("SET LOCAL enable_bitmapscan = off"))
        rows = await conn.execute(sa.text(EXACT_SQL), {"account": account, "probe": probe})
        return [row[0] for row in rows]


async def compare(
    engine: AsyncEngine,
    account: str,
    session: str,
    tuning: Tuning | None = None,
    snapshots: Snapshots | None = None,
    **args: Any,
) -> SimilarResult:
    async with reading(engine) as conn:  # as the route's DataLoader opens it
        [result] = await compare_sessions(
            conn,
            uuid.UUID(account),
            [(uuid.UUID(session), SimilarArgs(**args), NOT_NARROWED)],
            tuning or Tuning(),
            snapshots,
        )
    assert result is not None
    return result


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


async def graphql(
    client: httpx.AsyncClient, key: str, query: str, **variables: Any
) -> dict[str, Any]:
    response = await client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=bearer(key)
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def topic_world(engine: AsyncEngine, sessions: int = 12) -> tuple[str, str, list[str]]:
    world = World()
    account, key = world.account()
    ids = []
    for s in range(sessions):
        sid = world.session(account, f"session {s}", day=s)
        ids.append(sid)
        for i in range(3 + s % 4):
            world.chunk(
                sid, blend(direction(1), direction(100 * s + i), 0.15 + 0.02 * (s % 10)), index=i
            )
    # A withheld passage that still carries its old vector: never a probe nor a match.
    world.chunk(ids[-1], blend(direction(1), direction(99), 0.1), index=9, redaction="withheld")
    await world.write(engine)
    return account, key, ids


@contextmanager
def _listening(engine: AsyncEngine, identifier: str, fn: Callable[..., None]) -> Iterator[None]:
    event.listen(engine.sync_engine, identifier, fn)
    try:
        yield
    finally:
        event.remove(engine.sync_engine, identifier, fn)


@contextmanager
def transaction_queries(engine: AsyncEngine) -> Iterator[list[str]]:
    """The BEGIN, COMMIT and ROLLBACK asyncpg sends on the engine's connections (its query
    logger sees them; the statements, SQLAlchemy's SAVEPOINT among them, are prepared, and
    counted_statements sees those)."""
    sent: list[str] = []
    attached: list[Any] = []

    def log(query: Any) -> None:
        command = query.query.split(maxsplit=1)[0].rstrip(";").upper()
        if command in ("BEGIN", "COMMIT", "ROLLBACK"):
            sent.append(command)

    def attach(dbapi_connection: Any, *_: Any) -> None:
        driver = dbapi_connection.driver_connection
        if driver not in attached:
            driver.add_query_logger(log)
            attached.append(driver)

    try:
        with _listening(engine, "checkout", attach):
            yield sent
    finally:
        for driver in attached:
            driver.remove_query_logger(log)


@contextmanager
def counted_statements(engine: AsyncEngine) -> Iterator[list[str]]:
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    with _listening(engine, "before_cursor_execute", record):
        yield statements
