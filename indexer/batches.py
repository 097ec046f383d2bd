"""What one embedding batch did, and how it shows in traces and metrics (no text, no key)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from opentelemetry import trace

from data.model_identity import ModelIdentity
from observability import metrics


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """What one batch did: chunks embedded, the cap reached, or the provider's failure (its
    chunks' attempts counted, `failed` of them now marked so)."""

    embedded: int = 0
    capped: bool = False
    tokens: int = 0
    cost_usd: float = 0.0
    error: str | None = None
    attempted: int = 0
    failed: int = 0
    skipped: int = 0  # chunks whose vector had no direction: `skipped`, never stored
    sessions: frozenset[UUID] = frozenset()  # the sessions of the chunks it embedded


def observe_batch(span: trace.Span, identity: ModelIdentity, outcome: BatchOutcome) -> None:
    """The batch's span attributes and the indexer's metrics (no text, no key)."""
    span.set_attribute("similar_sessions.chunks_embedded", outcome.embedded)
    span.set_attribute("similar_sessions.tokens", outcome.tokens)
    span.set_attribute("similar_sessions.cost_usd", outcome.cost_usd)
    if outcome.error is not None:
        span.set_attribute("similar_sessions.error", outcome.error)
        span.set_status(trace.StatusCode.ERROR, outcome.error)
        metrics.INDEXER_BATCHES.labels("failed").inc()
        metrics.INDEXER_CHUNKS.labels("failed").inc(outcome.failed)
    if outcome.skipped:
        metrics.INDEXER_CHUNKS.labels("skipped").inc(outcome.skipped)
    if outcome.capped:
        span.set_attribute("similar_sessions.cap_reached", True)
        metrics.INDEXER_BATCHES.labels("capped").inc()
    if outcome.embedded:
        provider, model = identity.provider, identity.model
        metrics.INDEXER_BATCHES.labels("embedded").inc()
        metrics.INDEXER_CHUNKS.labels("embedded").inc(outcome.embedded)
        metrics.INDEXER_TOKENS.labels(provider, model).inc(outcome.tokens)
        metrics.INDEXER_SPEND.labels(provider, model).inc(outcome.cost_usd)
