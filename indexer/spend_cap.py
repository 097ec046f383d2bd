"""The daily embedding cap, as pure arithmetic: which UTC day, and what still fits."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

CAP_REACHED = "daily_cap_reached"
EMBEDDER_UNAVAILABLE = "embedder_unavailable"


def day_start(now: datetime) -> datetime:
    """Midnight UTC of the day `now` falls in: spend is counted from there."""
    utc = now.astimezone(UTC)
    return datetime(utc.year, utc.month, utc.day, tzinfo=UTC)


def next_day(now: datetime) -> datetime:
    """When a capped account resumes: the next midnight UTC."""
    return day_start(now) + timedelta(days=1)


def batch_cost(tokens: int, usd_per_1k_tokens: float) -> float:
    return tokens * usd_per_1k_tokens / 1000.0


def affordable(costs: Sequence[float], budget: float | None) -> int:
    """How many of the costs, taken in order, fit in the budget (all of them without a cap)."""
    if budget is None:
        return len(costs)
    spent, count = 0.0, 0
    for cost in costs:
        if spent + cost > budget + 1e-12:
            break
        spent += cost
        count += 1
    return count
