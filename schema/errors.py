"""The one table of expected errors (`DOMAIN_ERRORS`): each domain error with its HTTP status,
its REST error code and its GraphQL `extensions.code`, read by both edges (the GraphQL error
mapping here, the app's exception handlers in similar_sessions/errors.py). Anything else a
resolver raises is masked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLError
from strawberry.extensions import MaskErrors

from data.errors import Unavailable
from observability.metrics import REFUSED, UNAVAILABLE
from resolvers.budgets import Refusal
from resolvers.errors import BadArgument, LimitExceeded, MissingScope


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """How both edges answer one domain error: `details` gives what it names (the argument,
    the limit), as GraphQL extensions; REST renames `argument` to `parameter`."""

    status: int
    rest_code: str
    graphql_code: str
    details: Callable[[Any], dict[str, Any]] = lambda _: {}


DOMAIN_ERRORS: dict[type[Exception], ErrorAnswer] = {
    BadArgument: ErrorAnswer(
        422, "invalid_parameter", "BAD_USER_INPUT", lambda e: {"argument": e.argument}
    ),
    LimitExceeded: ErrorAnswer(
        400, "limit_exceeded", "LIMIT_EXCEEDED", lambda e: {"limit": e.limit}
    ),
    Unavailable: ErrorAnswer(503, "unavailable", "UNAVAILABLE"),
    MissingScope: ErrorAnswer(403, "forbidden", "FORBIDDEN", lambda e: {"scope": e.scope}),
}


def answer_of(error: BaseException) -> ErrorAnswer | None:
    """The table's entry for an error (by its class or one it derives from), if any."""
    for kind, answer in DOMAIN_ERRORS.items():
        if isinstance(error, kind):
            return answer
    return None


def is_unexpected(error: GraphQLError) -> bool:
    """An error a resolver raised that no mapping covers: masked, and logged by type."""
    original = error.original_error
    return (
        original is not None
        and not isinstance(original, GraphQLError)
        and answer_of(original) is None
    )


class MapErrors(MaskErrors):
    """Expected errors keep their message with a code; unexpected ones are masked."""

    def __init__(self) -> None:
        super().__init__(should_mask_error=_raised_by_a_resolver)

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        original = error.original_error
        assert original is not None
        answer = answer_of(original)
        if answer is None:
            return super().anonymise_error(error)
        if isinstance(original, Unavailable):
            UNAVAILABLE.labels("graphql", original.cause).inc()
        extensions = {"code": answer.graphql_code, **answer.details(original)}
        return GraphQLError(
            str(original), nodes=error.nodes, path=error.path, extensions=extensions
        )


def _raised_by_a_resolver(error: GraphQLError) -> bool:
    return error.original_error is not None and not isinstance(error.original_error, GraphQLError)


def limit_error(refusal: Refusal) -> GraphQLError:
    """A request refused before it runs, as LIMIT_EXCEEDED (with the limit, when the refusal
    names one), counted by its bound."""
    REFUSED.labels(refusal.bound).inc()
    extensions: dict[str, Any] = {"code": "LIMIT_EXCEEDED"}
    if refusal.limit is not None:
        extensions["limit"] = refusal.limit
    return GraphQLError(refusal.message, extensions=extensions)
