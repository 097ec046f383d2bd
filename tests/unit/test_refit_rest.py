"""A new lexical fit rests as a merge does: once a staged fit is swapped in, the next is due
only after the fit has been served REFIT_REST times as long as it was staged
(indexer/fitting.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from data.fits import StoredFit
from indexer.fitting import REFIT_REST, refit_due, rest_left

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def fit(staged_s: float | None, swapped_s_ago: float, sessions: int = 100) -> StoredFit:
    swapped_at = NOW - timedelta(seconds=swapped_s_ago)
    if staged_s is None:  # installed at once, `swapped_s_ago` ago
        return StoredFit("lexical", sessions, b"", swapped_at)
    fitted_at = swapped_at - timedelta(seconds=staged_s)
    return StoredFit("lexical", sessions, b"", fitted_at, swapped_at=swapped_at)


@pytest.mark.parametrize(
    ("staged_s", "swapped_s_ago", "left_s"),
    [
        (None, 0.0, 0.0),  # installed at once: no rest
        (400.0, 0.0, REFIT_REST * 400.0),
        (400.0, REFIT_REST * 400.0 - 30.0, 30.0),
        (400.0, REFIT_REST * 400.0, 0.0),
        (400.0, 10 * 400.0, 0.0),
        (0.0, 0.0, 0.0),  # staged and swapped in one pass
    ],
)
def test_a_swapped_fit_rests_thrice_its_staging(
    staged_s: float | None, swapped_s_ago: float, left_s: float
) -> None:
    assert rest_left(fit(staged_s, swapped_s_ago), NOW) == timedelta(seconds=left_s)


def test_a_grown_account_is_refitted_once_its_fit_is_old_enough_and_rested() -> None:
    rule = (25, 600)  # 25% more sessions, at most every 600 s
    rested = fit(100.0, REFIT_REST * 100.0 + 600.0)
    assert refit_due(rested, 125, rule, NOW) and not refit_due(rested, 124, rule, NOW)
    tired = fit(400.0, REFIT_REST * 400.0 - 60.0)  # old enough (1,540 s since staged)
    assert not refit_due(tired, 200, rule, NOW)
    young = fit(None, 599.0)  # installed at once, 599 s ago
    assert not refit_due(young, 200, rule, NOW) and refit_due(fit(None, 601.0), 200, rule, NOW)
