"""The acknowledgement's floor (issue 55): what one `export()` of the simulated agents costs
against a receiver that answers at once, beside the same stream to `serve`.

    python -m bench.ingest.floor [--rate 200] [--seconds 40] [--rounds 3] [--agents 8]
                                 [--kinds stream,sized] [--out FILE]

On a fresh bench.ingest database (bench/ingest/world.py prepares it), one process of
`--agents` simulated agents (bench/ingest/agents.py: the SDK's batch processor and the OTLP/HTTP
exporter, gzip) offers `--rate` spans a second for `--seconds` to each receiver in turn, for
`--rounds` rounds (the order turned each round), its agents started at once (aligned: their
batch processors export together every 5 s) and spread over the 5 s (bench.ingest's default,
as independent agents export):

- answered at once: a Starlette app under uvicorn (`answering_app` here) that reads the body and
  answers an empty ExportTraceServiceResponse, storing nothing;
- serve alone: `similar-sessions serve` without its indexer, its ingest rates lifted;
- serve and its indexer: `similar-sessions serve` as the stream phase runs it, no reader beside.

Each kind of span: `stream`, a chat span carries the conversation so far (the stream phase's);
`sized`, spans of 1-8 KB (the steps'). Prints, for each receiver and kind, the medians over the
rounds of export()'s p50 / p95 (ms), the HTTP exchange's (requests' `elapsed`: the body sent to the
answer's headers), the exporter's own work (export() less its exchange: encoding and gzip), the
body's size and, for serve, its handling (its histogram, to the bucket)."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.common.databases import libpq
from bench.common.paths import ROOT, result
from bench.common.serving import answering, free_port, serve
from bench.common.timing import p50, pct
from bench.ingest.__main__ import ALONE, stopped
from bench.ingest.agents import VARIED_SHARE, Offer, Replay
from bench.ingest.offering import Offered, offer_in_process
from bench.ingest.probes import handled_in, handled_within
from bench.ingest.world import INGEST_KEY, STREAM_ACCOUNT, prepare
from config.logs import configure_logging
from config.settings import Settings
from transfer.formats.otlp_wire import PROTOBUF

EMPTY = ExportTraceServiceResponse().SerializeToString()
RECEIVERS = ("answered at once", "serve alone", "serve and its indexer")
ALIGNED = (True, False)


def agents(aligned: bool) -> str:
    return "aligned" if aligned else "spread"


async def _answer(request: Request) -> Response:
    await request.body()
    return Response(EMPTY, media_type=PROTOBUF)


async def _healthz(request: Request) -> Response:
    return Response(b"ok")


answering_app = Starlette(
    routes=[Route("/v1/traces", _answer, methods=["POST"]), Route("/healthz", _healthz)]
)


def answering_at_once(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`answering_app` under uvicorn (uvloop and httptools, as serve's), once it answers."""
    port = free_port()
    options = ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "bench.ingest.floor:answering_app", *options],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    return proc, answering(proc, f"http://127.0.0.1:{port}", log)


@dataclass(frozen=True, slots=True)
class Arm:
    """One receiver's stream of one kind, in one round: its figures (ms, KB)."""

    receiver: str
    kind: str
    aligned: bool
    acked_per_s: float
    export: tuple[float, float]
    exchange: tuple[float, float]
    own: tuple[float, float]
    body_kb: tuple[float, float]
    handled: tuple[float, float]  # serve's histogram, to the bucket (ms); nan: not serve


def arm_of(
    receiver: str,
    kind: str,
    aligned: bool,
    offered: Offered,
    seconds: float,
    handled: tuple[float, float],
) -> Arm:
    ok = [e for e in offered.exports if e.ok]

    def two(values: list[float]) -> tuple[float, float]:
        return pct(values, 50), pct(values, 95)

    return Arm(
        receiver,
        kind,
        aligned,
        sum(e.spans for e in ok) / seconds,
        two([e.seconds * 1000 for e in ok]),
        two([e.posted * 1000 for e in ok]),
        two([(e.seconds - e.posted) * 1000 for e in ok]),
        two([e.body_bytes / 1024 for e in ok]),
        handled,
    )


def run_arm(
    receiver: str,
    kind: str,
    aligned: bool,
    url: str,
    replays: tuple[Replay, ...],
    args: argparse.Namespace,
) -> Arm:
    log = Path(f"/tmp/bench-ingest-floor-{RECEIVERS.index(receiver)}.log")
    ours = receiver != RECEIVERS[0]
    if ours:
        proc, base = serve(url, ALONE if receiver == RECEIVERS[1] else {}, log)
    else:
        proc, base = answering_at_once(log)
    try:
        time.sleep(3)  # the indexer beside it starts
        before = handled_in(httpx.get(base + "/metrics").text) if ours else {}
        offer = Offer(
            base + "/v1/traces",
            INGEST_KEY,
            args.rate,
            args.seconds,
            args.agents,
            replays,
            f"floor{kind}{int(time.time())}",
            sized=kind == "sized",
            varied=VARIED_SHARE,
            aligned=aligned,
        )
        offered = offer_in_process(offer).result(args.seconds + 600)
        handled = (float("nan"), float("nan"))
        if ours:  # before: no series until serve's first answer
            after = handled_in(httpx.get(base + "/metrics").text)
            handled = (
                handled_within(before, after, 50) * 1000,
                handled_within(before, after, 95) * 1000,
            )
    finally:
        stopped(proc)
    if receiver == RECEIVERS[1]:  # what serve alone stored is never made into sessions
        asyncio.run(dropped(url))
    arm = arm_of(receiver, kind, aligned, offered, args.seconds, handled)
    print(f"  {receiver}, {kind}, {agents(aligned)}: {row(arm)}", file=sys.stderr, flush=True)
    return arm


async def dropped(url: str) -> None:
    conn = await asyncpg.connect(libpq(url))
    try:
        await conn.execute("DELETE FROM otlp_batches WHERE account_id = $1", STREAM_ACCOUNT)
    finally:
        await conn.close()


def row(arm: Arm) -> str:
    def ms(pair: tuple[float, float]) -> str:
        return f"{pair[0]:.0f} / {pair[1]:.0f}"

    handled = "-" if math.isnan(arm.handled[0]) else f"<= {ms(arm.handled)}"
    return (
        f"{arm.acked_per_s:.0f} spans/s | {ms(arm.export)} | {ms(arm.exchange)} | {ms(arm.own)} | "
        f"{arm.body_kb[0]:.0f} / {arm.body_kb[1]:.0f} | {handled}"
    )


def medians(arms: list[Arm]) -> Arm:
    """The rounds' arms of one receiver and kind, each figure their median."""

    def med(pairs: list[tuple[float, float]]) -> tuple[float, float]:
        return p50([p[0] for p in pairs]), p50([p[1] for p in pairs])

    return Arm(
        arms[0].receiver,
        arms[0].kind,
        arms[0].aligned,
        p50([a.acked_per_s for a in arms]),
        med([a.export for a in arms]),
        med([a.exchange for a in arms]),
        med([a.own for a in arms]),
        med([a.body_kb for a in arms]),
        med([a.handled for a in arms]),
    )


def report(arms: list[Arm], command: str, args: argparse.Namespace) -> str:
    lines = [
        "# The acknowledgement's floor",
        "",
        f"`{command}` (load average at the end {os.getloadavg()[0]:.2f}). One process of "
        f"{args.agents} agents at {args.rate:g} spans/s for {args.seconds:g} s to each receiver, "
        f"{args.rounds} rounds, the order turned each round; each figure the median over the "
        "rounds of its p50 / p95 (ms; the body's KB gzipped).",
        "",
        "| receiver | spans | agents | acknowledged | export() | its HTTP exchange | the "
        "exporter's own work | body KB | serve's handling (bucket) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for kind in args.kinds:
        for aligned in ALIGNED:
            for receiver in RECEIVERS:
                mine = [
                    a
                    for a in arms
                    if a.receiver == receiver and a.kind == kind and a.aligned == aligned
                ]
                lines.append(f"| {receiver} | {kind} | {agents(aligned)} | {row(medians(mine))} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ingest.floor", description=__doc__)
    parser.add_argument("--rate", type=float, default=200)
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument(
        "--kinds", type=lambda s: [k for k in s.split(",") if k], default=["stream", "sized"]
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    configure_logging("WARNING")
    settings = Settings.from_env()
    print("preparing the database", file=sys.stderr, flush=True)
    world = asyncio.run(prepare(settings, dense=False))
    arms: list[Arm] = []
    for n in range(args.rounds):
        print(f"round {n + 1} of {args.rounds}", file=sys.stderr, flush=True)
        order = RECEIVERS[n % 3 :] + RECEIVERS[: n % 3]
        for kind in args.kinds:
            for aligned in ALIGNED:
                for receiver in order:
                    arms.append(run_arm(receiver, kind, aligned, world.url, world.replays, args))
    command = "python -m bench.ingest.floor " + " ".join(argv if argv is not None else sys.argv[1:])
    text = report(arms, command.strip(), args)
    print(text)
    (args.out or result("ingest-floor", "both")).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
