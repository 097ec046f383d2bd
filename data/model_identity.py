"""Model identities: `<provider>:<model>@<dimensions>`; equal identities are comparable."""

from __future__ import annotations

import re
from dataclasses import dataclass

_IDENTITY = re.compile(
    r"^(?P<provider>[a-z0-9][a-z0-9_.-]*):(?P<model>[A-Za-z0-9][A-Za-z0-9_.\-/]*)@(?P<dims>[1-9][0-9]{0,4})$"
)
MAX_DIMENSIONS = 16000  # pgvector's limit for the vector type


class InvalidModelIdentity(ValueError):
    """A string that is not `<provider>:<model>@<dimensions>`."""


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    provider: str
    model: str
    dimensions: int

    @classmethod
    def parse(cls, text: str) -> ModelIdentity:
        match = _IDENTITY.match(text)
        if match is None:
            raise InvalidModelIdentity(
                f"model identity {text!r} is not of the form <provider>:<model>@<dimensions>"
            )
        dims = int(match["dims"])
        if dims > MAX_DIMENSIONS:
            raise InvalidModelIdentity(
                f"model identity {text!r} has more than {MAX_DIMENSIONS} dimensions"
            )
        return cls(match["provider"], match["model"], dims)

    @classmethod
    def of(cls, provider: str, model: str, dimensions: int) -> ModelIdentity:
        return cls.parse(f"{provider}:{model}@{dimensions}")

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}@{self.dimensions}"

    def sql_literal(self) -> str:
        """The identity as a SQL string literal: the grammar admits no quote or backslash."""
        return f"'{self}'"
