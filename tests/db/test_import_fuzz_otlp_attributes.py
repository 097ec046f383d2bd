"""OTLP attribute values, generated: every shape OTLP/JSON writes is read as the value it
holds and a wrong shape is refused naming where; any value where the reader looks (on the
resource, an event or the span) is read or refused by line; JSON nested in an attribute
string is read up to MAX_JSON_DEPTH and refused past it. Nothing raises."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic_core import from_json

from tests.db.test_import_fuzz import JSON_VALUES
from tests.support.import_edges import READER_FUZZ, nested_json
from transfer.errors import ErrorLog
from transfer.formats import FORMATS
from transfer.formats.anyvalue import INT64_MAX, INT64_MIN, AnyValue
from transfer.formats.genai import MAX_JSON_DEPTH
from transfer.import_format import describe


def _scalar_values() -> st.SearchStrategy[tuple[Any, Any]]:
    """(OTLP/JSON AnyValue, the value it holds) of each scalar shape; bytes hold their text."""
    ints = st.integers(INT64_MIN, INT64_MAX)
    base64_text = st.binary(max_size=8).map(lambda b: base64.b64encode(b).decode())
    return st.one_of(
        st.text(max_size=10).map(lambda s: ({"stringValue": s}, s)),
        st.booleans().map(lambda b: ({"boolValue": b}, b)),
        ints.map(lambda i: ({"intValue": i}, i)),
        ints.map(lambda i: ({"intValue": str(i)}, i)),
        st.floats(allow_nan=False).map(lambda f: ({"doubleValue": f}, f)),
        base64_text.map(lambda t: ({"bytesValue": t}, t)),
        st.just(({}, None)),
    )


def _containers(children: st.SearchStrategy[tuple[Any, Any]]) -> st.SearchStrategy[Any]:
    keyed = st.lists(st.tuples(st.text(max_size=4), children), max_size=3, unique_by=lambda p: p[0])
    return st.one_of(
        st.lists(children, max_size=3).map(
            lambda items: ({"arrayValue": {"values": [v for v, _ in items]}}, [h for _, h in items])
        ),
        keyed.map(
            lambda pairs: (
                {"kvlistValue": {"values": [{"key": k, "value": v} for k, (v, _) in pairs]}},
                {k: h for k, (_, h) in pairs},
            )
        ),
    )


ANY_VALUES = st.recursive(_scalar_values(), _containers, max_leaves=10)


@READER_FUZZ
@given(pair=ANY_VALUES)
def test_every_shape_of_attribute_value_is_read_as_the_value_it_holds(pair: Any) -> None:
    written, held = pair
    assert AnyValue.model_validate(from_json(json.dumps(written))).plain() == held


def _replaced_somewhere(value: Any, data: st.DataObject) -> Any:
    """The value with one node of its tree set to any JSON value."""
    if not isinstance(value, dict | list) or not value or data.draw(st.integers(0, 3)) == 0:
        return data.draw(JSON_VALUES)
    key = data.draw(st.sampled_from(list(value) if isinstance(value, dict) else range(len(value))))
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[key] = _replaced_somewhere(value[key], data)
    return copy


@READER_FUZZ
@given(pair=ANY_VALUES, data=st.data())
def test_a_wrong_shape_is_refused_naming_where(pair: Any, data: st.DataObject) -> None:
    written = _replaced_somewhere(pair[0], data)
    try:
        AnyValue.model_validate(written).plain()
    except ValidationError as refused:
        assert describe(refused)


# Where the reader looks for attributes, and what it makes of them.
READ_KEYS = [
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.tool.call.id",
    "gen_ai.tool.name",
    "gen_ai.operation.name",
    "gen_ai.event.content",
    "service.name",
]
EVENTS = ["gen_ai.user.message", "gen_ai.choice", "gen_ai.tool.message"]


def _document(key: str, value: Any, event: str) -> str:
    """A trace of one tool-executing span whose attribute `key` is `value`: on the resource,
    on an event of the span, or on the span itself."""
    attribute = {"key": key, "value": value}
    span: dict[str, Any] = {
        **{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7"},
        **{"startTimeUnixNano": "1735689600000000000", "endTimeUnixNano": 1735689601000000000},
        "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "f"}}],
    }
    resource: dict[str, Any] = {"attributes": []}
    if key == "service.name":
        resource["attributes"].append(attribute)
    elif key == "gen_ai.event.content":
        span["events"] = [{"name": event, "timeUnixNano": "1", "attributes": [attribute]}]
    else:
        span["attributes"].append(attribute)
    return json.dumps(
        {"resourceSpans": [{"resource": resource, "scopeSpans": [{"spans": [span]}]}]}
    )


def read_otlp(*documents: str) -> tuple[list[Any], ErrorLog]:
    errors = ErrorLog("fuzz.otlp.jsonl")
    numbered = [(n, d.encode("utf-8", "surrogateescape")) for n, d in enumerate(documents, 1)]
    records = list(FORMATS["otlp"](numbered, errors, uuid.uuid4()))
    assert all(str(e).startswith(f"fuzz.otlp.jsonl:{e.line}: ") for e in errors.kept)
    return records, errors


@READER_FUZZ
@given(
    key=st.sampled_from(READ_KEYS),
    event=st.sampled_from(EVENTS),
    pair=ANY_VALUES,
    data=st.data(),
)
def test_any_attribute_value_where_the_reader_looks_reads_or_is_refused(
    key: str, event: str, pair: Any, data: st.DataObject
) -> None:
    value = pair[0] if data.draw(st.booleans()) else _replaced_somewhere(pair[0], data)
    read_otlp(_document(key, value, event))


JSON_KEYS = [
    k
    for k in READ_KEYS
    if k.endswith(("messages", "instructions", "arguments", "result", "content"))
]


@READER_FUZZ
@given(key=st.sampled_from(JSON_KEYS), event=st.sampled_from(EVENTS), nested=nested_json())
def test_json_in_an_attribute_is_read_up_to_the_limit_and_refused_past_it(
    key: str, event: str, nested: tuple[str, int]
) -> None:
    text, depth = nested
    _, errors = read_otlp(_document(key, {"stringValue": text}, event))
    too_deep = [e for e in errors.kept if "JSON nested deeper than" in e.reason]
    assert bool(too_deep) == (depth > MAX_JSON_DEPTH)
    if depth <= MAX_JSON_DEPTH:
        assert errors.total == 0, errors.kept
