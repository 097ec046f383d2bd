"""The REST routes: GET /api/v1/runtime-sessions/{id}/similar (the compatibility route),
GET /api/v1/runtime-sessions/search and GET /api/v1/runtime-sessions/failure-modes.

Each runs the same resolver as its GraphQL field and serialises the same result object: the
fields its GraphQL type declares, read from the result by their snake_case names
(schema/mapping.py), less the fields only GraphQL has."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from starlette.requests import Request
from starlette.responses import JSONResponse

from resolvers.arguments import (
    FAILURE_ARGUMENTS,
    RANKED_ARGUMENTS,
    Argument,
    FailureArgs,
    SimilarArgs,
)
from resolvers.comparison.search import checked_text
from resolvers.cursors import Cursors
from resolvers.errors import BadArgument
from resolvers.failure_members import first_pages
from resolvers.failure_modes import failure_modes
from resolvers.sessions import search_list, search_sessions, similar_list, similar_sessions
from schema.failure_modes import FailureMember, FailureModes
from schema.search import SessionSearch
from schema.sessions import SimilarSessions
from similar_sessions.answers import payload, to_json
from similar_sessions.errors import not_found
from similar_sessions.request_context import request_context

# Each field named by its REST spelling.
_REST_NAMES = {a.field: a.rest_name for a in RANKED_ARGUMENTS}
_FAILURE_NAMES = {a.field: a.rest_name for a in FAILURE_ARGUMENTS}


def _int(raw: str, name: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise BadArgument(name, f"must be a whole number, got {raw[:40]!r}") from None


def _bool(raw: str, name: str) -> bool:
    if raw.lower() in {"true", "1"}:
        return True
    if raw.lower() in {"false", "0"}:
        return False
    raise BadArgument(name, f"must be true or false, got {raw[:40]!r}")


def _uuid(raw: str, name: str) -> UUID:
    try:
        return UUID(raw)
    except ValueError:
        raise BadArgument(name, "is not a UUID") from None


def _value(request: Request, argument: Argument) -> Any:
    """One argument from the query string, read as its declared type; absent, its default."""
    name = argument.rest_name
    if argument.annotation == list[str] | None:
        return request.query_params.getlist(name) or argument.default
    raw = request.query_params.get(name)
    if raw is None:
        return argument.default
    if argument.annotation in (int, int | None):
        return _int(raw, name)
    if argument.annotation is bool:
        return _bool(raw, name)
    if argument.annotation == UUID | None:
        return _uuid(raw, name)
    return raw


def _values(
    request: Request, arguments: tuple[Argument, ...], also: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The declared arguments from the query string (by field); `also` the route's others."""
    known = {a.rest_name for a in arguments} | also
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise BadArgument(unknown[0][:40], "is not a parameter of this route")
    return {a.field: _value(request, a) for a in arguments}


def parse_args(
    request: Request,
    ranked: tuple[str, ...],
    cursors: Cursors,
    also: frozenset[str] = frozenset(),
) -> SimilarArgs:
    """The arguments of a ranked list (`ranked`: what it ranks, which its cursor is bound to)
    from the query string, and `also` the route's other parameters."""
    values = _values(request, RANKED_ARGUMENTS, also)
    return SimilarArgs.checked(values, names=_REST_NAMES, ranked=ranked, cursors=cursors)


async def similar_route(request: Request) -> JSONResponse:
    raw_id = request.path_params["runtime_session_id"]
    try:
        session_id = UUID(raw_id)
    except ValueError:
        raise BadArgument("runtime_session_id", "is not a UUID") from None
    context = await request_context(request)
    args = parse_args(request, similar_list(session_id), context.cursors)
    result = await similar_sessions(context, session_id, args, terms=True)
    if result is None:
        return not_found()
    return JSONResponse(payload(result, SimilarSessions, result.end_cursor))


async def search_route(request: Request) -> JSONResponse:
    """GET /api/v1/runtime-sessions/search?q=: sessions with passages like the text."""
    text = checked_text(request.query_params.get("q", ""), "q")
    context = await request_context(request)
    ranked = search_list(context.principal.account_id, text)
    args = parse_args(request, ranked, context.cursors, also=frozenset({"q"}))
    result = await search_sessions(context, text, args, terms=True)
    return JSONResponse(payload(result, SessionSearch, result.end_cursor))


async def failure_modes_route(request: Request) -> JSONResponse:
    """GET /api/v1/runtime-sessions/failure-modes?window_days=: the window's failure groups,
    each with its first page of members (GraphQL pages the rest)."""
    context = await request_context(request)
    args = FailureArgs.checked(
        _values(request, FAILURE_ARGUMENTS),
        names=_FAILURE_NAMES,
        account_id=context.principal.account_id,
        cursors=context.cursors,
    )
    result = await failure_modes(context, args, terms=True)
    body = payload(result, FailureModes, result.end_cursor)
    pages = await first_pages(context, result.groups, terms=True)
    for group, page in zip(body["groups"], pages, strict=True):
        group["members"] = to_json(page.nodes, FailureMember)
        group["more_members"] = page.has_next_page
    return JSONResponse(body)
