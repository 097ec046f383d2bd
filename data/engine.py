"""The async engine: asyncpg under SQLAlchemy, with pgvector types registered."""

from __future__ import annotations

from typing import Any

from pgvector.asyncpg import register_vector
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine


def make_engine(
    url: str, *, pool_size: int = 5, pool_timeout_s: int = 5, statement_timeout_ms: int = 5000
) -> AsyncEngine:
    """An engine whose connections know the vector type and bound every statement's time."""
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=pool_timeout_s,
        pool_pre_ping=True,
        connect_args={
            "server_settings": {
                "statement_timeout": str(statement_timeout_ms),
                "application_name": "similar-sessions",
            },
        },
    )

    @event.listens_for(engine.sync_engine, "connect")
    def _register(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.run_async(_register_vector)

    return engine


async def _register_vector(connection: Any) -> None:
    try:
        await register_vector(connection)
    except ValueError:
        # The extension does not exist yet (a database before its first migration).
        return
