"""One mapping from a resolver's result to a GraphQL type: the type's fields, read by name."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def from_result(cls: type[T], result: object, **nested: Any) -> T:
    """An instance of the strawberry type `cls` whose fields are read, by name, from the
    result object; `nested` gives the fields that are types of their own."""
    return cls(**{n: nested[n] if n in nested else getattr(result, n) for n in init_fields(cls)})


_FIELDS: dict[type, tuple[str, ...]] = {}


def init_fields(cls: type) -> tuple[str, ...]:
    """The fields a strawberry type is built from, read once per type."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    return names
