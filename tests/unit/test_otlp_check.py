"""The receiver's check of an export request (transfer/formats/otlp_wire.py `check`) answers
what the indexer's decoding of it will accept and reject, with the same first reason, while
it reads only the spans it cannot be sure of: a span whose texts are plainly storable is
counted without its turns being read."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from transfer.formats.genai import MAX_JSON_DEPTH
from transfer.formats.otlp_wire import PROTOBUF, check, decode
from transfer.values import MAX_TURN_CHARS

T0 = 1_700_000_000 * 10**9
DEEP = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)


def text(value: str) -> AnyValue:
    return AnyValue(string_value=value)


def span(attributes: dict[str, AnyValue], **fields: object) -> Span:
    rng = random.Random(json.dumps(str(attributes)) + str(fields))
    made = Span(
        trace_id=rng.randbytes(16),
        span_id=rng.randbytes(8),
        name="chat model",
        start_time_unix_nano=T0,
        end_time_unix_nano=T0 + 10**9,
        attributes=[KeyValue(key=k, value=v) for k, v in attributes.items()],
    )
    for name, value in fields.items():
        setattr(made, name, value)
    return made


def chat(content: str, conversation: str = "c") -> Span:
    """A model call sending one user message with this content."""
    messages = [{"role": "user", "parts": [{"type": "text", "content": content}]}]
    return span(
        {
            "gen_ai.operation.name": text("chat"),
            "gen_ai.conversation.id": text(conversation),
            "gen_ai.input.messages": text(json.dumps(messages)),
        }
    )


def tool_result(result: str) -> Span:
    return span(
        {
            "gen_ai.operation.name": text("execute_tool"),
            "gen_ai.tool.name": text("shell"),
            "gen_ai.tool.call.result": text(result),
        }
    )


def event_content(content: str) -> Span:
    """A span with a `gen_ai.user.message` event whose content (a JSON object) holds the
    string `content`, which is read as JSON again when it looks like JSON."""
    return event_body(json.dumps({"content": content}))


def event_body(body: str) -> Span:
    made = span({"gen_ai.operation.name": text("chat")})
    event = made.events.add(time_unix_nano=T0, name="gen_ai.user.message")
    event.attributes.append(KeyValue(key="gen_ai.event.content", value=text(body)))
    return made


def body(spans: list[Span], resource: dict[str, AnyValue] | None = None) -> bytes:
    resource_spans = ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])
    for key, value in (resource or {}).items():
        resource_spans.resource.attributes.append(KeyValue(key=key, value=value))
    return bytes(ExportTraceServiceRequest(resource_spans=[resource_spans]).SerializeToString())


def agree(raw: bytes) -> tuple[int, int, str | None, int]:
    """check's counts, once they are seen equal to decode's."""
    checked, decoded = check(raw, PROTOBUF), decode(raw, PROTOBUF)
    assert (checked.accepted, checked.rejected, checked.reason) == (
        len(decoded.spans),
        decoded.rejected,
        decoded.reason,
    )
    return checked.accepted, checked.rejected, checked.reason, checked.read_whole


def test_plain_spans_are_counted_without_being_read() -> None:
    nested = text(json.dumps({"role": "user", "content": "[" * 40 + "]" * 40}))
    structured = AnyValue(
        kvlist_value=KeyValueList(values=[KeyValue(key="role", value=text("user"))])
    )
    spans = [
        chat("where is my refund? {not json} [1, 2]"),
        tool_result(json.dumps({"rows": [[i, {"id": i}] for i in range(100)]})),
        event_content("hello"),
        span({"gen_ai.input.messages": nested, "gen_ai.x": structured}),
    ]
    assert agree(body(spans)) == (4, 0, None, 0)


def test_each_refusal_is_found_and_named_as_decoding_names_it() -> None:
    zero_parent = span({}, parent_span_id=bytes(8))
    cases = {
        "NUL": chat("a\x00b"),
        "escaped NUL": chat("\\u0000 is text here, but the next is not: \x00"),
        "NUL escaped in JSON": span({"gen_ai.input.messages": text('[{"content": "\\u0000"}]')}),
        "too deep": span({"gen_ai.input.messages": text(DEEP)}),
        "too deep inside a string": event_content(DEEP),
        "brackets escaped inside a string": event_body(
            '{"content": "' + DEEP.replace("[", "\\u005B") + '"}'
        ),
        "too long": tool_result("x" * (MAX_TURN_CHARS + 1)),
        "short trace id": span({}, trace_id=bytes(range(1, 16))),
        "zero span id": span({}, span_id=bytes(8)),
        "zero parent": zero_parent,
    }
    for name, refused in cases.items():
        accepted, rejected, reason, read = agree(body([chat("fine"), refused, chat("also")]))
        assert (accepted, rejected, read) == (2, 1, 1), name
        assert reason is not None and reason.startswith("span "), name


def test_a_resource_holding_a_nul_has_its_spans_read() -> None:
    raw = body([chat("fine"), chat("fine too", "d")], {"service.name": text("bot\x00")})
    accepted, rejected, reason, read = agree(raw)
    assert (accepted, rejected, read) == (0, 2, 2)
    assert reason is not None and "NUL" in reason


def test_what_only_looks_refusable_is_read_and_accepted() -> None:
    spans = [
        span({"gen_ai.x": text("u0000 and u005b are words here")}),
        span({"service.note": text("a NUL outside GenAI content: \x00")}),
        tool_result('"' + "[" * 3000),  # brackets in an unclosed string are text
    ]
    assert agree(body(spans)) == (3, 0, None, 3)


FRAGMENTS = st.sampled_from(
    [
        "a",
        " ",
        "[",
        "]",
        "{",
        "}",
        '"',
        "\\",
        ",",
        ":",
        "\\u0000",
        "\\\\u0000",
        "\\u005b",
        "\\u007B",
        "\x00",
        "[" * 70,
        "]" * 70,
        '"' + "[" * 70 + '"',
        '{"content": "',
        '{"role": "user", "content": ',
        '{"type": "text", "content": "',
    ]
)
CONTENT = st.lists(FRAGMENTS, max_size=12).map("".join)


@given(contents=st.lists(st.tuples(st.integers(0, 3), CONTENT), min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_check_agrees_with_decoding_on_texts_made_of_tricky_pieces(
    contents: list[tuple[int, str]],
) -> None:
    makers = [
        chat,
        tool_result,
        event_content,
        lambda c: span({"gen_ai.input.messages": text(c), "gen_ai.conversation.id": text(c)}),
    ]
    agree(body([makers[kind](content) for kind, content in contents]))
