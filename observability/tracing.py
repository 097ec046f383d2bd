"""OpenTelemetry traces: off unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER says
where they go; then one tracer provider per process, every span stamped with the request id."""

from __future__ import annotations

import re
import weakref
from typing import Any

import structlog
from opentelemetry import context, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings

REQUEST_ID = "similar_sessions.request_id"
_traced_engines: weakref.WeakSet[Any] = weakref.WeakSet()


class RequestIdSpans(SpanProcessor):
    """Stamps each span with the id of the request it belongs to (bound in the logging
    context by the request-id middleware), so a span and a log line are found together."""

    def on_start(self, span: Span, parent_context: context.Context | None = None) -> None:
        request_id = structlog.contextvars.get_contextvars().get("request_id")
        if request_id is not None:
            span.set_attribute(REQUEST_ID, str(request_id))

    def on_end(self, span: ReadableSpan) -> None:
        pass


def tracer_provider(
    exporter: SpanExporter, service_name: str, *, batch: bool = True
) -> TracerProvider:
    """A provider that stamps request ids and exports to `exporter` (batched, or each span
    as it ends)."""
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(RequestIdSpans())
    provider.add_span_processor(
        BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    )
    return provider


def configure_tracing(settings: Settings) -> TracerProvider | None:
    """The process's tracer provider when the settings name an exporter, set globally on
    first use (a provider already set, by this or by the tests, is kept); None: tracing is
    off, nothing is set and nothing is exported."""
    if settings.traces_exporter is None:
        return None
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    exporter: SpanExporter
    if settings.traces_exporter == "console":
        exporter = ConsoleSpanExporter()
    else:
        # Reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT and friends itself.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider = tracer_provider(exporter, settings.otel_service_name)
    trace.set_tracer_provider(provider)
    return provider


def trace_engine(engine: AsyncEngine, provider: TracerProvider) -> None:
    """A span per SQL statement of this engine (the statement's text, never its parameters)."""
    if engine.sync_engine in _traced_engines:
        return
    from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
    from opentelemetry.instrumentation.sqlalchemy.engine import EngineTracer
    from opentelemetry.metrics import NoOpMeter

    class ScrubbedEngineTracer(EngineTracer):
        """A statement's text names an account in an own index's predicate: never in a span."""

        def _set_db_client_span_attributes(self, span: Any, statement: Any, *rest: Any) -> None:
            super()._set_db_client_span_attributes(span, scrub(str(statement)), *rest)

    # The instrumentor's per-engine tracer, without its global patching of create_engine.
    tracer = provider.get_tracer(SQLAlchemyInstrumentor.__module__)
    connections = NoOpMeter("similar_sessions").create_up_down_counter("db.client.connections")
    ScrubbedEngineTracer(tracer, engine.sync_engine, connections)  # type: ignore[no-untyped-call]
    _traced_engines.add(engine.sync_engine)


_UUID_LITERAL = re.compile(
    r"'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}'"
)


def scrub(statement: str) -> str:
    """The statement with its id literals replaced (the parameters are never recorded)."""
    return _UUID_LITERAL.sub("'?'", statement)
