"""The query limits' refusals, named: graphql-core and strawberry word them their own way and
give them no code; each becomes LIMIT_EXCEEDED, naming the limit and the constant that holds
it, as every other refusal of this API does (similar_sessions/graphql_app.py maps them)."""

from __future__ import annotations

import re

from graphql import GraphQLError

from observability.metrics import REFUSED

_TOKENS = re.compile(r"Document contains more than (\d+) tokens")
_ALIASES = re.compile(r"(\d+) aliases found\. Allowed: (\d+)")
_DEPTH = re.compile(r"'(.*)' exceeds maximum operation depth of (\d+)")


def named(error: GraphQLError) -> GraphQLError:
    """The error as LIMIT_EXCEEDED when it is one of the limits' refusals, else itself."""
    message = error.message
    if found := _TOKENS.search(message):
        text, bound = (
            f"the query: more than {found[1]} tokens; at most {found[1]} (MAX_QUERY_TOKENS): "
            "split it",
            "tokens",
        )
    elif found := _ALIASES.search(message):
        text, bound = (
            f"the query: {found[1]} aliases; at most {found[2]} (MAX_ALIASES): split it",
            "aliases",
        )
    elif found := _DEPTH.search(message):
        text, bound = (
            f"operation '{found[1]}': deeper than {found[2]} levels; at most {found[2]} "
            "(MAX_QUERY_DEPTH)",
            "depth",
        )
    else:
        return error
    return limit_exceeded(text, bound, error)


def limit_exceeded(text: str, bound: str, error: GraphQLError | None = None) -> GraphQLError:
    """A refusal before execution, counted by its bound (at the place of `error`, if any)."""
    REFUSED.labels(bound).inc()
    nodes = None if error is None else error.nodes
    return GraphQLError(text, nodes=nodes, extensions={"code": "LIMIT_EXCEEDED"})
