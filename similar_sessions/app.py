"""The Starlette app: GraphQL at /graphql, the REST route, /healthz, /metrics and the
console; traced when the settings name a traces exporter."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator, Callable
from functools import partial

import strawberry
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from strawberry.extensions import DisableIntrospection, SchemaExtension
from strawberry.extensions.tracing import OpenTelemetryExtension

from config.logs import configure_logging
from config.settings import Settings
from data.account_snapshot import Snapshots
from data.engine import make_engine, ping
from data.migrate import migrate
from data.secrets import deployment_secret
from data.server import resolve_url
from indexer.embedders import Registry
from indexer.providers import providers_for
from observability.tracing import configure_tracing, trace_engine
from resolvers.cursors import Cursors
from resolvers.services import Services
from resolvers.tuning import Tuning
from schema.documents import Documents
from schema.operation_metrics import OperationMetrics
from schema.query import make_schema
from similar_sessions import mcp_server, otlp
from similar_sessions.admission import AdmissionMiddleware
from similar_sessions.auth import AuthMiddleware
from similar_sessions.body_limit import BodySizeLimit
from similar_sessions.console.routes import routes as console_routes
from similar_sessions.errors import EXCEPTION_HANDLERS, RETRY_AFTER_S
from similar_sessions.fair_queue import FairQueue
from similar_sessions.graphql_app import GraphQLApp
from similar_sessions.http_metrics import HttpMetrics
from similar_sessions.rate_limit import RateLimits
from similar_sessions.request_id import RequestId
from similar_sessions.rest import failure_modes_route, search_route, similar_route


async def healthz(request: Request) -> Response:
    try:
        await ping(request.app.state.services.engine)
    except Exception:
        response = JSONResponse({"status": "unavailable", "database": False}, status_code=503)
        response.headers["Retry-After"] = RETRY_AFTER_S
        return response
    return JSONResponse({"status": "ok", "database": True})


def open_engines(settings: Settings) -> tuple[AsyncEngine, AsyncEngine]:
    """The engine of every read, and the comparisons' own pool, opened with their settings
    (so a comparison sends no SET, and comparisons cannot take every connection)."""
    url = resolve_url(settings.database_url, settings.data_dir)
    engine = make_engine(
        url,
        pool_size=settings.pool_size,
        pool_timeout_s=settings.pool_timeout_s,
        statement_timeout_ms=settings.statement_timeout_ms,
    )
    comparisons = make_engine(
        url,
        pool_size=settings.comparison_pool_size,
        pool_timeout_s=settings.pool_timeout_s,
        comparison=Tuning.of(settings).comparison_settings,
    )
    return engine, comparisons


def services_of(
    settings: Settings, engine: AsyncEngine, comparisons: AsyncEngine | None
) -> Services:
    # The indexer's embedders: a search text is embedded by the model its passages were.
    embedders = Registry(providers=providers_for(settings), kept=settings.embedders_kept)
    snapshots = Snapshots(settings.account_snapshot_ttl_s)
    return Services(engine, Tuning.of(settings), comparisons, snapshots, embedders)


async def metrics(_: Request) -> Response:
    """Prometheus' text format, from this process's registry."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


def trace_engines(services: Services, tracing: TracerProvider) -> None:
    for engine in {services.engine, services.comparison_engine}:
        trace_engine(engine, tracing)


def schema_extensions(
    settings: Settings, tracing: TracerProvider | None
) -> list[type[SchemaExtension]]:
    """The GraphQL extensions the settings ask for, beside the schema's own limits."""
    extensions: list[type[SchemaExtension]] = [OperationMetrics]
    if not settings.introspection:
        extensions.append(DisableIntrospection)
    if tracing is not None:
        extensions.append(partial(OpenTelemetryExtension, tracer_provider=tracing))  # type: ignore[arg-type]
    return extensions


def routes(settings: Settings, graphql: GraphQLApp, mcp: mcp_server.Endpoint) -> list[BaseRoute]:
    return [
        Route("/healthz", healthz),
        Route(mcp_server.PATH, mcp, methods=["GET", "POST", "DELETE"]),
        *([Route("/metrics", metrics)] if settings.metrics else []),
        Route("/graphql", graphql, methods=["GET", "POST"]),
        Route("/api/v1/runtime-sessions/search", search_route),
        Route("/api/v1/runtime-sessions/failure-modes", failure_modes_route),
        Route("/api/v1/runtime-sessions/{runtime_session_id}/similar", similar_route),
        Route(otlp.PATH, otlp.traces, methods=["POST"]),
        *console_routes,
    ]


def _settle_heap() -> None:
    """Everything loaded at start-up (modules, the schema, the engines) lives as long as the
    process: moved out of the collector's reach, a full collection no longer walks it. Each
    took 160 to 270 ms here with the event loop stopped, and a busy process ran one every
    few seconds (bench.latency.failure_modes)."""
    gc.collect()
    gc.freeze()


def _lifespan(
    settings: Settings, tracing: TracerProvider | None, *, own_engines: bool, migrate_first: bool
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """Start-up and shut-down: the engines opened (unless given), migrations, the cursor key."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if own_engines:
            app.state.services = services_of(settings, *open_engines(settings))
            if tracing is not None:
                trace_engines(app.state.services, tracing)
        try:  # the engines are disposed of even when start-up fails
            if migrate_first:
                await migrate(app.state.services.engine)
            secret = await deployment_secret(app.state.services.engine, "cursor")
            app.state.cursors = Cursors(secret)
            _settle_heap()
            yield
        finally:
            if own_engines:
                await app.state.services.engine.dispose()
                await app.state.services.comparison_engine.dispose()

    return lifespan


def admission_state(
    app: Starlette, settings: Settings, documents: Documents, schema: strawberry.Schema
) -> None:
    """What admission reads (similar_sessions/admission.py): the settings, the rates, the fair
    queue, and the schema with its kept documents, through which a query is priced."""
    app.state.settings = settings
    app.state.rate_limits = RateLimits(settings.rate_limit)
    app.state.account_rates = RateLimits(settings.account_rate_limit)
    app.state.fair_queue = FairQueue(settings.seats, settings.account_queue)
    app.state.documents, app.state.schema = documents, schema
    app.state.ingest_rates = otlp.IngestRates(settings)


def create_app(
    settings: Settings | None = None,
    *,
    engine: AsyncEngine | None = None,
    comparison_engine: AsyncEngine | None = None,
    run_migrations: bool = True,
) -> Starlette:
    """The app; with no engine given it opens DATABASE_URL (or the embedded server) at
    start-up. Given an engine but no comparison engine, comparisons use the engine too."""
    settings = settings or Settings.from_env()
    configure_logging(settings.log_level)
    tracing = configure_tracing(settings)
    documents = Documents()  # kept parses, read by admission and by the schema alike
    schema = make_schema(
        extra_extensions=schema_extensions(settings, tracing),
        documents=documents,
        replay_turns=settings.replay_turns,
    )
    graphql = GraphQLApp(schema, graphql_ide=None)
    app = Starlette(
        routes=routes(settings, graphql, mcp_server.Endpoint()),
        middleware=[
            Middleware(HttpMetrics),
            Middleware(BodySizeLimit, paths={otlp.PATH: settings.ingest_body_bytes}),
            Middleware(AuthMiddleware),
            Middleware(AdmissionMiddleware),
        ],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=_lifespan(
            settings, tracing, own_engines=engine is None, migrate_first=run_migrations
        ),
    )
    if tracing is not None:
        from opentelemetry.instrumentation.starlette import StarletteInstrumentor

        StarletteInstrumentor.instrument_app(app, tracer_provider=tracing)
    app.add_middleware(RequestId)  # outermost: its id is bound before any span starts
    admission_state(app, settings, documents, schema)
    if engine is not None:
        app.state.services = services_of(settings, engine, comparison_engine)
        if tracing is not None:
            trace_engines(app.state.services, tracing)
    return app
