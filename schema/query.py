"""The root Query and the schema object."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import strawberry
import structlog
from graphql import ASTValidationRule, GraphQLError
from strawberry.extensions import AddValidationRules, MaxTokensLimiter, SchemaExtension
from strawberry.extensions.max_aliases import create_validator as aliases_rule
from strawberry.extensions.query_depth_limiter import create_validator as depth_rule
from strawberry.types import ExecutionContext

from resolvers.context import Context
from resolvers.sessions import session_page
from resolvers.turns import TakesTurn
from schema.alerts import AlertQuery, Mutation
from schema.documents import BoundedValidation, CachedParse, Documents
from schema.errors import MapErrors, is_unexpected
from schema.failure_modes import FailureQuery
from schema.search import SearchQuery
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
MAX_QUERY_DEPTH = 12
MAX_ALIASES = 30
# Parsing stops past this many tokens, before validation, whose cost grows faster than the
# query (3,700 repeated fields took 1.6 s). The console's largest query has 94 tokens.
MAX_QUERY_TOKENS = 1000
# The query depth and alias limits as validation rules, made once: the limiter extensions make
# a rule class per request, and no validation could then be reused.
LIMIT_RULES: list[type[ASTValidationRule]] = [
    depth_rule(MAX_QUERY_DEPTH, None),
    aliases_rule(MAX_ALIASES),
]


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
) -> strawberry.Schema:
    # The parse and validation of the texts clients send many times (parsing and validating the
    # console's query took 1.6 ms a request), bounded by the texts' length (schema/documents.py).
    documents = Documents()
    return Schema(
        query=Query,
        mutation=Mutation,
        extensions=[
            lambda: MaxTokensLimiter(max_token_count=MAX_QUERY_TOKENS),
            lambda: CachedParse(documents),
            lambda: AddValidationRules(LIMIT_RULES),
            # The bound before validation: a text's spaces vary at will.
            lambda: BoundedValidation(documents),
            *extra_extensions,
            MapErrors,
        ],
    )
