"""The root Query and the schema object."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import strawberry
import structlog
from graphql import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext

from config.settings import default_of
from resolvers.context import Context
from resolvers.sessions import session_page
from resolvers.turns import TakesTurn
from schema.alerts import AlertQuery, Mutation
from schema.documents import MAX_QUERY_TOKENS as MAX_QUERY_TOKENS
from schema.documents import CachedParse, Documents, PricedValidation
from schema.errors import MapErrors, is_unexpected
from schema.failure_modes import FailureQuery
from schema.search import SearchQuery
from schema.selection_bound import MAX_ALIASES as MAX_ALIASES
from schema.selection_bound import MAX_QUERY_DEPTH as MAX_QUERY_DEPTH
from schema.sessions import RuntimeSession


@strawberry.type(description="The caller: the account behind the API key.")
class Viewer:
    account_id: UUID
    name: str
    features: list[str]
    scopes: list[str]


@strawberry.type(description="Where a page of a connection starts and ends (Relay).")
class PageInfo:
    has_next_page: bool
    has_previous_page: bool = strawberry.field(
        description="True when the page was asked `after` a cursor."
    )
    start_cursor: str | None
    end_cursor: str | None


@strawberry.type(description="A session, and the cursor of the page that starts after it.")
class RuntimeSessionEdge:
    cursor: str
    node: RuntimeSession


@strawberry.type(
    description="A page of the account's sessions, newest first: a Relay connection, with "
    "`nodes` as a shortcut for `edges { node }`."
)
class RuntimeSessionConnection:
    edges: list[RuntimeSessionEdge]
    nodes: list[RuntimeSession]
    page_info: PageInfo
    end_cursor: str | None = strawberry.field(deprecation_reason="Use `pageInfo { endCursor }`.")
    has_next_page: bool = strawberry.field(deprecation_reason="Use `pageInfo { hasNextPage }`.")


@strawberry.type
class Query(FailureQuery, SearchQuery, AlertQuery):
    @strawberry.field(description="Who is asking.")
    def viewer(self, info: strawberry.Info[Context, None]) -> Viewer:
        p = info.context.principal
        return Viewer(
            account_id=p.account_id,
            name=p.account_name,
            features=sorted(p.features),
            scopes=sorted(p.scopes),
        )

    @strawberry.field(description="One session of the caller's account; null when there is none.")
    async def runtime_session(
        self, info: strawberry.Info[Context, None], id: UUID
    ) -> RuntimeSession | None:
        row = await info.context.loaders.sessions.load(id)
        return None if row is None else RuntimeSession.of(row)

    @strawberry.field(
        extensions=[TakesTurn()],
        description="The account's sessions, newest first; with `search`, only those whose id "
        "is a word of it, or whose title or source id contains it (case-insensitive).",
    )
    async def runtime_sessions(
        self,
        info: strawberry.Info[Context, None],
        first: int = 20,
        after: str | None = None,
        search: str | None = None,
    ) -> RuntimeSessionConnection:
        rows, more = await session_page(info.context, first, after, search)
        account_id = info.context.principal.account_id
        edges = [
            RuntimeSessionEdge(
                cursor=info.context.cursors.sessions(row, account_id), node=RuntimeSession.of(row)
            )
            for row in rows
        ]
        start, end = (edges[0].cursor, edges[-1].cursor) if edges else (None, None)
        return RuntimeSessionConnection(
            edges=edges,
            nodes=[edge.node for edge in edges],
            page_info=PageInfo(
                has_next_page=more,
                has_previous_page=after is not None,
                start_cursor=start,
                end_cursor=end,
            ),
            end_cursor=end,
            has_next_page=more,
        )


log = structlog.get_logger(__name__)


class Schema(strawberry.Schema):
    """Logs only unexpected errors, by type: never the query, its variables or any content."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            if is_unexpected(error):
                log.error(
                    "graphql_unexpected_error",
                    error_type=type(error.original_error).__name__,
                    path=error.path,
                )


def make_schema(
    extra_extensions: Sequence[type[SchemaExtension]] = (),
    *,
    documents: Documents | None = None,
    replay_turns: int = default_of("replay_turns"),
) -> strawberry.Schema:
    """The schema, its documents kept in `documents` (the edge prices requests through the same
    ones, similar_sessions/admission.py): the query limits are our own, checked before
    validation (MAX_QUERY_TOKENS, MAX_QUERY_DEPTH, MAX_ALIASES and the selection bounds)."""
    # The parse and validation of the texts clients send many times (parsing and validating the
    # console's query took 1.6 ms a request), bounded by the texts' length (schema/documents.py).
    kept = Documents() if documents is None else documents
    return Schema(
        query=Query,
        mutation=Mutation,
        extensions=[
            lambda: CachedParse(kept),
            # The bound and the price before validation: a text's spaces vary at will.
            lambda: PricedValidation(kept, replay_turns),
            *extra_extensions,
            MapErrors,
        ],
    )
