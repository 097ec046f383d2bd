"""Where domain errors become HTTP answers: the app's exception handlers."""

from __future__ import annotations

from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from data.errors import Unavailable
from observability.metrics import UNAVAILABLE
from schema.errors import DOMAIN_ERRORS, answer_of

log = structlog.get_logger(__name__)
RETRY_AFTER_S = "2"


def error(status: int, code: str, detail: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail, **extra}, status_code=status)


def not_found() -> JSONResponse:
    """One body for a missing session and another account's: they cannot be told apart."""
    return error(404, "not_found", "no runtime session with this id")


def unavailable(exc: Unavailable) -> Response:
    """503 with Retry-After: the database cannot answer right now."""
    log.warning("database_unavailable", cause=exc.cause)
    UNAVAILABLE.labels("http", exc.cause).inc()
    response = error(503, "unavailable", str(exc))
    response.headers["Retry-After"] = RETRY_AFTER_S
    return response


async def on_domain_error(_: Request, exc: Exception) -> Response:
    """A domain error answered as the table says (schema/errors.py)."""
    if isinstance(exc, Unavailable):
        return unavailable(exc)
    answer = answer_of(exc)
    assert answer is not None, "registered for the table's errors only"
    details = {"parameter" if k == "argument" else k: v for k, v in answer.details(exc).items()}
    return error(answer.status, answer.rest_code, str(exc), **details)


EXCEPTION_HANDLERS = {kind: on_domain_error for kind in DOMAIN_ERRORS}
