"""One mapping from a resolver's result to the API: the fields a GraphQL type declares, read
from the result by name, for GraphQL (`from_result`) and REST (`declared`) alike."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from strawberry.types import get_object_definition
from strawberry.types.base import StrawberryList, StrawberryOptional
from strawberry.types.lazy_type import LazyType
from strawberry.types.private import is_private
from strawberry.types.union import StrawberryUnion

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


_DECLARED: dict[type, tuple[tuple[str, type | None], ...]] = {}


def declared(cls: type) -> tuple[tuple[str, type | None], ...]:
    """The API fields a strawberry type is built from (not its private ones), in order, each
    with its own GraphQL object type when it has one (a list's or an optional's inner type),
    else None; read once."""
    found = _DECLARED.get(cls)
    if found is None:
        types = {f.python_name: f.type for f in get_object_definition(cls, strict=True).fields}
        found = _DECLARED[cls] = tuple(
            (n, _object_type(types[n], cls, n))
            for n in init_fields(cls)
            if not is_private(types[n])
        )
    return found


def _object_type(annotation: Any, cls: type, name: str) -> type | None:
    while isinstance(annotation, StrawberryList | StrawberryOptional):
        annotation = annotation.of_type
    if isinstance(annotation, LazyType | StrawberryUnion):  # no one type to read it by
        raise TypeError(f"{cls.__name__}.{name}: a lazy or union type has no declared fields")
    if isinstance(annotation, type) and get_object_definition(annotation) is not None:
        return annotation
    return None
