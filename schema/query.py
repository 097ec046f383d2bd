"""The root Query and the schema object."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import strawberry
import structlog
from graphql import GraphQLError
from strawberry.extensions import MaskErrors, MaxAliasesLimiter, QueryDepthLimiter, SchemaExtension
from strawberry.types import ExecutionContext

from data.engine import is_unavailable
from resolvers.arguments import BadArgument
from resolvers.context import Context
from resolvers.fields import session_cursor, session_page
from schema.errors import bad_user_input
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
        try:
            rows, more = await session_page(info.context, first, after)
        except BadArgument as exc:
            raise bad_user_input(exc) from None
        return RuntimeSessionPage(
            nodes=[RuntimeSession.of(r) for r in rows],
            end_cursor=session_cursor(rows[-1]) if rows else None,
            has_next_page=more,
        )


class MaskUnexpectedErrors(MaskErrors):
    """Masks unexpected errors; a database that cannot answer right now is said so, with
    extensions.code UNAVAILABLE, so a client knows to retry."""

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        if error.original_error is not None and is_unavailable(error.original_error):
            return GraphQLError(
                "the database is unavailable; retry shortly",
                nodes=error.nodes,
                path=error.path,
                extensions={"code": "UNAVAILABLE"},
            )
        return super().anonymise_error(error)


def _should_mask(error: GraphQLError) -> bool:
    """Expected errors (validation, BAD_USER_INPUT) pass; anything unexpected is masked."""
    return error.original_error is not None and not isinstance(error.original_error, GraphQLError)


log = structlog.get_logger(__name__)
MAX_QUERY_DEPTH = 12
MAX_ALIASES = 30


class Schema(strawberry.Schema):
    """Logs only unexpected errors, by type: never the query, its variables or any content."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            if _should_mask(error):
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
            lambda: QueryDepthLimiter(max_depth=MAX_QUERY_DEPTH),
            lambda: MaxAliasesLimiter(max_alias_count=MAX_ALIASES),
            *extra_extensions,
            lambda: MaskUnexpectedErrors(should_mask_error=_should_mask),
        ],
    )
