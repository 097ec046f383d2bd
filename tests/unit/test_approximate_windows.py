"""When an approximate lookup's window lets it vouch for its answer (pure, no database)."""

from __future__ import annotations

import pytest

from resolvers.rules.lookup_path import Doubt, vouches_for, why_not_vouched
from values.lookups import ScanWindow


def window(
    distances: list[float],
    *,
    scanned: int = 100,
    farthest: float = 0.6,
    tied: int = 1,
    hits: int | None = None,
) -> ScanWindow:
    """The window of a lookup that kept these distances (the nearest first)."""
    kept = len(distances) if hits is None else hits
    return ScanWindow(scanned, farthest, min(distances), max(distances), tied, kept)


ORDINARY = [0.2 + 0.005 * n for n in range(25)]  # 25 nearest, the window ending well past them


def test_an_ordinary_window_vouches_for_its_answer() -> None:
    assert vouches_for(window(ORDINARY), 100, 25)


@pytest.mark.parametrize(
    ("case", "seen", "why"),
    [
        (
            "the scan stopped before the over-fetch",
            window(ORDINARY, scanned=60),
            Doubt.SCAN_ENDED_EARLY,
        ),
        ("nothing came back", None, Doubt.NO_WINDOW),
        ("nothing finite came back", ScanWindow(100, None, None, None, 100, 0), Doubt.NO_WINDOW),
        ("fewer than 25 are hits", window(ORDINARY, hits=24), Doubt.FEWER_HITS_THAN_KEPT),
        ("eleven identical vectors", window(ORDINARY, tied=11), Doubt.TIED_GROUP),
        (
            "near-ties run past the window's end",
            window(ORDINARY, farthest=0.3205),
            Doubt.WINDOW_ENDS_AT_ITS_LAST_ROW,
        ),
        (
            "the whole window in a thin shell",
            window([0.5 + 1e-4 * n for n in range(25)], farthest=0.509),
            Doubt.WINDOW_CROWDED,
        ),
    ],
)
def test_a_window_that_cannot_vouch_is_unsure_and_says_why(
    case: str, seen: ScanWindow | None, why: Doubt
) -> None:
    assert not vouches_for(seen, 100, 25), case
    assert why_not_vouched(seen, 100, 25) is why, case


def test_a_window_that_vouches_has_no_doubt() -> None:
    assert why_not_vouched(window(ORDINARY), 100, 25) is None


def test_ten_identical_vectors_fit_one_graph_node() -> None:
    assert vouches_for(window(ORDINARY, tied=10), 100, 25)


def test_without_over_fetch_the_window_end_says_nothing() -> None:
    assert vouches_for(window(ORDINARY, scanned=25, farthest=ORDINARY[-1]), 25, 25)
