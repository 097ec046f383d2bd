"""API keys at the edge: `Authorization: Bearer <key>`, turned into a Principal."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import HTTPConnection

from data.accounts import Principal, principal_for_key

REQUIRED_SCOPE = "view_runtime_sessions"


class Unauthorized(Exception):
    """No key, or a key that is unknown or revoked (answered 401)."""


class Forbidden(Exception):
    """A valid key without the scope the route needs (answered 403)."""


def bearer_key(connection: HTTPConnection) -> str | None:
    header = connection.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None
    return key.strip()


async def authenticate(engine: AsyncEngine, connection: HTTPConnection) -> Principal:
    """The caller behind the request's key, with the scope to view sessions."""
    key = bearer_key(connection)
    if key is None or len(key) > 512:
        raise Unauthorized
    async with engine.connect() as conn:
        principal = await principal_for_key(conn, key)
    if principal is None:
        raise Unauthorized
    if REQUIRED_SCOPE not in principal.scopes:
        raise Forbidden
    return principal
