"""bench.ingest's simulated agents export one after another, as independent agents do, unless
asked to start at once (`--aligned-agents`)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from bench.ingest.agents import Offer, Replay
from bench.ingest.exports import TimedExporter
from bench.ingest.offering import offer, start_offsets

TURNS = (
    ("user", "text", "my flight to Boston was cancelled, please rebook me on the next one"),
    ("assistant", "text", "I found HAT123 tomorrow morning; shall I book it for you?"),
)
FIRST_EXPORTS: dict[str, float] = {}  # each agent's first export, by its service name
LOCK = threading.Lock()


class Recording(TimedExporter):
    """Sends nothing: notes when each agent's batch processor first exported."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        now = time.monotonic()
        agent = str(spans[0].resource.attributes["service.name"])
        with LOCK:
            FIRST_EXPORTS.setdefault(agent, now)
        return SpanExportResult.SUCCESS


def test_the_starts_spread_over_one_schedule_delay_unless_aligned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "4000")

    assert start_offsets(4) == [0.0, 1.0, 2.0, 3.0]
    assert start_offsets(4, aligned=True) == [0.0] * 4


def test_the_agents_first_exports_come_one_after_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "1200")  # read by each batch processor too
    FIRST_EXPORTS.clear()
    replay = Replay("tau-bench", "airline/1", "task-1", TURNS * 50)
    asked = Offer(
        "http://127.0.0.1:9/v1/traces", "k", 40, 3.0, 4, (replay,), "t", exporter=Recording
    )

    offer(asked)

    firsts = [FIRST_EXPORTS[f"bench-ingest-agent-{n}"] for n in range(4)]
    gaps = [later - earlier for earlier, later in itertools.pairwise(firsts)]
    assert all(gap > 0.1 for gap in gaps), gaps  # 0.3 s apart as planned; at once: ~0
