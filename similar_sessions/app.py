"""The Starlette app: GraphQL at /graphql, the REST route, /healthz and the console."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from strawberry.extensions import DisableIntrospection

from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine, ping
from data.migrate import migrate
from data.secrets import deployment_secret
from data.server import resolve_url
from resolvers.cursors import Cursors
from resolvers.tuning import Tuning
from schema.query import make_schema
from similar_sessions.auth import AuthMiddleware
from similar_sessions.body_limit import BodySizeLimit
from similar_sessions.console.routes import routes as console_routes
from similar_sessions.errors import EXCEPTION_HANDLERS, RETRY_AFTER_S
from similar_sessions.graphql_app import GraphQLApp
from similar_sessions.rate_limit import RateLimits
from similar_sessions.rest import similar_route


async def healthz(request: Request) -> Response:
    try:
        await ping(request.app.state.engine)
    except Exception:
        response = JSONResponse({"status": "unavailable", "database": False}, status_code=503)
        response.headers["Retry-After"] = RETRY_AFTER_S
        return response
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
        app.state.cursors = Cursors(await deployment_secret(app.state.engine, "cursor"))
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
    app.state.tuning = Tuning.of(settings)
    app.state.rate_limits = RateLimits(settings.rate_limit)
    if engine is not None:
        app.state.engine = engine
    return app
