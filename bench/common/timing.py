"""Timing and its figures: the milliseconds awaited work took, medians and percentiles."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (linear between the nearest values); NaN of nothing."""
    return float(np.percentile(values, q)) if values else float("nan")


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def clocked(work: Awaitable[T]) -> tuple[float, T]:
    """Milliseconds the awaited work took, and its result."""
    t0 = time.perf_counter()
    out = await work
    return (time.perf_counter() - t0) * 1000, out
