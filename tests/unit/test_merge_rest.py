"""An own index's tail: when a merge is worth it, and when the indexer's merge in the
background waits for the index to rest (data/own_index_tails.py)."""

from __future__ import annotations

import uuid

import pytest

from data.model_identity import ModelIdentity
from data.own_index_tails import MERGE_REST, MERGE_SHARE, Tail
from similar_sessions.cli import _tail_line

IDENTITY = ModelIdentity.of("local", "words", 8)


def tail(
    rows: int, up_s: float = 0.0, build_s: float | None = None, replaced: bool = False
) -> Tail:
    return Tail(uuid.uuid4(), IDENTITY, rows, 100_000, 1_000, True, up_s, build_s, replaced)


def test_a_tail_is_due_past_its_share_of_the_index_whatever_the_rest() -> None:
    share = int(MERGE_SHARE * 100_000)
    assert not tail(share).due and tail(share + 1).due
    assert tail(share + 1, up_s=0.0, build_s=60.0).due  # due; the background waits


@pytest.mark.parametrize(
    ("up_s", "build_s", "rested", "rests_s"),
    [
        (0.0, None, True, 0.0),  # an index built before its build was timed
        (0.0, 10.0, False, MERGE_REST * 10.0),
        (MERGE_REST * 10.0 - 1.0, 10.0, False, 1.0),
        (MERGE_REST * 10.0, 10.0, True, 0.0),
        (1e6, 10.0, True, 0.0),
    ],
)
def test_an_index_rests_its_builds_time_over(
    up_s: float, build_s: float | None, rested: bool, rests_s: float
) -> None:
    made = tail(6_000, up_s, build_s)
    assert made.rested is rested
    assert made.rests_s == pytest.approx(rests_s)


def test_the_import_says_when_the_indexer_merges_a_due_tail() -> None:
    assert "not due for a merge yet" in _tail_line(tail(10))
    assert _tail_line(tail(6_000)).endswith(
        "due, the indexer merges it (or `similar-sessions merge-indexes`)"
    )
    resting = _tail_line(tail(6_000, up_s=10.0, build_s=20.0))
    assert "once its index has rested 50 s more" in resting
    assert "leaves it to the swap" in _tail_line(tail(6_000, replaced=True))


def test_a_tail_is_held_for_the_swap_until_it_is_as_large_as_its_index() -> None:
    assert tail(99_999, replaced=True).held_for_swap
    assert not tail(100_000, replaced=True).held_for_swap
    assert not tail(99_999).held_for_swap
