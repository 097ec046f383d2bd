"""What a run of bench.ingest recorded: its stream's samples and figures, and the run around it
(the world it streamed into, the steps of serve alone, the machine's load)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.common.timing import pct
from bench.ingest.exports import Export
from bench.ingest.figures import found, rank
from bench.ingest.offering import Offered
from bench.ingest.probes import Fresh
from bench.ingest.steps import Step
from bench.ingest.world import World


@dataclass(frozen=True)
class Stream:
    offered: Offered
    seconds: float
    idle: list[float]
    during: list[float]
    refused: str  # how many, and why
    fresh: list[Fresh]
    deeper: int  # found past the twin's first page
    asked: int  # similarSessions the watching asked
    rss_start: tuple[float, float]
    rss_end: tuple[float, float]
    serve_samples: list[tuple[float, float]]
    indexer_samples: list[tuple[float, float]]
    cpu: tuple[float, ...]  # serve, indexer, PostgreSQL: CPU seconds during the stream
    load_before: tuple[float, float, float]
    load_during: tuple[float, float, float]
    started: float
    ended: float
    backlog: list[tuple[float, str, int]]  # (time, the lexical model, passages waiting)
    refits: list[float]
    # the server's own answer to a POST, from its histogram (to the bucket): p50, p95 seconds
    handled: tuple[float, float] = (math.nan, math.nan)
    # of it, the wait for a seat in the account's fair queue (its histogram): p50, p95 seconds
    waited: tuple[float, float] = (math.nan, math.nan)
    # the stream account's own similarSessions: ms idle, ms during the stream, refused
    own: tuple[list[float], list[float], str] = ([], [], "0")

    @property
    def exports(self) -> list[Export]:
        return self.offered.exports

    @property
    def acked(self) -> int:
        return sum(e.spans for e in self.exports if e.ok)

    @property
    def not_found(self) -> int:
        """The sessions watched that their twin's list did not hold within the time out."""
        return sum(1 for f in self.fresh if f.found is None)

    def ack_ms(self, q: float) -> float:
        return pct([e.seconds * 1000 for e in self.exports], q)

    def posted_ms(self, q: float) -> float:
        return pct([e.posted * 1000 for e in self.exports], q)

    def line(self) -> str:
        return (
            f"stream: {self.acked / self.seconds:.0f} acknowledged spans/s, ack p50 "
            f"{self.ack_ms(50):.0f} ms p95 {self.ack_ms(95):.0f} ms, {len(self.fresh)} sessions "
            f"watched, found p95 {rank(found(self.fresh), 95):.2f} s"
        )


@dataclass(frozen=True)
class Run:
    world: World
    stream: Stream
    steps: list[Step]
    alone_rss: tuple[float, float]  # serve alone: its first sample and its peak (MB)
    load_start: tuple[float, float, float]
    load_end: tuple[float, float, float]

    @property
    def highest(self) -> int:
        """The highest rate of serve alone's steps that held (0: none held, or none ran)."""
        return max((st.rate for st in self.steps if st.held), default=0)
