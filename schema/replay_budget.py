"""The replay turns a GraphQL request may read, bounded before it runs: each replay field
(`replay`, `replayPage`) costs its `first` times the most sessions it can run for (1 under
`runtimeSession`, `first` under `runtimeSessions`, times `limit` under a comparison's or a
search's results), and a query whose fields together could read more than the bound is
refused whole, with one LIMIT_EXCEEDED error, before any statement is sent.

Refused whole rather than field by field (as comparisons are): a replay field under a page
of sessions refused for each session is one error per session, and 3,000 such errors cost
a second of the event loop; the query's cost is known from the query alone, so a client
asks smaller pages or fewer sessions and gets the same answer whatever the data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql import ExecutionResult as GraphQLExecutionResult
from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLField,
    GraphQLSchema,
    OperationDefinitionNode,
)
from graphql.execution.values import get_variable_values
from graphql.utilities import get_operation_ast
from strawberry.extensions import SchemaExtension

from config.settings import default_of
from observability.metrics import REFUSED
from schema.comparison_budget import Path, Site, int_argument, walk

REPLAY_FIELDS = {("RuntimeSession", "replay"), ("RuntimeSession", "replayPage")}


def planned_turns(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any],
) -> int:
    """The most replay turns the operation's replay fields can read together."""
    turns = 0

    def visit(site: Site, _: Path, runs: int, node: FieldNode, definition: GraphQLField) -> bool:
        nonlocal turns
        if site in REPLAY_FIELDS:
            turns += runs * int_argument(definition, node, "first", variables)
        return True

    walk(schema, operation, fragments, variables, visit)
    return turns


class ReplayTurnsLimit(SchemaExtension):
    """Refuses, before execution, an operation that could read more replay turns than
    `limit` (SIMILAR_SESSIONS_REPLAY_TURNS)."""

    def __init__(self, *, limit: int = default_of("replay_turns")) -> None:
        self.limit = limit

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        asked = self._planned()
        if asked is not None and asked > self.limit:
            message = (
                f"replay turns: this query may read up to {asked} (each replay field's `first` "
                f"times the sessions it can run for); at most {self.limit} per request "
                "(SIMILAR_SESSIONS_REPLAY_TURNS): ask smaller pages or fewer sessions"
            )
            extensions = {"code": "LIMIT_EXCEEDED", "limit": self.limit}
            REFUSED.labels("replay_turns").inc()
            context.result = GraphQLExecutionResult(
                data=None, errors=[GraphQLError(message, extensions=extensions)]
            )
        yield

    def _planned(self) -> int | None:
        """The operation's planned turns; None when it cannot be planned (its variables do
        not fit their types, say): execution then answers what is wrong."""
        context = self.execution_context
        document, schema = context.graphql_document, context.schema._schema
        operation = (
            None if document is None else get_operation_ast(document, context.operation_name)
        )
        if document is None or operation is None:
            return None
        values = get_variable_values(
            schema, operation.variable_definitions or (), context.variables or {}
        )
        if isinstance(values, list):
            return None
        fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }
        return planned_turns(schema, operation, fragments, values.coerced)
