"""`--format otlp`: an OpenTelemetry OTLP/JSON trace export (JSON Lines of
`{"resourceSpans": ...}` as the collector's file exporter writes, or one such document).
One trace is one session; its spans, in time order, become replay turns (transfer/formats/
genai.py reads the `gen_ai.*` attributes and events). A trace's spans may be spread over
the file, so the file's GenAI spans are held until it is read; other spans keep only times."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from pydantic import Field, ValidationError
from pydantic_core import from_json

from transfer.errors import ErrorLog
from transfer.formats.anyvalue import KeyValue, OtlpModel
from transfer.formats.conversation import title_of
from transfer.formats.genai import GenAISpan, replay_turns
from transfer.formats.replay import Session, records_of, session_uuid
from transfer.import_format import Record, describe

STATUS_ERROR = (2, "STATUS_CODE_ERROR")


class Event(OtlpModel):
    time: int = Field(default=0, alias="timeUnixNano", ge=0)
    name: str = ""
    attributes: list[KeyValue] = Field(default_factory=list)


class Status(OtlpModel):
    code: int | str = 0


class Span(OtlpModel):
    trace_id: str = Field(alias="traceId", pattern=r"^[0-9a-fA-F]{32}$")
    span_id: str = Field(alias="spanId", pattern=r"^[0-9a-fA-F]{16}$")
    parent_span_id: str = Field(default="", alias="parentSpanId")
    name: str = ""
    start: int = Field(alias="startTimeUnixNano", ge=0)
    end: int = Field(default=0, alias="endTimeUnixNano", ge=0)
    attributes: list[KeyValue] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    status: Status | None = None


class ScopeSpans(OtlpModel):
    spans: list[Span] = Field(default_factory=list)


class Resource(OtlpModel):
    attributes: list[KeyValue] = Field(default_factory=list)


class ResourceSpans(OtlpModel):
    resource: Resource | None = None
    scope_spans: list[ScopeSpans] = Field(default_factory=list, alias="scopeSpans")


class TracesData(OtlpModel):
    resource_spans: list[ResourceSpans] = Field(alias="resourceSpans")


def _attributes(pairs: list[KeyValue], prefix: str = "") -> dict[str, Any]:
    return {kv.key: kv.plain() for kv in pairs if kv.key.startswith(prefix)}


@dataclass
class Trace:
    """What the file says about one trace so far."""

    line: int
    start: int
    end: int = 0
    failed: bool = False
    service: str = ""
    root: str = ""
    spans: list[GenAISpan] = field(default_factory=list)


def read(
    numbered: Iterable[tuple[int, bytes]], errors: ErrorLog, account_id: UUID | None
) -> Iterator[tuple[int, Record]]:
    """Every trace of the file, in order of first appearance, as a session and its turns."""
    traces: dict[str, Trace] = {}
    for number, document in _documents(numbered, errors):
        try:
            _collect(number, document, traces)
        except ValueError as exc:  # a ValidationError too
            reason = describe(exc) if isinstance(exc, ValidationError) else str(exc)
            errors.add(number, reason)
    for trace_id, trace in traces.items():
        try:
            for record in _records(trace_id, trace, account_id):
                yield trace.line, record
        except ValueError as exc:
            errors.add(trace.line, f"trace {trace_id}: {exc}")


def _documents(
    numbered: Iterable[tuple[int, bytes]], errors: ErrorLog
) -> Iterator[tuple[int, Any]]:
    """JSON Lines of documents; a file whose first line is not a whole document is read as
    one (pretty-printed) document."""
    lines, first = iter(numbered), True
    for number, raw in lines:
        try:
            yield number, from_json(raw)
        except ValueError as exc:
            if not first:
                errors.add(number, f"malformed JSON ({exc})")
                continue
            rest = b"\n".join([raw, *(r for _, r in lines)])
            try:
                yield number, from_json(rest)
            except ValueError as whole:
                errors.add(number, f"malformed JSON ({whole})")
            return
        first = False


def _collect(number: int, document: Any, traces: dict[str, Trace]) -> None:
    data = TracesData.model_validate(document)
    for resource_spans in data.resource_spans:
        resource = _attributes(
            resource_spans.resource.attributes if resource_spans.resource else []
        )
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                trace = traces.setdefault(span.trace_id.lower(), Trace(number, span.start))
                trace.start, trace.end = min(trace.start, span.start), max(trace.end, span.end)
                trace.failed |= span.status is not None and span.status.code in STATUS_ERROR
                trace.service = trace.service or str(resource.get("service.name") or "")
                if not span.parent_span_id:
                    trace.root = trace.root or span.name
                attributes = _attributes(span.attributes, "gen_ai.")
                events = [
                    (e.time, e.name, _attributes(e.attributes))
                    for e in span.events
                    if e.name.startswith("gen_ai.")
                ]
                if attributes or events:
                    trace.spans.append(GenAISpan(span.start, span.end, attributes, events))


def _records(trace_id: str, trace: Trace, account_id: UUID | None) -> list[Record]:
    if account_id is None:
        raise ValueError("an OTLP trace names no account: pass --account ACCOUNT_ID")
    timed = [(turn, _time(at)) for turn, at in replay_turns(trace.spans)]
    session = Session(
        id=session_uuid(account_id, f"otlp:{trace_id}"),
        account_id=account_id,
        title=title_of([t for t, _ in timed]) or trace.root or trace_id,
        source_type="otlp",
        source_id=trace_id,
        reference=" ".join(p for p in (trace.service, trace.root) if p),
        status="failed" if trace.failed else "completed",
        started_at=_time(trace.start),
        last_activity_at=_time(max(trace.end, trace.start)),
    )
    return records_of(session, timed)


def _time(nanos: int) -> datetime:
    try:
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=nanos // 1000)
    except OverflowError:
        raise ValueError(f"time {nanos} ns is past the year 9999") from None
