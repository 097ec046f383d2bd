"""After a failure-modes pass, the heap it freed is given back to the system, once, after
the grouping is made, and the grouping is what the pass made."""

from __future__ import annotations

from typing import Any

import pytest

from config import heap
from resolvers import groupings


async def test_the_heap_is_trimmed_once_after_the_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    made = object()

    async def compute() -> Any:
        calls.append("pass")
        return made

    monkeypatch.setattr(heap, "trim", lambda: calls.append("trim"))
    kept = groupings.Groupings()
    assert await kept.get("question", compute) is made
    assert await kept.get("question", compute) is made  # kept: no second pass, no trim
    assert calls == ["pass", "trim"]
