"""OTLP attribute values: each shape OTLP/JSON writes read as the value it holds, each other
shape refused naming where it is; JSON nesting measured without recursion."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from transfer.formats.anyvalue import AnyValue
from transfer.formats.genai import MAX_JSON_DEPTH, nested_deeper, structured
from transfer.import_format import describe


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ({"stringValue": "s"}, "s"),
        ({"boolValue": False}, False),
        ({"intValue": "-12"}, -12),
        ({"intValue": 12}, 12),
        ({"doubleValue": 0.5}, 0.5),
        ({"doubleValue": "-Infinity"}, float("-inf")),
        ({"bytesValue": "aGk="}, "aGk="),
        ({"bytesValue": "-_8"}, "-_8"),  # URL-safe, unpadded
        ({"arrayValue": {"values": [{"stringValue": "a"}, {"arrayValue": {}}]}}, ["a", []]),
        ({"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "1"}}]}}, {"k": 1}),
        ({"kvlistValue": {"values": None}}, {}),
        ({}, None),
        ({"stringValue": None, "boolValue": True}, True),
        ({"futureValue": 1}, None),  # a shape newer than this reader: empty, as OTLP says
    ],
)
def test_every_shape_is_read_as_the_value_it_holds(value: dict[str, Any], plain: Any) -> None:
    assert AnyValue.model_validate(value).plain() == plain


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"arrayValue": [1]}, "arrayValue: Input should be a valid dictionary"),
        ({"arrayValue": {"values": [[1]]}}, "arrayValue.values.0: Input should be a valid dict"),
        ({"kvlistValue": "s"}, "kvlistValue: Input should be a valid dictionary"),
        ({"kvlistValue": {"values": [1]}}, "kvlistValue.values.0: Input should be a valid dict"),
        ({"kvlistValue": {"values": [{"value": {}}]}}, "kvlistValue.values.0.key: Field required"),
        ({"stringValue": 1}, "stringValue: Input should be a valid string"),
        ({"boolValue": "true"}, "boolValue: Input should be a valid boolean"),
        ({"intValue": True}, "intValue: a boolean is not a number here"),
        ({"intValue": "1.5"}, "intValue: Input should be a valid integer"),
        ({"intValue": str(2**63)}, "intValue: Input should be less than or equal to"),
        ({"doubleValue": "x"}, "doubleValue: Input should be a valid number"),
        ({"bytesValue": "a!"}, "bytesValue: a bytesValue is base64 text"),
        ({"stringValue": "a", "intValue": 1}, "holds one value, not stringValue and intValue"),
    ],
)
def test_every_other_shape_is_refused_naming_where(value: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValidationError) as refused:
        AnyValue.model_validate(value)
    assert reason in describe(refused.value)


@pytest.mark.parametrize(
    ("text", "deeper"),
    [
        ("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, False),
        ("[" * (MAX_JSON_DEPTH + 1), True),  # not JSON, and refused all the same
        ("[" * MAX_JSON_DEPTH + '"' + "[" * 3000, False),  # brackets in a string are text
        ('["\\"' + "[" * 3000 + '"]', False),  # an escaped quote does not end the string
        ('{"a": "\\\\"' + ', "b": ' + "[" * 3000, True),  # an escaped backslash does
        ("[]" * 10_000, False),
    ],
)
def test_nesting_is_measured_outside_strings(text: str, deeper: bool) -> None:
    assert nested_deeper(text, MAX_JSON_DEPTH) is deeper


def test_json_too_deep_is_refused_naming_the_attribute() -> None:
    with pytest.raises(ValueError, match=f"^gen_ai.x: JSON nested deeper than {MAX_JSON_DEPTH}"):
        structured("[" * 3000, "gen_ai.x")
    assert structured("[not json", "gen_ai.x") == "[not json"
