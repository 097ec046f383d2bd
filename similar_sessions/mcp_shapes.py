"""A GraphQL result type as the MCP edge answers it: the selection set that asks GraphQL for
exactly the fields the answer holds, and the JSON Schema of that answer (a tool's output
schema), both derived from the fields the type declares (schema/mapping.py)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any
from uuid import UUID

from strawberry.types import get_object_definition
from strawberry.types.base import StrawberryList, StrawberryOptional
from strawberry.types.enum import StrawberryEnumDefinition
from strawberry.utils.str_converters import to_camel_case

from schema.mapping import declared

EMPTY: Mapping[type, str] = {}
_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    UUID: {"type": "string", "format": "uuid"},
}


def selection(shape: type, left_out: frozenset[str], extra: Mapping[type, str] = EMPTY) -> str:
    """The GraphQL selection set of the fields `shape` declares, less `left_out`, nested
    types selected whole; `extra` adds a selection's text to a type's (a resolver's field)."""
    parts = []
    for name, inner in declared(shape):
        if name in left_out:
            continue
        parts.append(to_camel_case(name))
        if inner is not None:
            parts.append(selection(inner, left_out, extra))
    if shape in extra:
        parts.append(extra[shape])
    return "{ " + " ".join(parts) + " }"


def output_schema(shape: type, left_out: frozenset[str]) -> dict[str, Any]:
    """The JSON Schema of `shape` as the edge writes it (answers.to_json): every declared
    field, less `left_out`, required."""
    types = {f.python_name: f for f in get_object_definition(shape, strict=True).fields}
    properties: dict[str, Any] = {}
    for name, _ in declared(shape):
        if name in left_out:
            continue
        properties[name] = _schema_of(types[name].type, left_out)
        if types[name].description:
            properties[name]["description"] = types[name].description
    return {"type": "object", "properties": properties, "required": list(properties)}


def _schema_of(annotation: Any, left_out: frozenset[str]) -> dict[str, Any]:
    if isinstance(annotation, StrawberryOptional):
        inner = _schema_of(annotation.of_type, left_out)
        if inner["type"] == "object" or "enum" in inner:
            return {"anyOf": [inner, {"type": "null"}]}
        return {**inner, "type": [inner["type"], "null"]}  # a client checks it in one step
    if isinstance(annotation, StrawberryList):
        return {"type": "array", "items": _schema_of(annotation.of_type, left_out)}
    if isinstance(annotation, StrawberryEnumDefinition):
        return {"type": "string", "enum": [v.value for v in annotation.values]}
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return {"type": "string", "enum": [m.value for m in annotation]}
    if isinstance(annotation, type) and get_object_definition(annotation) is not None:
        return output_schema(annotation, left_out)
    if annotation in _SCALARS:
        return dict(_SCALARS[annotation])
    if getattr(annotation, "__name__", "") == "datetime":
        return {"type": "string", "format": "date-time"}
    raise TypeError(f"no JSON Schema for {annotation!r}")
