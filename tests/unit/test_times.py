"""The time codec: every instant Python holds is stored as itself and read back in UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from data.times import EARLIEST, LATEST, decode, encode

ZONES = st.builds(timezone, st.integers(-23 * 60, 23 * 60).map(lambda m: timedelta(minutes=m)))


@given(st.datetimes(timezones=st.just(UTC)))
def test_every_instant_comes_back_as_itself(value: datetime) -> None:
    assert decode(encode(value)) == value
    assert decode(encode(value)).tzinfo is UTC


@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=ZONES))
def test_an_offset_is_the_same_instant_in_utc(value: datetime) -> None:
    assert decode(encode(value)) == value.astimezone(UTC)


def test_the_ends_of_the_range_are_instants_not_infinities() -> None:
    assert encode(EARLIEST) == (-63_082_281_600_000_000,)
    assert decode(encode(LATEST)) == LATEST
    assert decode((2**63 - 1,)) == LATEST and decode((-(2**63),)) == EARLIEST
