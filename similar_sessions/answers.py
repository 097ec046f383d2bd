"""One answer model for every edge: a resolver's result object as JSON, by the fields its
GraphQL type declares (schema/mapping.py), read by their snake_case names. REST
(similar_sessions/rest.py) and MCP (similar_sessions/mcp_tools.py) both answer through it,
each leaving out what only GraphQL has."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any
from uuid import UUID

from schema.mapping import declared

# What only GraphQL has: a neighbour's session object and console link, Relay-style paging
# (REST pages with next_cursor, present only when more results exist).
GRAPHQL_ONLY = frozenset({"session", "console_link", "end_cursor", "has_next_page"})
# REST's body is pinned by the contract (and recorded answers): a neighbour's status came
# with the MCP edge (issue 57), in GraphQL and MCP only.
NOT_IN_REST = GRAPHQL_ONLY | {"session_status"}


def payload(result: Any, shape: type, next_cursor: str | None) -> dict[str, Any]:
    """A result as the REST body, by its GraphQL type `shape`: next_cursor only when more
    results exist."""
    body: dict[str, Any] = to_json(result, shape)
    if next_cursor is not None:
        body["next_cursor"] = next_cursor
    return body


_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_json(value: Any, shape: type | None = None, left_out: frozenset[str] = NOT_IN_REST) -> Any:
    """A result as JSON: an object by the fields its GraphQL type (`shape`) declares, read by
    their snake_case names; a sequence item by item; a scalar as JSON writes it."""
    if type(value) in _PLAIN:  # most of a body: tested first
        return value
    if isinstance(value, list | tuple) and not (shape and hasattr(value, "_fields")):
        return [to_json(v, shape, left_out) for v in value]
    if shape is not None:
        return {
            n: to_json(getattr(value, n), inner, left_out)
            for n, inner in declared(shape)
            if n not in left_out
        }
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return value
