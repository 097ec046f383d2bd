"""Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER is set; when
set, spans go by OTLP/HTTP to that endpoint (here a receiver on 127.0.0.1)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from strawberry.extensions.tracing import OpenTelemetryExtension

from config.settings import Settings, SettingsError
from observability.tracing import configure_tracing
from similar_sessions.app import create_app
from similar_sessions.request_id import RequestId


@pytest.mark.parametrize(
    ("env", "exporter"),
    [
        ({}, None),
        ({"OTEL_TRACES_EXPORTER": "none"}, None),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318"}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h:4318"}, "otlp"),
        ({"OTEL_TRACES_EXPORTER": "console"}, "console"),
        ({"OTEL_TRACES_EXPORTER": "OTLP"}, "otlp"),
    ],
)
def test_which_exporter(env: dict[str, str], exporter: str | None) -> None:
    assert Settings.from_env(env).traces_exporter == exporter


def test_an_unknown_exporter_is_refused_by_name() -> None:
    with pytest.raises(SettingsError, match=r"OTEL_TRACES_EXPORTER: .*otlp, console, none"):
        Settings.from_env({"OTEL_TRACES_EXPORTER": "zipkin"})


def instrumented(app: Starlette) -> tuple[bool, bool]:
    """(HTTP requests traced, GraphQL operations traced)."""
    graphql = next(r for r in app.routes if getattr(r, "path", "") == "/graphql")
    extensions = graphql.endpoint.schema.extensions  # type: ignore[attr-defined]
    return (
        any(m.cls is OpenTelemetryMiddleware for m in app.user_middleware),
        any(getattr(e, "func", e) is OpenTelemetryExtension for e in extensions),
    )


def test_by_default_nothing_is_traced() -> None:
    settings = Settings.from_env({})
    assert configure_tracing(settings) is None
    app = create_app(settings, run_migrations=False)
    assert instrumented(app) == (False, False)
    assert app.user_middleware[0].cls is RequestId


def test_with_an_exporter_requests_and_operations_are_traced(
    traced: InMemorySpanExporter,
) -> None:
    app = create_app(Settings.from_env({"OTEL_TRACES_EXPORTER": "console"}), run_migrations=False)
    assert instrumented(app) == (True, True)
    assert app.user_middleware[0].cls is RequestId  # outside the spans: they carry its id


class Receiver(BaseHTTPRequestHandler):
    got: ClassVar[list[tuple[str, str, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        Receiver.got.append((self.path, self.headers.get("content-type", ""), body))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_with_an_endpoint_spans_are_exported_there_by_otlp_http() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    code = (
        "from opentelemetry import trace\n"
        "from config.settings import Settings\n"
        "from observability.tracing import configure_tracing\n"
        "provider = configure_tracing(Settings.from_env())\n"
        "with trace.get_tracer('probe').start_as_current_span('exported-probe-span'):\n"
        "    pass\n"
        "provider.shutdown()\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")},
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
        "OTEL_SERVICE_NAME": "similar-sessions-export-test",
    }
    try:
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    finally:
        server.shutdown()
        server.server_close()
    [(path, content_type, body)] = Receiver.got
    assert path == "/v1/traces" and content_type == "application/x-protobuf"
    assert b"exported-probe-span" in body and b"similar-sessions-export-test" in body
