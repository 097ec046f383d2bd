"""The figures of a run's samples: percentiles by nearest rank, freshness by corpus and by third
of the stream, memory by minute."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bench.common.timing import p50
from bench.ingest.probes import Fresh


def found(samples: Sequence[Fresh], corpus: str | None = None) -> list[float]:
    """Seconds to be found, of every watched session (inf: not within the time out)."""
    return [math.inf if s.found is None else s.found for s in samples if corpus in (None, s.corpus)]


def counted(samples: Sequence[Fresh], corpus: str | None = None) -> list[float]:
    return [
        math.inf if s.counted is None else s.counted for s in samples if corpus in (None, s.corpus)
    ]


def dense(samples: Sequence[Fresh]) -> list[float]:
    return [s.dense for s in samples if s.dense is not None]


def trio(values: Sequence[float]) -> str:
    return f"{values[0]:.2f}, {values[1]:.2f}, {values[2]:.2f}"


def slope_of(samples: list[tuple[float, float]]) -> float:
    """MB a minute, fitted over the second half of the samples."""
    half = samples[len(samples) // 2 :]
    if len(half) < 3:
        return math.nan
    return float(np.polyfit([t for t, _ in half], [mb for _, mb in half], 1)[0]) * 60


def by_minute(samples: list[tuple[float, float]], started: float, ended: float) -> str:
    """The median of each minute of the stream's samples (MB), so that a step (a refit's
    memory) reads apart from a climb."""
    medians = []
    minutes = max(1, int((ended - started) // 60))  # the last takes the seconds left over
    for minute in range(minutes):
        first = started + 60 * minute
        last = ended if minute == minutes - 1 else first + 60
        inside = [mb for t, mb in samples if first <= t <= last]
        medians.append(f"{p50(inside):.0f}" if inside else "-")
    return " ".join(medians)


def rank(values: Sequence[float], q: float) -> float:
    """The q-th percentile by nearest rank (inf among the values: a session never found)."""
    ranked = sorted(values)
    return ranked[max(0, math.ceil(q / 100 * len(ranked)) - 1)] if ranked else math.nan


def seconds_of(values: list[float], q: float) -> str:
    value = rank(values, q)
    if math.isnan(value):
        return "-"
    return "> 60 s (not found)" if math.isinf(value) else f"{value:.2f} s"


def verdict(ok: bool) -> str:
    return "met" if ok else "**missed**"
