"""The benchmarks' own databases on the server the CLI uses: their URLs, and a database made
fresh or dropped through the server's `postgres` database."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import asyncpg


def with_database(url: str, database: str) -> str:
    """The same server's URL, naming another database."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, ""))


def libpq(url: str) -> str:
    """The SQLAlchemy URL as asyncpg and libpq take it."""
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def administer(server_url: str, *statements: str) -> None:
    """Run the statements, one after another, on the server's `postgres` database."""
    conn = await asyncpg.connect(libpq(with_database(server_url, "postgres")))
    try:
        for sql in statements:
            await conn.execute(sql)
    finally:
        await conn.close()


async def recreate(server_url: str, name: str) -> str:
    """A fresh, empty database `name` (dropped first if it exists); its URL."""
    await administer(
        server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"'
    )
    return with_database(server_url, name)


async def drop(server_url: str, name: str) -> None:
    await administer(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
