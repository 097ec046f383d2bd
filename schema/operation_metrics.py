"""GraphQL operation durations by operation type (never the operation's name: callers
choose it freely)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from strawberry.extensions import SchemaExtension

from observability.metrics import GRAPHQL_DURATION


class OperationMetrics(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            try:
                kind = self.execution_context.operation_type.value
            except Exception:  # a document that did not parse has no type
                kind = "unknown"
            GRAPHQL_DURATION.labels(kind).observe(time.perf_counter() - started)
