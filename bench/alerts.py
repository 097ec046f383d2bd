"""Alerts on live ingest (issue 58): how long after the acknowledgement of the third failed
session of a new kind its webhook arrives, and what evaluating an account costs the worker.

    python -m bench.alerts [--trials 8] [--interval 5] [--gap 1.0] [--out FILE]

A fresh database (ss_bench_alerts, on the server the CLI uses) holds one account on the
lexical model with 40 completed sessions of other words, indexed, a key to ingest and a
`new` rule (3 sessions in 24 h) pointing at a receiver on loopback (allowed by
SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS). `similar-sessions serve` of this checkout runs with
`index --watch` beside it, SIMILAR_SESSIONS_ALERT_INTERVAL_S=`--interval`, and the lexical
fit refitted on every pass that grew the account (a new kind's words are otherwise unknown
to the fit until its next refit: SIMILAR_SESSIONS_LEXICAL_REFIT_* below). Each trial posts
three failed sessions of a new kind over OTLP/HTTP, `--gap` seconds apart, and measures from
the third POST's 200 to the receiver's reading of the alert. The worker's cost is read from
its `alert_evaluated` log lines (wall and CPU per evaluated account). Writes
bench/results/alerts-live.md (unless `--out`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import shlex
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from alerts import manage
from alerts.rules import RuleSpec
from alerts.urls import AllowedHosts
from bench.common.databases import recreate
from bench.common.paths import result
from bench.common.serving import serve
from config.logs import configure_logging
from config.settings import Settings
from data.engine import make_engine
from data.migrate import migrate
from data.server import resolve_url
from indexer.commands import config_from, registry_for
from indexer.embedders import DEFAULT_MODEL
from indexer.worker import index_once
from transfer.importing import import_lines

DATABASE = "ss_bench_alerts"
ACCOUNT = uuid.UUID("5a1e0000-0000-4000-8000-00000000a1e7")
INGEST_KEY = "sk-bench-alerts-ingest"
VIEW_KEY = "sk-bench-alerts-view"
GROUPS = """{ failureModes(windowDays: 1, limit: 20) {
  groups { isNew representative { title } seenBefore { title } } } }"""
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SERVER_LOG = Path("/tmp/bench-alerts-server.log")
# Each trial's kind is told in six words of its own (no two trials share one, nor any word
# with the history), so that every trial's three sessions make a group of their own.
_KINDS_TEXT = """
gateway ledger invoice quota mirror socket schema cache shard token cursor webhook replica
checksum bucket daemon kernel packet proxy router tunnel vault widget zipper anchor beacon
cobalt dynamo ember falcon glacier harbor igloo jasper kettle lantern meadow nectar orchid
pepper quartz raven saffron tundra umber velvet willow yonder
"""
WORDS = _KINDS_TEXT.split()


@dataclass
class Receiver:
    """Alerts as they arrive: (arrival time, webhook-id, body)."""

    port: int = 0
    got: list[tuple[float, str, dict[str, Any]]] = field(default_factory=list)


@contextmanager
def receiving() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            arrived = time.time()
            receiver.got.append((arrived, self.headers["webhook-id"], json.loads(body)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield receiver
    finally:
        server.shutdown()


def background(rng: random.Random) -> list[str]:
    """The account, its keys, and 40 completed sessions of words no trial uses."""
    lines: list[dict[str, Any]] = [
        {
            "type": "account",
            "id": str(ACCOUNT),
            "name": "bench alerts",
            "features": ["similarSessions"],
            "api_keys": [
                {"key": INGEST_KEY, "scopes": ["ingest_runtime_sessions"]},
                {"key": VIEW_KEY, "scopes": ["view_runtime_sessions"]},
            ],
            "embedding": embedding(),
        }
    ]
    start = datetime.now(UTC) - timedelta(days=3)
    for n in range(40):
        sid = str(uuid.uuid4())
        at = start - timedelta(hours=n)
        city = rng.choice(["Oslo", "Lima", "Perth", "Quito", "Dakar", "Hanoi", "Riga", "Sucre"])
        lines.append(
            {
                "type": "session",
                "id": sid,
                "account_id": str(ACCOUNT),
                "title": f"Weather {n}",
                "source_type": "agent",
                "source_id": f"w{n}",
                "reference": f"w{n}",
                "status": "completed",
                "started_at": at.isoformat(),
                "last_activity_at": (at + timedelta(minutes=5)).isoformat(),
            }
        )
        for o, (role, text) in enumerate(
            (("user", f"Forecast for {city} day {n}?"), ("assistant", f"Sunny in {city}."))
        ):
            lines.append(
                {
                    "type": "activity",
                    "id": str(uuid.uuid4()),
                    "runtime_session_id": sid,
                    "ordinal": o,
                    "occurred_at": (at + timedelta(minutes=o)).isoformat(),
                    "role": role,
                    "kind": "message",
                    "content": text,
                    "api_usage_id": None,
                }
            )
    return [json.dumps(line) for line in lines]


def embedding() -> dict[str, Any]:
    """The import format's embedding setting of the default (lexical) model."""
    provider, rest = str(DEFAULT_MODEL).split(":", 1)
    model, dims = rest.rsplit("@", 1)
    return {
        "enabled": True,
        "provider": provider,
        "model": model,
        "dimensions": int(dims),
        "scope": "full",
        "daily_cap_usd": None,
    }


def _kv(key: str, value: Any) -> KeyValue:
    text = value if isinstance(value, str) else json.dumps(value)
    return KeyValue(key=key, value=AnyValue(string_value=text))


def failed_session(title: str, words: list[str], n: int) -> bytes:
    """One export request: a conversation whose one model call tells of the failure, under an
    `invoke_agent` root ending in error (a failed session), as protobuf."""
    trace, root = uuid.uuid4().bytes, uuid.uuid4().bytes[:8]
    conversation = str(uuid.uuid4())
    now = time.time_ns()
    ask = [{"role": "user", "parts": [{"type": "text", "content": title}]}]
    told = f"{words[3]} {words[4]} {words[5]} {words[0]} {words[1]} {words[2]} {words[4]} {n}"
    reply = [{"role": "assistant", "parts": [{"type": "text", "content": told}]}]
    chat = Span(
        trace_id=trace,
        span_id=uuid.uuid4().bytes[:8],
        parent_span_id=root,
        name="chat model",
        start_time_unix_nano=now - 2_000_000_000,
        end_time_unix_nano=now - 1_000_000_000,
        attributes=[
            _kv("gen_ai.operation.name", "chat"),
            _kv("gen_ai.conversation.id", conversation),
            _kv("gen_ai.input.messages", ask),
            _kv("gen_ai.output.messages", reply),
        ],
    )
    top = Span(
        trace_id=trace,
        span_id=root,
        name="invoke_agent support-bot",
        start_time_unix_nano=now - 3_000_000_000,
        end_time_unix_nano=now - 500_000_000,
        attributes=[
            _kv("gen_ai.operation.name", "invoke_agent"),
            _kv("gen_ai.conversation.id", conversation),
            _kv("gen_ai.agent.name", "support-bot"),
        ],
    )
    top.status.code = Status.STATUS_CODE_ERROR
    request = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[chat, top])])]
    )
    return bytes(request.SerializeToString())


async def prepare(settings: Settings, url: str, receiver_port: int) -> None:
    """The database: the account and its history, indexed (its fit made), and the rule."""
    engine = make_engine(url, statement_timeout_ms=0)
    try:
        await migrate(engine)
        async with engine.begin() as conn:
            await import_lines(conn, "bench-alerts", background(random.Random(58)))
        await index_once(engine, registry_for(settings), config_from(settings, progress=False))
        hook = f"http://127.0.0.1:{receiver_port}/alerts"
        spec = RuleSpec("new", hook, SECRET)
        await manage.add_rule(engine, ACCOUNT, spec, AllowedHosts.parse("127.0.0.1"))
    finally:
        await engine.dispose()


@dataclass(frozen=True, slots=True)
class Trial:
    latency_s: float | None  # None: no alert within the trial's bound
    alerts: int  # alerts of this trial's kind received (1 expected)
    kind: str = ""
    why_not: str = ""  # for one not alerted: what failureModes says of its group


def why_not(base: str, trial: Trial) -> Trial:
    """A trial not alerted, with what failureModes (a day's window) says of its group."""
    answer = httpx.post(
        f"{base}/graphql",
        json={"query": GROUPS},
        headers={"authorization": f"Bearer {VIEW_KEY}"},
        timeout=60,
    ).json()
    for group in answer["data"]["failureModes"]["groups"]:
        if group["representative"]["title"].startswith(trial.kind):
            before = (group["seenBefore"] or {}).get("title")
            said = "new" if group["isNew"] else f"recurring (seen before: {before!r})"
            return Trial(None, 0, trial.kind, f"failureModes calls its group {said}")
    return Trial(None, 0, trial.kind, "failureModes shows no group of it")


def trial(base: str, receiver: Receiver, k: int, args: argparse.Namespace) -> Trial:
    """Three failed sessions of kind k, then the wait for its alert."""
    words = WORDS[6 * k : 6 * k + 6]
    headers = {"authorization": f"Bearer {INGEST_KEY}", "content-type": "application/x-protobuf"}
    acked = 0.0
    for n in range(3):
        title = f"{' '.join(words[:3])} {n + 1}"
        answer = httpx.post(
            f"{base}/v1/traces",
            content=failed_session(title, words, n),
            headers=headers,
            timeout=30,
        )
        answer.raise_for_status()
        acked = time.time()
        if n < 2:
            time.sleep(args.gap)
    bound = acked + 2 * args.interval + 60
    prefix = " ".join(words[:3])
    while time.time() < bound:
        mine = [a for a in receiver.got if _title(a[2]).startswith(prefix)]
        if mine:
            time.sleep(min(args.interval, 5))  # a second alert of it would be a fault
            mine = [a for a in receiver.got if _title(a[2]).startswith(prefix)]
            return Trial(mine[0][0] - acked, len(mine), prefix)
        time.sleep(0.05)
    return why_not(base, Trial(None, 0, prefix))


def _title(body: dict[str, Any]) -> str:
    return str(body["data"]["representative"]["title"])


def rank(values: list[float], q: float) -> float:
    ranked = sorted(values)
    return ranked[max(0, math.ceil(q / 100 * len(ranked)) - 1)] if ranked else math.nan


def evaluations(log: Path) -> list[tuple[float, float, int]]:
    """(wall ms, CPU ms, alerts) of each `alert_evaluated` line the worker wrote."""
    found = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"alert_evaluated"' in line:
            event = json.loads(line)
            found.append((float(event["wall_ms"]), float(event["cpu_ms"]), int(event["alerts"])))
    return found


def report(
    trials: list[Trial], costs: list[tuple[float, float, int]], args: argparse.Namespace
) -> str:
    found = [t.latency_s for t in trials if t.latency_s is not None]
    p50, p95 = rank(found, 50), rank(found, 95)
    target = 2 * args.interval + 5
    ok = p95 <= target
    missing = [f"{t.kind!r}: {t.why_not}" for t in trials if t.latency_s is None]
    walls, cpus = [c[0] for c in costs], [c[1] for c in costs]
    command = "python -m bench.alerts " + shlex.join(sys.argv[1:])
    return "\n".join(
        [
            "# Alerts on live ingest",
            "",
            f"`{command}` ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC; 2 shared cores).",
            "",
            f"- trials: {len(trials)}; alerted: {len(found)}; alerts per trial: "
            f"{[t.alerts for t in trials]} (1 each expected)",
            f"- SIMILAR_SESSIONS_ALERT_INTERVAL_S = {args.interval:g}; "
            f"the sessions {args.gap:g} s apart",
            f"- acknowledgement of the third failed session to delivery (the alerted): p50 "
            f"{p50:.2f} s, p95 {p95:.2f} s (target p95 <= 2 x interval + 5 s = {target:g} s: "
            f"{'met' if ok else 'missed'})",
            f"- each: {', '.join(f'{v:.2f}' for v in found)} s",
            f"- not alerted: {'; '.join(missing) or 'none'}",
            f"- worker cost per evaluated account ({len(costs)} evaluations): wall mean "
            f"{_mean(walls):.1f} ms, p95 {rank(walls, 95):.1f} ms; CPU mean {_mean(cpus):.1f} ms, "
            f"p95 {rank(cpus, 95):.1f} ms",
            "",
        ]
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.alerts")
    parser.add_argument("--trials", type=int, default=8, help="at most 8 (the words' kinds)")
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--gap", type=float, default=1.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not 1 <= args.trials <= len(WORDS) // 6:
        parser.error(f"--trials: 1 to {len(WORDS) // 6}")
    configure_logging("WARNING")
    settings = Settings.from_env()
    server = resolve_url(settings.database_url, settings.data_dir)
    url = asyncio.run(recreate(server, DATABASE))
    env = {
        "SIMILAR_SESSIONS_ALERT_INTERVAL_S": str(args.interval),
        "SIMILAR_SESSIONS_ALERT_ALLOW_HOSTS": "127.0.0.1",
        "SIMILAR_SESSIONS_LEXICAL_REFIT_GROWTH_PERCENT": "1",
        "SIMILAR_SESSIONS_LEXICAL_REFIT_MIN_INTERVAL_S": "0",
        "SIMILAR_SESSIONS_LOG_LEVEL": "INFO",
    }
    with receiving() as receiver:
        asyncio.run(prepare(settings, url, receiver.port))
        proc, base = serve(url, env, SERVER_LOG)
        try:
            time.sleep(2 * args.interval)  # the worker's first evaluation (at start) is past
            trials = [trial(base, receiver, k, args) for k in range(args.trials)]
        finally:
            proc.terminate()
            proc.wait(30)
    text = report(trials, evaluations(SERVER_LOG), args)
    out = args.out or result("alerts", "live")
    out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
