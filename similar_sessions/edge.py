"""Where domain errors become HTTP answers, and where the per-request context is built."""

from __future__ import annotations

from typing import Any

import structlog
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from data.engine import is_unavailable
from resolvers.arguments import BadArgument
from resolvers.context import Context
from similar_sessions.auth import Forbidden, Unauthorized, authenticate

log = structlog.get_logger(__name__)
RETRY_AFTER_S = "2"


def error(status: int, code: str, detail: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail, **extra}, status_code=status)


def not_found() -> JSONResponse:
    """One body for a missing session and another account's: they cannot be told apart."""
    return error(404, "not_found", "no runtime session with this id")


def context_for(connection: HTTPConnection) -> Context:
    state = connection.app.state
    return Context(engine=state.engine, principal=connection.state.principal, tuning=state.tuning)


async def on_bad_argument(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, BadArgument)
    return error(422, "invalid_parameter", str(exc), parameter=exc.argument)


async def on_unavailable(_: Request, exc: Exception) -> Response:
    log.warning("database_unavailable", error=type(exc).__name__)
    response = error(503, "unavailable", "the database is unavailable; retry shortly")
    response.headers["Retry-After"] = RETRY_AFTER_S
    return response


async def on_database_error(request: Request, exc: Exception) -> Response:
    """503 for a database that is down or too slow right now; anything else stays a 500."""
    if is_unavailable(exc):
        return await on_unavailable(request, exc)
    raise exc


# OSError covers ConnectionError; DBAPIError covers OperationalError (see is_unavailable).
EXCEPTION_HANDLERS = {
    BadArgument: on_bad_argument,
    PoolTimeout: on_unavailable,
    OSError: on_unavailable,
    DBAPIError: on_database_error,
}


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
            principal = await authenticate(connection.app.state.engine, connection)
        except Unauthorized:
            response: Response = error(
                401, "unauthorized", "a valid API key is required: Authorization: Bearer <key>"
            )
            response.headers["WWW-Authenticate"] = "Bearer"
        except Forbidden:
            response = error(403, "forbidden", "this API key lacks the view_runtime_sessions scope")
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            response = await on_unavailable(Request(scope), exc)
        else:
            scope.setdefault("state", {})["principal"] = principal
            await self.app(scope, receive, send)
            return
        await response(scope, receive, send)


def is_graphiql_page(connection: HTTPConnection) -> bool:
    """A browser asking /graphql for the GraphiQL page, when GraphiQL is on."""
    return (
        connection.scope["method"] == "GET"
        and connection.url.path == "/graphql"
        and "text/html" in connection.headers.get("accept", "")
        and bool(connection.app.state.settings.graphiql)
    )
