"""What each comparison reports: a span with its lookup path and probe count, a span per
phase of its batch (the lookups with the plan they followed, the wider retry, the exact
check, the nearest passages, the ranking, the details), and the comparison and
degraded-reason counters (no account, session or content in any label)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import trace

from observability.metrics import COMPARISONS, DEGRADED_REASONS
from resolvers.comparison.results import SimilarResult
from resolvers.rules.lookup_plan import LookupPlan

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


@contextmanager
def phase(name: str, plan: LookupPlan | None = None) -> Iterator[None]:
    """A span `similar_sessions.<name>` around one phase of a batch's comparison; a lookup
    phase carries the plan it followed."""
    with tracer.start_as_current_span(f"similar_sessions.{name}") as span:
        if plan is not None:
            span.set_attribute("similar_sessions.plan.caller", plan.caller.value)
            span.set_attribute("similar_sessions.plan.exact", plan.exact)
            span.set_attribute("similar_sessions.plan.routed_exact", plan.routed)
            span.set_attribute("similar_sessions.plan.pooled", plan.pooled)
            span.set_attribute("similar_sessions.plan.ef_search", plan.ef_search)
            span.set_attribute("similar_sessions.plan.check_budget_ms", plan.check_budget_ms)
        yield
