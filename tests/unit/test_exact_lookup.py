"""The exact lookup's cut, in Python: what a probe keeps of the distances measured apart is
what the statements keep (finite, at or above the floor, nearest first, ties by chunk id)."""

from __future__ import annotations

from uuid import UUID

from data.exact_lookup import PROBE, Asked, close_enough, in_window, kept, session_accepted


def chunk(n: int) -> UUID:
    return UUID(int=n)


def test_a_nan_a_removed_chunk_and_one_below_the_floor_are_never_kept() -> None:
    measured = [
        (float("nan"), chunk(1), chunk(100)),
        (None, chunk(2), chunk(100)),
        (0.7, chunk(3), chunk(100)),  # similarity 0.3, below 0.35
        (0.65, chunk(4), chunk(101)),  # similarity 0.35: at the floor, kept
    ]
    assert [h.chunk_id for h in kept(5, measured, 0.35, 25)] == [chunk(4)]
    assert not close_enough(float("nan"), 0.0) and not close_enough(None, 0.0)


def test_the_nearest_are_kept_first_ties_by_chunk_id_and_cut_to_per_probe() -> None:
    measured = [
        (0.2, chunk(9), chunk(100)),
        (0.1, chunk(7), chunk(101)),
        (0.2, chunk(3), chunk(102)),
        (0.3, chunk(1), chunk(103)),
    ]
    hits = kept(2, measured, 0.0, 3)
    assert [h.chunk_id for h in hits] == [chunk(7), chunk(3), chunk(9)]
    assert [h.session_id for h in hits] == [chunk(101), chunk(102), chunk(100)]
    assert {h.probe for h in hits} == {2} and abs(hits[0].similarity - 0.9) < 1e-12


def test_the_filter_reads_what_was_asked_from_where_the_statement_holds_it() -> None:
    assert in_window() == "(p.cutoff IS NULL OR c.occurred_at >= p.cutoff)"
    assert Asked.of_row("p") == PROBE
    pool_row = session_accepted(Asked.of_row("q"), session="c")
    assert "(q.statuses IS NULL OR c.status = ANY(q.statuses))" in pool_row
    assert "c.started_at < q.started_before" in pool_row
    assert "started_at" not in session_accepted(Asked.of_row("l"), started=False)
