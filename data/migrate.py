"""Bring the schema up to date with Alembic, on the product's own engine."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from data.server import DatabaseUnavailable

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
MIN_VECTOR_VERSION = (0, 8)
_LOCK_KEY = 7_412_309_114  # serialises concurrent `migrate` / `serve` start-ups


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


async def migrate(engine: AsyncEngine) -> None:
    """Create the vector extension (>= 0.8) and apply every pending migration."""
    async with engine.begin() as conn:
        await conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
        available = (
            await conn.execute(
                text("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
            )
        ).scalar()
        if available is None:
            raise DatabaseUnavailable(
                "the pgvector extension is not installed on this PostgreSQL server; "
                "install pgvector 0.8 or newer, or unset DATABASE_URL to use the embedded server"
            )
        await conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
        installed = (
            await conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
        ).scalar_one()
        check_vector_version(str(installed))
        await _renumber(conn)
        await conn.run_sync(lambda sync: command.upgrade(alembic_config(sync), "head"))


# Revisions renamed after they shipped: a database stamped with the old name is re-stamped.
RENAMED_REVISIONS = {"0002p": "0003"}


async def _renumber(conn: AsyncConnection) -> None:
    stamped = await conn.execute(text("SELECT to_regclass('alembic_version') IS NOT NULL"))
    if not stamped.scalar_one():
        return
    for old, new in RENAMED_REVISIONS.items():
        await conn.execute(
            text("UPDATE alembic_version SET version_num = :new WHERE version_num = :old"),
            {"old": old, "new": new},
        )


def check_vector_version(version: str) -> None:
    """Refuse a pgvector older than 0.8: iterative index scans are needed."""
    try:
        parsed = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        raise DatabaseUnavailable(f"cannot read the pgvector version {version!r}") from None
    if parsed < MIN_VECTOR_VERSION:
        raise DatabaseUnavailable(
            f"pgvector {version} is installed, 0.8 or newer is required "
            "(ALTER EXTENSION vector UPDATE after installing a newer pgvector)"
        )
