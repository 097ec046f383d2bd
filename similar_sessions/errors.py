"""Where domain errors become HTTP answers: the app's exception handlers."""

from __future__ import annotations

from typing import Any

import structlog
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from data.engine import is_unavailable, unavailable_cause
from observability.metrics import UNAVAILABLE
from resolvers.errors import BadArgument

log = structlog.get_logger(__name__)
RETRY_AFTER_S = "2"


def error(status: int, code: str, detail: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail, **extra}, status_code=status)


def not_found() -> JSONResponse:
    """One body for a missing session and another account's: they cannot be told apart."""
    return error(404, "not_found", "no runtime session with this id")


def unavailable(exc: BaseException) -> Response:
    """503 with Retry-After: the database cannot answer right now."""
    log.warning("database_unavailable", error=type(exc).__name__)
    UNAVAILABLE.labels("http", unavailable_cause(exc)).inc()
    response = error(503, "unavailable", "the database is unavailable; retry shortly")
    response.headers["Retry-After"] = RETRY_AFTER_S
    return response


async def on_bad_argument(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, BadArgument)
    return error(422, "invalid_parameter", str(exc), parameter=exc.argument)


async def on_unavailable(_: Request, exc: Exception) -> Response:
    return unavailable(exc)


async def on_database_error(_: Request, exc: Exception) -> Response:
    """503 for a database that is down or too slow right now; anything else stays a 500."""
    if is_unavailable(exc):
        return unavailable(exc)
    raise exc


# OSError covers ConnectionError; DBAPIError covers OperationalError (see is_unavailable).
EXCEPTION_HANDLERS = {
    BadArgument: on_bad_argument,
    PoolTimeout: on_unavailable,
    OSError: on_unavailable,
    DBAPIError: on_database_error,
}
