"""A page's batch cut into parts, one a connection: consecutive, in key order, at least 4
comparisons a part, never more parts than connections."""

from __future__ import annotations

import pytest

from resolvers.loaders import PART_MIN_COMPARISONS, parts


@pytest.mark.parametrize(
    ("size", "connections", "sizes"),
    [
        (1, 2, [1]),
        (7, 2, [7]),
        (8, 2, [4, 4]),
        (9, 2, [5, 4]),
        (20, 2, [10, 10]),
        (20, 3, [7, 7, 6]),
        (50, 4, [13, 13, 13, 11]),
        (11, 8, [6, 5]),
        (20, 1, [20]),
    ],
)
def test_a_batch_is_cut_into_consecutive_parts(
    size: int, connections: int, sizes: list[int]
) -> None:
    keys = list(range(size))
    cut = parts(keys, connections)
    assert [len(part) for part in cut] == sizes
    assert [key for part in cut for key in part] == keys
    assert len(cut) == 1 or min(sizes) >= PART_MIN_COMPARISONS
