"""The Starlette app: GraphQL at /graphql, the REST route, /healthz and the console."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.extensions import DisableIntrospection

from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from resolvers.context import Context
from resolvers.similar import Tuning
from schema.query import make_schema
from similar_sessions.console.routes import routes as console_routes
from similar_sessions.edge import (
    EXCEPTION_HANDLERS,
    AuthMiddleware,
    context_for,
    is_graphiql_page,
)
from similar_sessions.limits import BodySizeLimit
from similar_sessions.logs import configure_logging
from similar_sessions.rest import similar_route
from similar_sessions.settings import Settings


class GraphQLApp(GraphQL[Context, None]):
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and is_graphiql_page(HTTPConnection(scope)):
            # The IDE's page runs no query and needs no key (AuthMiddleware lets it pass).
            response = await self.render_graphql_ide(Request(scope, receive))
            await response(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def get_context(self, request: Any, response: Any) -> Context:
        return context_for(request)


def tuning_of(settings: Settings) -> Tuning:
    return Tuning(
        embeddings_enabled=settings.embeddings_enabled,
        exact_scan_max_chunks=settings.exact_scan_max_chunks,
        ef_search=settings.hnsw_ef_search,
        ef_search_retry=settings.hnsw_ef_search_retry,
        overfetch=settings.hnsw_overfetch,
        comparison_timeout_ms=settings.comparison_timeout_ms,
    )


async def healthz(request: Request) -> Response:
    try:
        async with request.app.state.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
    except Exception:
        return JSONResponse({"status": "unavailable", "database": False}, status_code=503)
    return JSONResponse({"status": "ok", "database": True})


def create_app(
    settings: Settings | None = None,
    *,
    engine: AsyncEngine | None = None,
    run_migrations: bool = True,
) -> Starlette:
    """The app; with no engine given it opens DATABASE_URL (or the embedded server) at start-up."""
    settings = settings or Settings.from_env()
    configure_logging(settings.log_level)
    extensions = [] if settings.introspection else [DisableIntrospection]
    schema = make_schema(extra_extensions=extensions)
    graphql = GraphQLApp(schema, graphql_ide="graphiql" if settings.graphiql else None)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        own = engine is None
        app.state.engine = engine or make_engine(
            resolve_url(settings.database_url, settings.data_dir),
            pool_size=settings.pool_size,
            pool_timeout_s=settings.pool_timeout_s,
            statement_timeout_ms=settings.statement_timeout_ms,
        )
        if run_migrations:
            await migrate(app.state.engine)
        try:
            yield
        finally:
            if own:
                await app.state.engine.dispose()

    routes = [
        Route("/healthz", healthz),
        Route("/graphql", graphql, methods=["GET", "POST"]),
        Route("/api/v1/runtime-sessions/{runtime_session_id}/similar", similar_route),
        *console_routes,
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(BodySizeLimit), Middleware(AuthMiddleware)],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.tuning = tuning_of(settings)
    if engine is not None:
        app.state.engine = engine
    return app
