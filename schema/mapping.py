"""One mapping from a resolver's result to a GraphQL type: the type's fields, read by name."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def from_result(cls: type[T], result: object, **nested: Any) -> T:
    """An instance of the strawberry type `cls` whose fields are read, by name, from the
    result object; `nested` gives the fields that are types of their own."""
    names = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    return cls(**{n: nested[n] if n in nested else getattr(result, n) for n in names})
