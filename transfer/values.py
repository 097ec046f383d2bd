"""Values PostgreSQL and pgvector can hold and compare: text without NUL, 32-bit integers,
times within the years 1-9999 in UTC, finite single-precision vectors with a direction."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

import numpy as np
from pydantic import AfterValidator, AwareDatetime, BeforeValidator, Field

INT4_MAX = 2**31 - 1
FLOAT4_MAX = float(np.finfo(np.float32).max)
# pgvector compares in single precision: a squared length outside these bounds overflows or
# vanishes there, and cosine distance to such a vector is NaN (which `1 - NaN >= x` lets
# through every similarity threshold).
MIN_SQUARED_LENGTH = 1e-30
MAX_SQUARED_LENGTH = 1e36


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL character, which PostgreSQL text cannot hold")
    return value


def _in_utc_range(value: datetime) -> datetime:
    try:
        value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is outside the years 1 to 9999 once converted to UTC") from None
    return value


_ISO_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")


def _iso_text(value: object) -> object:
    """A time as the contract writes it: ISO 8601 text (its zone checked by AwareDatetime),
    not a number, which pydantic would read as seconds or milliseconds since 1970."""
    if isinstance(value, datetime):  # made in Python, not read from a file
        return value
    if isinstance(value, str) and _ISO_DATE_TIME.match(value):
        return value
    shown = repr(value) if isinstance(value, str | int | float) else type(value).__name__
    raise ValueError(
        f"{shown[:40]} is not a time: write ISO 8601 with a zone, as 2026-01-31T09:30:00Z"
    )


# The most characters of one turn or chunk an import takes: 50 times the longest turn of the
# coding-agents corpus (20,000), some 400 chunks. One turn of 60 MiB had been accepted, and
# every indexing pass then failed on it, for every account (issue 59).
MAX_TURN_CHARS = 1_000_000


def _indexable(value: str) -> str:
    if len(value) > MAX_TURN_CHARS:
        raise ValueError(
            f"{len(value):,} characters; a turn or chunk holds at most {MAX_TURN_CHARS:,} "
            "(MAX_TURN_CHARS): split it into several"
        )
    return value


Text = Annotated[str, AfterValidator(_no_nul)]
TurnText = Annotated[str, AfterValidator(_indexable), AfterValidator(_no_nul)]
Time = Annotated[AwareDatetime, BeforeValidator(_iso_text), AfterValidator(_in_utc_range)]
Int4 = Annotated[int, Field(ge=0, le=INT4_MAX)]


def vector_problem(values: list[float]) -> str | None:
    """Why pgvector could not store or compare this vector as single precision, or None."""
    array = np.asarray(values, dtype=np.float64)
    too_large = np.flatnonzero(np.abs(array) > FLOAT4_MAX)
    if too_large.size:
        i = int(too_large[0])
        return f"embedding.{i}: {values[i]!r} is outside single precision (±{FLOAT4_MAX:.4g})"
    single = array.astype(np.float32).astype(np.float64)
    squared = float(np.dot(single, single))
    if squared == 0.0:
        return "embedding: a zero vector has no direction (cosine distance to it is NaN)"
    if not MIN_SQUARED_LENGTH <= squared <= MAX_SQUARED_LENGTH:
        return (
            f"embedding: its length {squared**0.5:.3g} is outside what single precision "
            f"compares ({MIN_SQUARED_LENGTH**0.5:g} to {MAX_SQUARED_LENGTH**0.5:g})"
        )
    return None
