"""Structured logs: one JSON object a line on stderr, quiet (WARNING) by default.

Our own lines (structlog) and the standard library's records (uvicorn, SQLAlchemy, the
openai SDK) go through the same formatter: each carries its level, logger, time, the
request id bound for the request it belongs to, and the trace and span ids when traced."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from opentelemetry import trace
from structlog.typing import EventDict, Processor


def add_trace_ids(_: Any, __: str, event: EventDict) -> EventDict:
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        event["trace_id"] = format(context.trace_id, "032x")
        event["span_id"] = format(context.span_id, "016x")
    return event


SHARED: list[Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    add_trace_ids,
]
# Loggers of libraries that would otherwise print lines of their own.
ADOPTED = ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi")


def configure_logging(level: str = "WARNING") -> None:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.WARNING
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=SHARED,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric)
    for name in ADOPTED:
        adopted = logging.getLogger(name)
        adopted.handlers, adopted.propagate = [], True
        adopted.setLevel(logging.NOTSET)
    # At INFO SQLAlchemy logs every statement with its parameters, which hold content.
    logging.getLogger("sqlalchemy").setLevel(max(numeric, logging.WARNING))
    structlog.configure(
        processors=[*SHARED, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
