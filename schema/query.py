"""The root Query and the schema object."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import strawberry
import structlog
from graphql import GraphQLError
from strawberry.extensions import (
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
    SchemaExtension,
)
from strawberry.types import ExecutionContext

from resolvers.context import Context
from resolvers.sessions import session_page
from schema.errors import MapErrors, is_unexpected
from schema.sessions import RuntimeSession


@strawberry.type(description="The caller: the account behind the API key.")
class Viewer:
    account_id: UUID
    name: str
    features: list[str]
    scopes: list[str]


@strawberry.type(description="A page of sessions, newest first.")
class RuntimeSessionPage:
    nodes: list[RuntimeSession]
    end_cursor: str | None
    has_next_page: bool


@strawberry.type
class Query:
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
        row = await info.context.sessions.load(id)
        return None if row is None else RuntimeSession.of(row)

    @strawberry.field(description="The account's sessions, newest first.")
    async def runtime_sessions(
        self, info: strawberry.Info[Context, None], first: int = 20, after: str | None = None
    ) -> RuntimeSessionPage:
        rows, more = await session_page(info.context, first, after)
        return RuntimeSessionPage(
            nodes=[RuntimeSession.of(r) for r in rows],
            end_cursor=(
                info.context.cursors.sessions(rows[-1], info.context.principal.account_id)
                if rows
                else None
            ),
            has_next_page=more,
        )


log = structlog.get_logger(__name__)
MAX_QUERY_DEPTH = 12
MAX_ALIASES = 30
# Parsing stops past this many tokens, before validation, whose cost grows faster than the
# query (3,700 repeated fields took 1.6 s). The console's largest query has 94 tokens.
MAX_QUERY_TOKENS = 1000


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
    return Schema(
        query=Query,
        extensions=[
            lambda: MaxTokensLimiter(max_token_count=MAX_QUERY_TOKENS),
            lambda: QueryDepthLimiter(max_depth=MAX_QUERY_DEPTH),
            lambda: MaxAliasesLimiter(max_alias_count=MAX_ALIASES),
            *extra_extensions,
            MapErrors,
        ],
    )
