"""OTLP's attribute values as OTLP/JSON writes them (the protobuf JSON mapping of `AnyValue`):
at most one of stringValue, boolValue, intValue (a number or a decimal string), doubleValue
(a number, or a string such as "NaN"), arrayValue `{values: [AnyValue]}`, kvlistValue
`{values: [{key, value}]}`, bytesValue (base64); none set is an empty value. Any other shape
is a ValidationError naming where it is."""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    model_validator,
)

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_URL_SAFE = str.maketrans("-_", "+/")
VALUE_NAMES = (  # AnyValue's one-of, as OTLP/JSON names them
    "stringValue",
    "boolValue",
    "intValue",
    "doubleValue",
    "arrayValue",
    "kvlistValue",
    "bytesValue",
)


class OtlpModel(BaseModel):
    """OTLP/JSON's messages: fields by their JSON names; fields this reader does not use
    are ignored (newer exporters add some)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, allow_inf_nan=False)


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number here (boolValue holds booleans)")
    return value


def _base64(text: str) -> str:
    """Base64 text, standard or URL-safe, padded or not, as the protobuf JSON mapping reads it."""
    try:
        base64.b64decode(text.translate(_URL_SAFE) + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise ValueError("a bytesValue is base64 text") from None
    return text


Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX), BeforeValidator(_not_a_boolean)]
Double = Annotated[float, Field(allow_inf_nan=True), BeforeValidator(_not_a_boolean)]
Base64Text = Annotated[StrictStr, AfterValidator(_base64)]


class AnyValue(OtlpModel):
    string_value: StrictStr | None = Field(default=None, alias="stringValue")
    bool_value: StrictBool | None = Field(default=None, alias="boolValue")
    int_value: Int64 | None = Field(default=None, alias="intValue")
    double_value: Double | None = Field(default=None, alias="doubleValue")
    array_value: ArrayValue | None = Field(default=None, alias="arrayValue")
    kvlist_value: KeyValueList | None = Field(default=None, alias="kvlistValue")
    bytes_value: Base64Text | None = Field(default=None, alias="bytesValue")

    @model_validator(mode="before")
    @classmethod
    def _one_value(cls, data: Any) -> Any:
        """At most one value set (null is none); cheap for the usual one key."""
        if not isinstance(data, dict) or len(data.keys() & VALUE_NAMES) < 2:
            return data
        named = [name for name in VALUE_NAMES if data.get(name) is not None]
        if len(named) > 1:
            raise ValueError(f"an attribute value holds one value, not {' and '.join(named)}")
        return data

    def plain(self) -> Any:
        """The value it holds (bytes as their base64 text), or None when empty."""
        if self.string_value is not None:
            return self.string_value
        if self.array_value is not None:
            return [v.plain() for v in self.array_value.values or []]
        if self.kvlist_value is not None:
            return {kv.key: kv.plain() for kv in self.kvlist_value.values or []}
        scalars = (self.bool_value, self.int_value, self.double_value, self.bytes_value)
        return next((value for value in scalars if value is not None), None)


class KeyValue(OtlpModel):
    key: StrictStr
    value: AnyValue | None = None

    def plain(self) -> Any:
        return None if self.value is None else self.value.plain()


class ArrayValue(OtlpModel):
    values: list[AnyValue] | None = None


class KeyValueList(OtlpModel):
    values: list[KeyValue] | None = None


AnyValue.model_rebuild()
