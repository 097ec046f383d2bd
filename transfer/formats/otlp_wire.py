"""An OTLP/HTTP export request's spans, in either encoding the specification allows:
`application/x-protobuf` (an ExportTraceServiceRequest, decoded by `opentelemetry-proto`) and
`application/json` (OTLP/JSON: trace and span ids in hex, enums as integers, read by the
models of transfer/formats/otlp.py). A body that does not decode is Undecodable (answered
400); a span that cannot be read (an id of the wrong length, a time past the year 9999, GenAI
content nested too deep) is rejected alone, counted with the first reason (answered as a
partial success)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.json_format import MessageToJson
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from pydantic import ValidationError
from pydantic_core import from_json

from transfer.formats import otlp
from transfer.formats.genai import plainly_within
from transfer.formats.spans import SpanFacts, facts_of
from transfer.import_format import describe
from transfer.values import MAX_TURN_CHARS

PROTOBUF, JSON = "application/x-protobuf", "application/json"
# A span's texts together at most this long make no turn past MAX_TURN_CHARS: a turn is made
# of them, and written out again (json.dumps) a character takes at most 6 (`\\u001f`), a
# number at most 4.5 (`1E15`), a separator 2, a part's joint 1; with a tool's name beside.
PLAIN_CHARS = (MAX_TURN_CHARS - 64) // 8


class Undecodable(ValueError):
    """The body is not an export request in the encoding it declares."""


@dataclass
class Decoded:
    """The spans read, and those rejected: how many and the first reason."""

    spans: list[SpanFacts] = field(default_factory=list)
    rejected: int = 0
    reason: str | None = None

    def reject(self, count: int, reason: str) -> None:
        self.rejected += count
        self.reason = self.reason or reason


def decode(body: bytes, encoding: str) -> Decoded:
    """The request's spans; Undecodable when the body does not decode."""
    return decode_protobuf(body) if encoding == PROTOBUF else decode_json(body)


def response(checked: Checked, encoding: str) -> bytes:
    """The ExportTraceServiceResponse, in the request's encoding: empty, or a partial success
    naming the spans rejected and the first reason."""
    message = ExportTraceServiceResponse()
    if checked.rejected:
        message.partial_success.rejected_spans = checked.rejected
        message.partial_success.error_message = checked.reason or ""
    if encoding == PROTOBUF:
        return bytes(message.SerializeToString())
    return MessageToJson(message, indent=None).encode()


@dataclass
class Checked:
    """What `decode` of a request accepts and rejects, counted: the spans accepted, those
    rejected with the first reason, and how many spans were read whole to be sure."""

    accepted: int = 0
    rejected: int = 0
    reason: str | None = None
    read_whole: int = 0


def check(body: bytes, encoding: str) -> Checked:
    """The spans `decode` accepts and rejects, with its first reason, without reading every
    span's turns (the receiver's answer; the indexer decodes the body later). A protobuf span
    plainly storable (`_plainly_storable`) is counted as it is; any other is read whole, as
    `decode` reads it. OTLP/JSON is decoded."""
    if encoding != PROTOBUF:
        decoded = decode_json(body)
        read = len(decoded.spans) + decoded.rejected
        return Checked(len(decoded.spans), decoded.rejected, decoded.reason, read)
    checked, decoded = Checked(), Decoded()
    for resource_spans in _request(body).resource_spans:
        attributes = resource_spans.resource.attributes
        plain = all("\x00" not in v for v in _strings(attributes))
        resource: dict[str, Any] | None = None
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                if plain and _plainly_storable(span):
                    checked.accepted += 1
                    continue
                resource = _attributes(attributes) if resource is None else resource
                checked.read_whole += 1
                _read(span, resource, decoded)
    checked.accepted += len(decoded.spans)
    checked.rejected, checked.reason = decoded.rejected, decoded.reason
    return checked


def _plainly_storable(span: Span) -> bool:
    """Whether `decode` surely accepts the span without reading it whole: its ids of their
    lengths (its times, fixed64 nanoseconds, end before the year 2555), and its texts (name,
    attributes and events, keys and values at any depth) holding no NUL, nesting within
    bounds at any reading (genai.plainly_within), and so short together that no turn made of
    them, however it is written out again, can pass MAX_TURN_CHARS."""
    if len(span.trace_id) != 16 or len(span.span_id) != 8 or not any(span.trace_id):
        return False
    parent = span.parent_span_id
    if not any(span.span_id) or (parent and (len(parent) != 8 or not any(parent))):
        return False
    texts = [span.name, *_strings(span.attributes)]
    for event in span.events:
        texts += [event.name, *_strings(event.attributes)]
    if sum(map(len, texts)) > PLAIN_CHARS:
        return False
    return plainly_within(texts)


def _strings(pairs: Any) -> Iterator[str]:
    """Every key and string value of the attributes, at any depth (bytes as base64 are
    plain)."""
    stack = list(pairs)
    while stack:
        pair = stack.pop()
        yield pair.key
        value = pair.value
        kind = value.WhichOneof("value")
        if kind == "string_value":
            yield value.string_value
        elif kind == "kvlist_value":
            stack += value.kvlist_value.values
        elif kind == "array_value":
            stack += (KeyValue(value=v) for v in value.array_value.values)


def decode_protobuf(body: bytes) -> Decoded:
    decoded = Decoded()
    for resource_spans in _request(body).resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                _read(span, resource, decoded)
    return decoded


def _request(body: bytes) -> ExportTraceServiceRequest:
    try:
        return ExportTraceServiceRequest.FromString(body)
    except (DecodeError, RecursionError) as exc:
        raise Undecodable(f"the body is not an OTLP ExportTraceServiceRequest ({exc})") from None


def _read(span: Span, resource: dict[str, Any], decoded: Decoded) -> None:
    try:
        decoded.spans.append(_facts(span, resource))
    except ValueError as exc:
        decoded.reject(1, f"span {span.span_id.hex() or '(none)'}: {exc}")


def _facts(span: Span, resource: dict[str, Any]) -> SpanFacts:
    trace_id, span_id = _id(span.trace_id, 16, "trace_id"), _id(span.span_id, 8, "span_id")
    parent = _id(span.parent_span_id, 8, "parent_span_id") if span.parent_span_id else ""
    events = [(e.time_unix_nano, e.name, _attributes(e.attributes)) for e in span.events]
    return facts_of(
        (trace_id, span_id, parent),
        span.name,
        (span.start_time_unix_nano, span.end_time_unix_nano),
        span.status.code == Status.STATUS_CODE_ERROR,
        _attributes(span.attributes),
        events,
        resource,
    )


def _id(raw: bytes, size: int, name: str) -> str:
    if len(raw) != size or not any(raw):
        raise ValueError(f"{name} is {size} bytes, not all zero (got {len(raw)})")
    return raw.hex()


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _plain(kv.value) for kv in pairs if isinstance(kv, KeyValue)}


def _plain(value: AnyValue) -> Any:
    """The value an AnyValue holds, as OTLP/JSON's reader gives it (bytes as base64)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_plain(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _plain(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    return getattr(value, kind)


def decode_json(body: bytes) -> Decoded:
    try:  # pydantic-core's parser bounds the nesting (about 200 levels)
        document = from_json(body)
    except ValueError as exc:
        raise Undecodable(f"the body is not JSON ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("resourceSpans", []), list):
        raise Undecodable("the body is not an OTLP/JSON export request: resourceSpans is a list")
    decoded = Decoded()
    for resource, spans in _json_resources(document.get("resourceSpans") or [], decoded):
        for raw in spans:
            try:
                span = otlp.Span.model_validate(raw)
            except ValidationError as exc:
                decoded.reject(1, f"span {_span_id(raw)}: {describe(exc)}")
                continue
            try:
                decoded.spans.append(otlp.facts_of_span(span, resource))
            except ValueError as exc:  # it names the span
                decoded.reject(1, str(exc))
    return decoded


def _json_resources(
    resources: list[Any], decoded: Decoded
) -> Iterator[tuple[dict[str, Any], list[Any]]]:
    """Each resource's attributes and its spans as JSON; a resource or scope that cannot be
    read has its spans rejected."""
    for raw in resources:
        spans = [
            span
            for scope in (raw.get("scopeSpans") or [] if isinstance(raw, dict) else [])
            if isinstance(scope, dict)
            for span in (scope.get("spans") or [])
        ]
        try:
            resource = otlp.Resource.model_validate((raw or {}).get("resource") or {})
        except (ValidationError, AttributeError) as exc:
            reason = describe(exc) if isinstance(exc, ValidationError) else str(exc)
            decoded.reject(len(spans) or 1, f"resource: {reason}")
            continue
        yield otlp.attributes_of(resource.attributes), spans


def _span_id(raw: Any) -> str:
    value = raw.get("spanId") if isinstance(raw, dict) else None
    return str(value)[:32] if value else "(none)"
