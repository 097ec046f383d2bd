"""`--format otlp`: an OpenTelemetry OTLP/JSON trace export (JSON Lines of
`{"resourceSpans": ...}` as the collector's file exporter writes, or one such document), and
the OTLP/JSON messages the live receiver decodes too. One conversation is one session, as
transfer/formats/spans.py maps it: a conversation's spans may be spread over the file (and
over traces), so the file's spans are held, as their facts, until it is read."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from pydantic import Field, ValidationError
from pydantic_core import from_json

from config.settings import default_of
from transfer.errors import ErrorLog
from transfer.formats.anyvalue import KeyValue, OtlpModel
from transfer.formats.spans import (
    STATUS_ERROR,
    SpanFacts,
    facts_of,
    key_of,
    session_records,
    trace_keys,
)
from transfer.import_format import Record, describe


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


def attributes_of(pairs: list[KeyValue], prefix: str = "") -> dict[str, Any]:
    return {kv.key: kv.plain() for kv in pairs if kv.key.startswith(prefix)}


def facts_of_span(span: Span, resource: dict[str, Any]) -> SpanFacts:
    """The mapping's facts of one OTLP/JSON span (transfer/formats/spans.py); a ValueError
    naming the span and what cannot be read in it."""
    try:
        return _facts(span, resource)
    except ValueError as exc:
        raise ValueError(f"span {span.span_id}: {exc}") from None


def _facts(span: Span, resource: dict[str, Any]) -> SpanFacts:
    return facts_of(
        (span.trace_id, span.span_id, span.parent_span_id),
        span.name,
        (span.start, span.end),
        span.status is not None and span.status.code in STATUS_ERROR,
        attributes_of(span.attributes),
        [(e.time, e.name, attributes_of(e.attributes)) for e in span.events],
        resource,
    )


def read(
    numbered: Iterable[tuple[int, bytes]], errors: ErrorLog, account_id: UUID | None
) -> Iterator[tuple[int, Record]]:
    """Every conversation of the file, in order of first appearance, as a session and its
    turns (the mapping of transfer/formats/spans.py, as the live receiver's)."""
    spans: list[tuple[int, SpanFacts]] = []
    for number, document in _documents(numbered, errors):
        try:
            spans += [(number, facts) for facts in _collect(document)]
        except ValueError as exc:  # a ValidationError too
            reason = describe(exc) if isinstance(exc, ValidationError) else str(exc)
            errors.add(number, reason)
    keys = trace_keys((facts for _, facts in spans), {})
    conversations: dict[str, tuple[int, list[SpanFacts]]] = {}
    for number, facts in spans:
        conversations.setdefault(key_of(facts, keys), (number, []))[1].append(facts)
    now, idle = datetime.now(UTC), timedelta(seconds=default_of("session_idle_s"))
    for key, (line, members) in conversations.items():
        try:
            if account_id is None:
                raise ValueError("an OTLP trace names no account: pass --account ACCOUNT_ID")
            for record in session_records(account_id, key, members, now, idle):
                yield line, record
        except ValueError as exc:
            errors.add(line, f"conversation {key}: {exc}")


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


def _collect(document: Any) -> list[SpanFacts]:
    data = TracesData.model_validate(document)
    found: list[SpanFacts] = []
    for resource_spans in data.resource_spans:
        resource = attributes_of(
            resource_spans.resource.attributes if resource_spans.resource else []
        )
        for scope in resource_spans.scope_spans:
            found += [facts_of_span(span, resource) for span in scope.spans]
    return found
