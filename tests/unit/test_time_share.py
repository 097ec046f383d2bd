"""A key's share of the process's time: its requests' time fills a bucket drained at its
share of real time; past the share it waits, unless no other key is asking."""

from __future__ import annotations

from similar_sessions.in_flight import InFlight
from similar_sessions.time_share import TimeShare


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_key_past_its_share_waits_until_its_bucket_drains_while_another_asks() -> None:
    clock = Clock()
    share = TimeShare(25, window_s=10, clock=clock)  # 2.5 s at once, then 0.25 s a second
    assert share.retry_after("quiet") is None  # the other key asks
    assert share.retry_after("busy") is None
    share.charge("busy", 2.5)
    assert share.retry_after("busy") is None  # exactly its share: still admitted
    share.charge("busy", 2.0)  # 4.5 s held: 2 s over, drained at 0.25 s a second
    assert share.retry_after("busy") == 8
    clock.now += 4
    assert share.retry_after("busy") == 4
    assert share.retry_after("quiet") is None  # the other key is not held back
    clock.now += 4
    assert share.retry_after("busy") is None


def test_a_key_alone_may_use_the_whole_process() -> None:
    clock = Clock()
    share = TimeShare(25, window_s=10, clock=clock)
    share.charge("busy", 60.0)
    assert share.retry_after("busy") is None  # nobody else asked within the window
    assert share.retry_after("quiet") is None
    assert share.retry_after("busy") is not None  # now somebody has
    clock.now += 11  # the other key has been quiet for longer than the window
    assert share.retry_after("busy") is None


def test_no_bound_at_100_percent_and_quiet_keys_are_forgotten() -> None:
    clock = Clock()
    unbounded = TimeShare(100, clock=clock)
    unbounded.charge("busy", 1e6)
    unbounded.retry_after("quiet")
    assert unbounded.retry_after("busy") is None and unbounded.buckets == {}
    share = TimeShare(25, window_s=10, clock=clock)
    share.charge("once", 1.0)
    clock.now += 11  # drained (1 s at 0.25 s a second) and quiet for a window
    share.charge("other", 0.1)
    assert set(share.buckets) == {"other"}


def test_a_key_holds_at_most_its_slots_and_frees_them_when_done() -> None:
    in_flight = InFlight(2)
    with in_flight.slot("k") as first, in_flight.slot("k") as second:
        with in_flight.slot("k") as third, in_flight.slot("other") as elsewhere:
            assert (first, second, third, elsewhere) == (True, True, False, True)
        assert in_flight.running["k"] == 2
    assert in_flight.running == {}
    with InFlight(0).slot("k") as unbounded:
        assert unbounded
