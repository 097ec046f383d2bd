"""Expected errors, in the schema's terms: BAD_USER_INPUT naming the argument."""

from __future__ import annotations

from graphql import GraphQLError

from resolvers.arguments import BadArgument
from resolvers.context import LimitExceeded


def bad_user_input(exc: BadArgument) -> GraphQLError:
    return GraphQLError(str(exc), extensions={"code": "BAD_USER_INPUT", "argument": exc.argument})


def limit_exceeded(exc: LimitExceeded) -> GraphQLError:
    return GraphQLError(str(exc), extensions={"code": "LIMIT_EXCEEDED", "limit": exc.limit})
