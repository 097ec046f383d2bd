"""The simulated agents' exporter, timed: OTLPSpanExporter with each `export()` call, one POST
and the exporter's own retries, timed and its outcome, spans, body bytes and answers kept
(`Export`), and each conversation it carried told when it was acknowledged."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import requests
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

CONVERSATION = "gen_ai.conversation.id"


@dataclass(frozen=True, slots=True)
class Export:
    """One `export()` call: a POST (and the exporter's retries of it)."""

    started: float  # time.monotonic(): one clock for every process of the machine
    seconds: float
    ok: bool
    spans: int
    body_bytes: int  # the gzipped body of its last attempt
    answers: tuple[int, ...]  # each attempt's status (0: no answer)
    posted: float  # seconds from sending its attempts to their answers (requests' `elapsed`)


class RecordingSession(requests.Session):
    """The exporter's HTTP session, keeping each answer's status and its request's body size
    (a request that got no answer is not kept: its export fails)."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts: list[tuple[int, int, float]] = []
        self.hooks["response"].append(self.heard)

    def heard(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        body = response.request.body
        size = len(body) if isinstance(body, bytes | bytearray) else 0
        elapsed = response.elapsed.total_seconds()  # sending the request to its answer's headers
        self.attempts.append((int(response.status_code), size, elapsed))


class TimedExporter(OTLPSpanExporter):
    """OTLPSpanExporter, each `export()` timed and kept; `acked` hears of each conversation
    whose spans an export carried, with the time it was acknowledged."""

    def __init__(
        self,
        endpoint: str,
        key: str,
        sink: list[Export],
        acked: Callable[[str, float], None] | None,
    ) -> None:
        self.recording = RecordingSession()
        super().__init__(
            endpoint=endpoint,
            headers={"Authorization": f"Bearer {key}"},
            compression=Compression.Gzip,
            session=self.recording,
        )
        self.sink = sink
        self.acked = acked
        self.lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        seen = len(self.recording.attempts)
        started = time.monotonic()
        result = super().export(spans)
        ended = time.monotonic()
        attempts = self.recording.attempts[seen:]
        ok = result is SpanExportResult.SUCCESS
        with self.lock:
            self.sink.append(
                Export(
                    started,
                    ended - started,
                    ok,
                    len(spans),
                    attempts[-1][1] if attempts else 0,
                    tuple(a for a, _, _ in attempts),
                    sum(e for _, _, e in attempts),
                )
            )
        if ok and self.acked is not None:
            for conversation in {str((s.attributes or {}).get(CONVERSATION, "")) for s in spans}:
                self.acked(conversation, ended)
        return result
