"""API keys at the edge: `Authorization: Bearer <key>` turned into a Principal for every API
request, or answered 401/403 (503 when the database cannot say); the authenticated request is
then admitted in its turn (similar_sessions/admission.py)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from data.accounts import Principal, principal_for_key
from data.errors import Unavailable
from similar_sessions.errors import error, unavailable
from similar_sessions.graphql_app import is_graphiql_page

REQUIRED_SCOPE = "view_runtime_sessions"
INGEST_SCOPE = "ingest_runtime_sessions"  # POST /v1/traces; neither scope implies the other
INGEST_PATH = "/v1/traces"
MCP_PATH = "/mcp"  # authenticated here; each tool call is admitted (similar_sessions/mcp_admission)


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


def scope_for(path: str) -> str:
    """The scope a route needs: ingest for the OTLP receiver, view for everything else."""
    return INGEST_SCOPE if path == INGEST_PATH else REQUIRED_SCOPE


async def authenticate(engine: AsyncEngine, connection: HTTPConnection) -> Principal:
    """The caller behind the request's key, with the scope its route needs."""
    key = bearer_key(connection)
    if key is None or len(key) > 512:
        raise Unauthorized
    principal = await principal_for_key(engine, key)
    if principal is None:
        raise Unauthorized
    if scope_for(connection.scope["path"]) not in principal.scopes:
        raise Forbidden
    return principal


class AuthMiddleware:
    """Authenticates every API request; GraphiQL's page itself needs no key."""

    PROTECTED = ("/graphql", "/api/", INGEST_PATH, MCP_PATH)

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
            needed = scope_for(scope["path"])
            response = error(403, "forbidden", f"this API key lacks the {needed} scope")
        except Unavailable as exc:
            response = unavailable(exc)
        else:
            scope.setdefault("state", {})["principal"] = principal
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)
