"""Acknowledged means durable, with the OpenTelemetry SDK's own exporter (issue 55): agents
stream GenAI spans to `serve`, which is killed with SIGKILL in the middle of the stream; every
span an `export()` was acknowledged for must be stored after.

    python -m bench.ingest.killed [--rate 500] [--kill-after 12] [--seconds 20]

On bench.ingest's database (ss_bench_ingest: run `python -m bench.ingest` first), its stream
account: a server without its indexer (its ingest rates lifted), one process of agents
offering spans of 1-8 KB at `--rate`; SIGKILL `--kill-after` seconds in (the exporters then
retry against nothing and give those batches up); then the requests stored are made into
sessions (as the indexer would) and the acknowledged spans looked for, by trace and span id."""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult

from bench.common.databases import with_database
from bench.common.serving import serve
from bench.ingest.__main__ import ALONE, STEP_AGENT_RATE
from bench.ingest.agents import Offer, Replay
from bench.ingest.exports import TimedExporter
from bench.ingest.offering import Offered, offer
from bench.ingest.world import DATABASE, INGEST_KEY, STREAM_ACCOUNT, split
from bench.quality.labelled import coding_agents, tau_bench
from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine
from data.server import resolve_url
from transfer.live import make_sessions

ACKED: list[tuple[str, str]] = []  # (trace id, span id) of every span acknowledged
LOCK = threading.Lock()


class KeepingExporter(TimedExporter):
    """TimedExporter keeping the ids of the spans each acknowledged export carried."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = super().export(spans)
        if result is SpanExportResult.SUCCESS:
            ids = [(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans]
            with LOCK:
                ACKED.extend(ids)
        return result


def replays() -> tuple[Replay, ...]:
    corpora = (tau_bench(), coding_agents())
    return tuple(Replay.of(c.name, session) for c in corpora for session in split(c)[1])


async def stored(url: str, run: str) -> set[tuple[str, str]]:
    """The run's spans stored, once the requests waiting are made into sessions."""
    engine = make_engine(url, statement_timeout_ms=0)
    try:
        await make_sessions(engine, timedelta(minutes=30), [STREAM_ACCOUNT])
        async with engine.connect() as conn:
            rows = await conn.execute(
                sa.text(
                    "SELECT trace_id, span_id FROM otlp_spans"
                    " WHERE account_id = :a AND starts_with(conversation, :run)"
                ),
                {"a": STREAM_ACCOUNT, "run": run},
            )
            return {(row.trace_id, row.span_id) for row in rows}
    finally:
        await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest.killed", description=__doc__)
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--kill-after", type=float, default=12)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args(argv)
    configure_logging("ERROR")
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # the batches given up
    settings = Settings.from_env()
    url = with_database(resolve_url(settings.database_url, settings.data_dir), DATABASE)
    proc, base = serve(url, ALONE, Path("/tmp/bench-ingest-killed.log"))
    agents = max(2, math.ceil(args.rate / STEP_AGENT_RATE))
    run = f"killed{int(time.time())}"
    asked = Offer(
        base + "/v1/traces",
        INGEST_KEY,
        args.rate,
        args.seconds,
        agents,
        replays(),
        run,
        sized=True,
        exporter=KeepingExporter,
    )
    offered: list[Offered] = []
    streaming = threading.Thread(target=lambda: offered.append(offer(asked)))
    streaming.start()
    time.sleep(args.kill_after)
    with LOCK:
        before = len(ACKED)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    streaming.join()
    exports = offered[0].exports
    found = asyncio.run(stored(url, run))
    acked = set(ACKED)
    print(f"spans ended by the agents: {offered[0].spans_ended:,}")
    print(
        f"exports: {len(exports)}, acknowledged {sum(e.ok for e in exports)}, "
        f"given up {sum(not e.ok for e in exports)}"
    )
    print(f"spans acknowledged: {len(acked):,} ({before:,} of them before the kill)")
    print(f"acknowledged spans stored after the kill: {len(acked & found):,} of {len(acked):,}")
    print(f"spans stored of this run that were never acknowledged: {len(found - acked):,}")
    return 0 if acked <= found else 1


if __name__ == "__main__":
    sys.exit(main())
