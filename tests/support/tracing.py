"""The tests' tracer provider: set once per run, exporting to memory; `spans` clears it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from observability.tracing import tracer_provider

EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="session")
def traced() -> InMemorySpanExporter:
    """The global provider, exporting each span to memory as it ends."""
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider):
        raise RuntimeError(f"a tracer provider is already set: {current!r}")
    trace.set_tracer_provider(tracer_provider(EXPORTER, "similar-sessions-tests", batch=False))
    return EXPORTER


@pytest.fixture
def spans(traced: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    traced.clear()
    yield traced
    traced.clear()
