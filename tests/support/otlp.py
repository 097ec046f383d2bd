"""OTLP export requests as an agent's exporter sends them: GenAI spans built as protobuf
messages (opentelemetry-proto's), encoded as protobuf or as OTLP/JSON (ids in hex, enums as
integers: not protobuf's own JSON mapping), gzipped or not, and posted to /v1/traces."""

from __future__ import annotations

import base64
import gzip
import json
import random
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import httpx
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status
from sqlalchemy.ext.asyncio import AsyncEngine

from config.settings import Settings
from similar_sessions.app import create_app
from transfer.live import make_sessions

# the spans' clock: a minute ago, so that a session of them is running (not idle yet)
T0 = (time.time_ns() // 10**9 - 60) * 10**9
PROTOBUF, JSON = "application/x-protobuf", "application/json"
CONVERSATION = "gen_ai.conversation.id"


def hex_id(size: int, rng: random.Random | None = None) -> str:
    return (rng or random).randbytes(size).hex()


@dataclass
class GenSpan:
    """One span as a test states it: ids in hex, times in seconds after T0."""

    trace: str
    span: str
    name: str
    start: float
    end: float
    attributes: dict[str, Any] = field(default_factory=dict)
    parent: str = ""
    error: bool = False
    resource: dict[str, Any] = field(default_factory=dict)

    def proto(self) -> Span:
        span = Span(
            trace_id=bytes.fromhex(self.trace),
            span_id=bytes.fromhex(self.span),
            parent_span_id=bytes.fromhex(self.parent) if self.parent else b"",
            name=self.name,
            start_time_unix_nano=T0 + int(self.start * 1e9),
            end_time_unix_nano=T0 + int(self.end * 1e9),
            attributes=[_kv(k, v) for k, v in self.attributes.items()],
        )
        if self.error:
            span.status.code = Status.STATUS_CODE_ERROR
        return span


def unnamed(spans: Sequence[GenSpan]) -> list[GenSpan]:
    """The spans without their `gen_ai.conversation.id` (as an instrumentation that puts it on
    the root alone sends them)."""
    return [
        replace(s, attributes={k: v for k, v in s.attributes.items() if k != CONVERSATION})
        for s in spans
    ]


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    text = value if isinstance(value, str) else json.dumps(value)
    return KeyValue(key=key, value=AnyValue(string_value=text))


def request_of(spans: Sequence[GenSpan]) -> ExportTraceServiceRequest:
    """The spans in one request, one ResourceSpans per distinct resource."""
    request = ExportTraceServiceRequest()
    groups: dict[str, list[GenSpan]] = {}
    for span in spans:
        groups.setdefault(json.dumps(span.resource, sort_keys=True), []).append(span)
    for resource, members in groups.items():
        rs = ResourceSpans(scope_spans=[ScopeSpans(spans=[s.proto() for s in members])])
        rs.resource.attributes.extend(_kv(k, v) for k, v in json.loads(resource).items())
        request.resource_spans.append(rs)
    return request


def otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """OTLP/JSON of the request: protobuf's JSON mapping with ids in hex, enums as integers."""
    document = MessageToDict(request, use_integers_for_enums=True)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in span:
                        span[name] = base64.b64decode(span[name]).hex()
    return document


def body_of(spans: Sequence[GenSpan], encoding: str = PROTOBUF) -> bytes:
    request = request_of(spans)
    if encoding == PROTOBUF:
        return bytes(request.SerializeToString())
    return json.dumps(otlp_json(request)).encode()


async def post(
    client: httpx.AsyncClient,
    key: str,
    spans: Sequence[GenSpan],
    encoding: str = PROTOBUF,
    gzipped: bool = False,
) -> httpx.Response:
    body = body_of(spans, encoding)
    headers = {"authorization": f"Bearer {key}", "content-type": encoding}
    if gzipped:
        body = gzip.compress(body)
        headers["content-encoding"] = "gzip"
    return await client.post("/v1/traces", content=body, headers=headers)


def partial_success(response: httpx.Response) -> tuple[int, str]:
    """The rejected spans and message of a 200's ExportTraceServiceResponse."""
    if response.headers["content-type"].startswith(PROTOBUF):
        message = ExportTraceServiceResponse.FromString(response.content)
        return message.partial_success.rejected_spans, message.partial_success.error_message
    document = response.json().get("partialSuccess", {})
    return int(document.get("rejectedSpans", 0)), document.get("errorMessage", "")


@dataclass
class Agent:
    """A conversation as an instrumented agent exports it: one invoke_agent root per user
    request, a chat span per model call (re-sending the conversation so far), a tool span
    per tool call."""

    conversation: str | None
    trace: str = field(default_factory=lambda: hex_id(16))
    clock: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)
    spans: list[GenSpan] = field(default_factory=list)
    root: str = field(default_factory=lambda: hex_id(8))

    def _attrs(self, operation: str, **more: Any) -> dict[str, Any]:
        attrs: dict[str, Any] = {"gen_ai.operation.name": operation, **more}
        if self.conversation is not None:
            attrs["gen_ai.conversation.id"] = self.conversation
        return attrs

    def user(self, text: str) -> None:
        self.history.append({"role": "user", "parts": [{"type": "text", "content": text}]})

    def chat(self, reply: str, *, error: bool = False) -> GenSpan:
        output = [{"role": "assistant", "parts": [{"type": "text", "content": reply}]}]
        attrs = self._attrs(
            "chat",
            **{"gen_ai.input.messages": list(self.history), "gen_ai.output.messages": output},
        )
        span = self._span("chat model", attrs, 1.0, error)
        self.history += output
        return span

    def tool(self, name: str, arguments: dict[str, Any], result: str) -> GenSpan:
        call_id = hex_id(4)
        attrs = self._attrs(
            "execute_tool",
            **{
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.arguments": arguments,
                "gen_ai.tool.call.result": result,
            },
        )
        return self._span(f"execute_tool {name}", attrs, 0.5, False)

    def finish(self, *, error: bool = False, started: float = 0.0) -> GenSpan:
        """The root invoke_agent span, ending now (it began at `started`)."""
        span = GenSpan(
            self.trace,
            self.root,
            "invoke_agent support-bot",
            started,
            self.clock + 0.1,
            self._attrs("invoke_agent", **{"gen_ai.agent.name": "support-bot"}),
            error=error,
        )
        self.spans.append(span)
        return span

    def _span(self, name: str, attrs: dict[str, Any], seconds: float, error: bool) -> GenSpan:
        start = self.clock + 0.01
        self.clock = start + seconds
        span = GenSpan(self.trace, hex_id(8), name, start, self.clock, attrs, self.root, error)
        self.spans.append(span)
        return span


def making_sessions(engine: AsyncEngine, settings: Settings | None = None) -> dict[str, list[Any]]:
    """httpx event hooks doing what the `index --watch` beside `serve` does when the receiver
    wakes it: once an export is acknowledged, every request waiting made into sessions, so
    that a test reads them as its POST returns (the indexer's own tests wake it apart)."""

    idle = timedelta(seconds=(settings or Settings.from_env({})).session_idle_s)

    async def made(response: httpx.Response) -> None:
        if response.request.url.path == "/v1/traces" and response.status_code == 200:
            await make_sessions(engine, idle)

    return {"response": [made]}


@asynccontextmanager
async def served(
    engine: AsyncEngine, *, indexer: bool = True, **env: str
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app with these settings (SIMILAR_SESSIONS_<NAME>), started up; with
    `indexer`, acknowledged exports are made into sessions at once (making_sessions)."""
    settings = Settings.from_env({f"SIMILAR_SESSIONS_{k.upper()}": v for k, v in env.items()})
    app = create_app(settings, engine=engine, run_migrations=False)
    hooks = making_sessions(engine, settings) if indexer else {}
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://t", event_hooks=hooks) as client,
    ):
        yield client
