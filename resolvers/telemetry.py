"""What each comparison reports: a span with its lookup path and probe count, and the
comparison and degraded-reason counters (no account, session or content in any label)."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry import trace

from observability.metrics import COMPARISONS, DEGRADED_REASONS
from resolvers.comparison.results import SimilarResult

tracer = trace.get_tracer(__name__)


def report_comparisons(
    results: Sequence[SimilarResult | None], started_ns: int, ended_ns: int
) -> None:
    """One span per comparison, timed as the batch it ran in, and the counters."""
    for result in results:
        if result is None:  # a missing session: nothing was compared
            continue
        path = "none" if result.lookup_path is None else result.lookup_path.value
        COMPARISONS.labels(path).inc()
        for reason in result.degraded.reasons:
            DEGRADED_REASONS.labels(reason).inc()
        span = tracer.start_span("similar_sessions.comparison", start_time=started_ns)
        span.set_attribute("similar_sessions.lookup_path", path)
        span.set_attribute("similar_sessions.probe_count", result.probe_chunks)
        span.set_attribute("similar_sessions.embedded_chunks", result.embedded_chunks)
        span.set_attribute("similar_sessions.results", len(result.results))
        span.set_attribute("similar_sessions.degraded_reasons", list(result.degraded.reasons))
        span.end(end_time=ended_ns)
