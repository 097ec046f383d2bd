"""The daily cap's arithmetic (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from data.model_identity import ModelIdentity
from indexer import spend_cap
from tests.support.indexing import WORDS


def test_budget_arithmetic() -> None:
    now = datetime(2026, 3, 1, 23, 59, tzinfo=UTC)
    assert spend_cap.day_start(now) == datetime(2026, 3, 1, tzinfo=UTC)
    assert spend_cap.next_day(now) == datetime(2026, 3, 2, tzinfo=UTC)
    assert spend_cap.affordable([0.4, 0.4, 0.4], 1.0) == 2
    assert spend_cap.affordable([0.4, 0.4], None) == 2
    assert spend_cap.affordable([0.4], 0.0) == 0
    assert spend_cap.affordable([0.0, 0.0], 0.0) == 2
    assert ModelIdentity.parse(str(WORDS)) == WORDS
