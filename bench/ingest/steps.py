"""Serve alone, a step of offered spans: its figures, and whether it held (bench.ingest)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bench.common.timing import pct
from bench.ingest.exports import Export
from bench.ingest.offering import Offered

HOLD_SHARE = 0.95  # a step holds when this share of its offered rate is acknowledged
HOLD_P95_S = 1.0  # with the acknowledgement p95 under this


def answers(exports: Sequence[Export]) -> Counter[int]:
    return Counter(a for e in exports for a in e.answers)


def refusals(counts: Counter[int]) -> tuple[int, int, int]:
    """(429s, 5xx, other non-200s, no answer counted with them)."""
    too_many = counts.get(429, 0)
    server = sum(n for code, n in counts.items() if code >= 500)
    other = sum(n for code, n in counts.items() if code not in (200, 429) and code < 500)
    return too_many, server, other


@dataclass(frozen=True)
class Step:
    rate: int
    offered: float  # spans/s the agents ended
    ended: int
    acked: int
    achieved: float  # acknowledged spans/s, the step's start to its last acknowledgement
    ack_p50_ms: float
    ack_p95_ms: float
    posted_p95_ms: float
    posts: int
    spans_per_post: float
    kb_per_post: float
    refused: tuple[int, int, int]
    failed: int
    serve_cpu: float  # share of one core the server used over the step
    postgres_cpu: float  # and PostgreSQL
    agents_cpu: float  # and the agents' processes together
    load: tuple[float, float, float]
    handled_p95_ms: float = math.nan  # the server's own handling, from its histogram (bucket)

    @property
    def held(self) -> bool:
        return (
            self.achieved >= HOLD_SHARE * self.rate
            and self.ack_p95_ms < HOLD_P95_S * 1000
            and self.refused[0] == 0
            and self.refused[1] == 0
            and self.failed == 0
        )

    def why_not(self) -> str:
        reasons = []
        if self.offered < HOLD_SHARE * self.rate:
            reasons.append(f"the agents offered only {self.offered:.0f}/s (client-bound)")
        if self.achieved < HOLD_SHARE * self.rate:
            reasons.append(f"acknowledged {self.achieved / self.rate:.0%} of the rate")
        if self.ack_p95_ms >= HOLD_P95_S * 1000:
            reasons.append(f"ack p95 {self.ack_p95_ms:.0f} ms")
        if self.refused[0] or self.refused[1]:
            reasons.append(f"{self.refused[0]} 429, {self.refused[1]} 5xx")
        if self.failed:
            reasons.append(f"{self.failed} exports failed")
        return "; ".join(reasons) or "-"

    def line(self) -> str:
        return (
            f"| {self.rate:,} | {self.offered:,.0f} | {self.achieved:,.0f} "
            f"({self.achieved / self.rate:.0%}) | {self.acked:,} of {self.ended:,} "
            f"| {self.ack_p50_ms:.0f} / {self.ack_p95_ms:.0f} ({self.posted_p95_ms:.0f}; "
            f"<= {self.handled_p95_ms:.0f}) "
            f"| {self.posts} | {self.spans_per_post:.0f} | {self.kb_per_post:.0f} "
            f"| {self.refused[0]} / {self.refused[1]} / {self.refused[2]} | {self.failed} "
            f"| {self.serve_cpu:.0%} / {self.postgres_cpu:.0%} / {self.agents_cpu:.0%} "
            f"| {self.load[0]:.2f} "
            f"| {'yes' if self.held else 'no: ' + self.why_not()} |"
        )


def step_of(
    rate: int,
    started: float,
    seconds: float,
    results: Sequence[Offered],
    cpu_s: tuple[float, float],
    load: tuple[float, float, float],
    handled_p95_s: float = math.nan,
) -> Step:
    """A step's figures. Its acknowledged rate: the spans acknowledged by HOLD_P95_S after the
    offering ended, over the offering's time (the agents' final flush is sent as it ends: a
    server that keeps up has answered it by then); each process of agents offers for
    `seconds` from when it began, however long it took to start."""
    exports = [e for r in results for e in r.exports]
    ok = [e for e in exports if e.ok]
    acked = sum(e.spans for e in ok)
    in_time = sum(
        e.spans
        for r in results
        for e in r.exports
        if e.ok and e.started + e.seconds <= (r.started or started) + seconds + HOLD_P95_S
    )
    started = min((r.started for r in results if r.started), default=started)
    last = max((e.started + e.seconds for e in ok), default=started + seconds)
    return Step(
        rate,
        sum(r.spans_ended for r in results) / seconds,
        sum(r.spans_ended for r in results),
        acked,
        in_time / seconds,
        pct([e.seconds * 1000 for e in exports], 50),
        pct([e.seconds * 1000 for e in exports], 95),
        pct([e.posted * 1000 for e in exports], 95),
        len(exports),
        float(np.mean([e.spans for e in exports])) if exports else math.nan,
        float(np.mean([e.body_bytes for e in exports])) / 1024 if exports else math.nan,
        refusals(answers(exports)),
        len(exports) - len(ok),
        cpu_s[0] / max(last - started, seconds),
        cpu_s[1] / max(last - started, seconds),
        sum(r.cpu_s for r in results) / max(last - started, seconds),
        load,
        handled_p95_s * 1000,
    )
