"""API keys at the edge: `Authorization: Bearer <key>` turned into a Principal for every API
request, or answered 401/403 (503 when the database cannot say, 429 past the key's rate)."""

from __future__ import annotations

from limits import RateLimitItem
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from data.accounts import Principal, hash_key, principal_for_key
from data.errors import Unavailable
from similar_sessions.errors import error, unavailable
from similar_sessions.graphql_app import is_graphiql_page
from similar_sessions.rate_limit import describe

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
    principal = await principal_for_key(engine, key)
    if principal is None:
        raise Unauthorized
    if REQUIRED_SCOPE not in principal.scopes:
        raise Forbidden
    return principal


class AuthMiddleware:
    """Authenticates every API request; GraphiQL's page itself needs no key."""

    PROTECTED = ("/graphql", "/api/")

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.PROTECTED):
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        if is_graphiql_page(connection):
            await self.app(scope, receive, send)
            return
        try:
            principal = await authenticate(connection.app.state.services.engine, connection)
        except Unauthorized:
            response: Response = error(
                401, "unauthorized", "a valid API key is required: Authorization: Bearer <key>"
            )
            response.headers["WWW-Authenticate"] = "Bearer"
        except Forbidden:
            response = error(403, "forbidden", "this API key lacks the view_runtime_sessions scope")
        except Unavailable as exc:
            response = unavailable(exc)
        else:
            key_id = hash_key(bearer_key(connection) or "").hex()  # counted by hash, not the key
            refused = await connection.app.state.rate_limits.admit(key_id)
            if refused is None:
                scope.setdefault("state", {})["principal"] = principal
                await self.app(scope, receive, send)
                return
            response = rate_limited(*refused)
        await response(scope, receive, send)


def rate_limited(rate: RateLimitItem, retry_after_s: int) -> Response:
    """429 naming the rate the key went past, with Retry-After."""
    limit = describe(rate)
    response = error(
        429,
        "rate_limited",
        f"this API key made more than {limit} requests (per process); retry in {retry_after_s} s",
        limit=limit,
    )
    response.headers["Retry-After"] = str(retry_after_s)
    return response
