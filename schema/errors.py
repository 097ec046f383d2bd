"""Where expected errors become GraphQL errors with an `extensions.code`; anything else is
masked. The one place resolvers' errors are mapped for GraphQL."""

from __future__ import annotations

from typing import Any

from graphql import GraphQLError
from strawberry.extensions import MaskErrors

from data.engine import is_unavailable, unavailable_cause
from observability.metrics import UNAVAILABLE
from resolvers.errors import BadArgument, LimitExceeded


def expected(original: BaseException) -> tuple[str, dict[str, Any]] | None:
    """The message and extensions of an expected error; None for any other."""
    if isinstance(original, BadArgument):
        return str(original), {"code": "BAD_USER_INPUT", "argument": original.argument}
    if isinstance(original, LimitExceeded):
        return str(original), {"code": "LIMIT_EXCEEDED", "limit": original.limit}
    if is_unavailable(original):
        return "the database is unavailable; retry shortly", {"code": "UNAVAILABLE"}
    return None


def is_unexpected(error: GraphQLError) -> bool:
    """An error a resolver raised that no mapping covers: masked, and logged by type."""
    original = error.original_error
    return (
        original is not None
        and not isinstance(original, GraphQLError)
        and expected(original) is None
    )


class MapErrors(MaskErrors):
    """Expected errors keep their message with a code; unexpected ones are masked."""

    def __init__(self) -> None:
        super().__init__(should_mask_error=_raised_by_a_resolver)

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        assert error.original_error is not None
        mapped = expected(error.original_error)
        if mapped is None:
            return super().anonymise_error(error)
        message, extensions = mapped
        if extensions["code"] == "UNAVAILABLE":
            UNAVAILABLE.labels("graphql", unavailable_cause(error.original_error)).inc()
        return GraphQLError(message, nodes=error.nodes, path=error.path, extensions=extensions)


def _raised_by_a_resolver(error: GraphQLError) -> bool:
    return error.original_error is not None and not isinstance(error.original_error, GraphQLError)
