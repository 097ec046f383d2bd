"""Times as PostgreSQL stores them, exactly: every instant from EARLIEST to LATEST (UTC).

asyncpg writes Python's datetime.min and datetime.max as -infinity and infinity, and reads
infinity back as a naive datetime.max: Go's zero time (0001-01-01T00:00:00Z), which real
exporters write, became an infinity no answer could serialise. Each connection therefore
exchanges `timestamptz` as microseconds since 2000-01-01 UTC (asyncpg's tuple format), so
every instant Python can hold is stored as itself and read back aware, in UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

EARLIEST = datetime.min.replace(tzinfo=UTC)  # 0001-01-01T00:00:00+00:00
LATEST = datetime.max.replace(tzinfo=UTC)  # 9999-12-31T23:59:59.999999+00:00
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
# How PostgreSQL marks its infinities in the tuple format; a row written before this codec
# (migration 0008 rewrites them) reads as the end of the range it stood for.
_INFINITY = 2**63 - 1
_MINUS_INFINITY = -(2**63)


def encode(value: datetime) -> tuple[int]:
    """An aware datetime as microseconds since 2000-01-01 UTC (a naive one is taken as UTC)."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return ((aware - _PG_EPOCH) // _MICROSECOND,)


def decode(value: tuple[int]) -> datetime:
    """The stored instant, in UTC; an infinity as the end of the range it stands for."""
    (microseconds,) = value
    if microseconds >= _INFINITY:
        return LATEST
    if microseconds <= _MINUS_INFINITY:
        return EARLIEST
    try:
        return _PG_EPOCH + timedelta(microseconds=microseconds)
    except OverflowError:  # a year PostgreSQL holds and Python does not (BC, or past 9999)
        return EARLIEST if microseconds < 0 else LATEST


async def exchange_times_exactly(connection: Any) -> None:
    """Register the codec on one asyncpg connection."""
    await connection.set_type_codec(
        "timestamptz", schema="pg_catalog", encoder=encode, decoder=decode, format="tuple"
    )
